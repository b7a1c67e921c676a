//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// examplePublishedState is examples/admit-node read as node-publish reads a node (its machine
// as a sysfs tree), for node.
func examplePublishedState(t *testing.T) (*nodestatelib.PublishedState, string) {
	t.Helper()
	dir, sys, proc := exampleNode(t)
	s, err := nodestatelib.ReadPublished(t.Context(), "template", nodestatelib.LocalConfig{Paths: nodelocal.Paths{RootDir: dir, SysRoot: sys, ProcRoot: proc}, KubeletVersion: "v1.37.1"})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// TestBenchPublished (NODESTATE_BENCH_PUBLISHED_NODES=N): `admit --all-nodes --from-published`
// on N kwok nodes that each published examples/admit-node's state: one LIST of nodes and one of
// the ConfigMaps, every node replayed; three runs, wall time, requests and peak RSS. Prints one
// BENCH line. NODESTATE_BENCH_PUBLISHED_DISTINCT=1: no two nodes' states read alike (a comment
// naming the node in each kubelet config), so no node shares another's kubelet start: the
// worst case, where the default is a pool's best. NODESTATE_BENCH_PUBLISHED_PODS=deciding asks
// a pod of 16 CPUs then one of 14, which fits only with the CPUs of the state's pod uid-seed-a
// (not in the API server) freed: every node's answer hangs on its pods, and each is listed.
func TestBenchPublished(t *testing.T) {
	n := envInts(t, "NODESTATE_BENCH_PUBLISHED_NODES", "0")[0]
	if n == 0 {
		t.Skip("set NODESTATE_BENCH_PUBLISHED_NODES")
	}
	distinct := os.Getenv("NODESTATE_BENCH_PUBLISHED_DISTINCT") == "1"
	applyPublishDeploy(t)
	state, dir := examplePublishedState(t)
	names := numberedNodes("pbench", n)
	start := time.Now()
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{KubeletVersion: "v1.37.1", KubeletDir: dir} })
	t.Cleanup(func() {
		_ = Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).DeleteCollection(ctxFor(t, 5*time.Minute), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: nodestatelib.PublishedLabel})
	})
	var g errgroup.Group
	g.SetLimit(20)
	var size int
	for _, name := range names {
		g.Go(func() error {
			s := *state
			s.Node, s.ReadAt = name, time.Now().UTC()
			if distinct {
				s.KubeletConfig = append(slices.Clip(state.KubeletConfig), "\n# "+name+"\n"...)
			}
			data, err := nodestatelib.EncodePublished(&s)
			if err != nil {
				return err
			}
			size = len(data)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nodestatelib.PublishedNamespace,
				Labels: map[string]string{nodestatelib.PublishedLabel: nodestatelib.PublishedLabelValue}}, BinaryData: map[string][]byte{nodestatelib.PublishedDataKey: data}}
			_, err = Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).Create(ctxFor(t, time.Minute), cm, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes created and their states (%d bytes each) published in %s", n, size, time.Since(start).Round(time.Second))
	plugin := PluginBin(t)
	ns := NewNamespace(t, nil)
	args := []string{"admit", "--all-nodes", "-l", TestSelector(t), "--from-published", "--max-age", "3h", "--no-headers"}
	deciding := os.Getenv("NODESTATE_BENCH_PUBLISHED_PODS") == "deciding"
	if deciding {
		args = append(args, guaranteedPodFiles(t, "16", "14")...)
	} else {
		args = append(args, "-f", filepath.Join(cp.repoRoot, "examples", "admit-node", "pod-db.yaml"))
	}
	// Creating thousands of nodes leaves kwok and etcd busy after the last create returns: a run
	// measured then would share the machine with them.
	waited, rate := quiet(t, 0.25, 3*time.Minute)
	t.Logf("control plane quiet after node creation in %s, at %.2f cores", waited, rate)
	var runs []benchRun
	for i := range 3 {
		runArgs := args
		// NODESTATE_BENCH_PUBLISHED_PROFILE=FILE: the second run's CPU profile (the plugin's
		// hidden --profile), to see where a fleet read's time goes.
		if out := os.Getenv("NODESTATE_BENCH_PUBLISHED_PROFILE"); out != "" && i == 1 {
			runArgs = append(slices.Clip(args), "--profile", "cpu", "--profile-output", out)
		}
		r := measure(t, ns, plugin, runArgs...)
		if c := strings.Count(r.stdout, " published "); c < n {
			t.Fatalf("%d rows from published states, want %d or more:\n%s", c, n, r.stderr)
		}
		if admitted := fmt.Sprintf("%d of %d nodes admit the pods", n, n); deciding && !strings.Contains(r.stdout, admitted) {
			t.Fatalf("want %q (every node's pods listed):\n%s", admitted, r.stdout)
		}
		runs = append(runs, r)
	}
	var walls []string
	for _, r := range runs {
		walls = append(walls, fmt.Sprintf("%.2fs", r.wall.Seconds()))
	}
	line := fmt.Sprintf("published nodes=%d distinct=%t deciding=%t wall=%s cpu=%.2fs requests=%d rss_mib=%.0f state_bytes=%d",
		n, distinct, deciding, strings.Join(walls, ","), runs[1].cpu.Seconds(), runs[1].requests, float64(runs[1].rssKiB)/1024, size)
	fmt.Fprintln(os.Stdout, "BENCH "+line)
	t.Log(line)
	t.Logf("requests by verb: %v", runs[1].byVerb)
}

// TestBenchPublishWrites (NODESTATE_BENCH_PUBLISH_WINDOW=60s): the API writes one node-publish
// makes, counted on a watch of its ConfigMap, over the window: steady (files unchanged) and on
// churn (a checkpoint rewritten with new content every 500 ms, as a node admitting and
// removing pods back to back, faster than the debounce: published every five debounces). Prints one BENCH line.
func TestBenchPublishWrites(t *testing.T) {
	window := os.Getenv("NODESTATE_BENCH_PUBLISH_WINDOW")
	if window == "" {
		t.Skip("set NODESTATE_BENCH_PUBLISH_WINDOW")
	}
	w, err := time.ParseDuration(window)
	if err != nil {
		t.Fatal(err)
	}
	applyPublishDeploy(t)
	state, dir := examplePublishedState(t)
	_ = state
	const node = "bench-publish"
	CreateNode(t, node, "v1.37.1", nil, dir)
	kubeconfig := publisherKubeconfig(t, node)
	count := func(during func()) int {
		// From the object as it is: its own ADDED is no write.
		cm := publishedConfigMap(t, node)
		watcher, err := Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + node, ResourceVersion: cm.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Stop()
		done := make(chan int)
		go func() {
			n := 0
			for ev := range watcher.ResultChan() {
				if ev.Type == watch.Modified {
					n++
				}
			}
			done <- n
		}()
		during()
		watcher.Stop()
		return <-done
	}
	cpu := filepath.Join(dir, "cpu_manager_state")
	original, err := os.ReadFile(cpu)
	if err != nil {
		t.Fatal(err)
	}
	p := StartPlugin(t, nil, "node-publish", "--kubeconfig", kubeconfig, "--node", node, "--kubelet-root-dir", dir,
		"--sys-root", t.TempDir(), "--proc-root", t.TempDir(), "--kubelet-version", "v1.37.1", "--no-topology")
	waitConfigMap(t, node, time.Minute, func(*corev1.ConfigMap) bool { return true })
	time.Sleep(3 * time.Second) // the start's write is done
	steady := count(func() { time.Sleep(w) })
	churn := count(func() {
		end := time.Now().Add(w)
		for i := 1; time.Now().Before(end); i++ {
			// New content each time, as pods come and go: never the bytes of a state before
			// (content alternating between two states would let a publish find the one it
			// already wrote, in step with the debounce).
			content := []byte(strings.Replace(string(original), `"1,17"`, `"1,17"`+strings.Repeat(" ", i), 1))
			tmp := cpu + ".tmp"
			if err := os.WriteFile(tmp, content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, cpu); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // the last debounce
	})
	p.Signal(t, os.Interrupt)
	p.Wait(t, 30*time.Second)
	perMin := func(n int) float64 { return float64(n) / w.Minutes() }
	line := fmt.Sprintf("publish-writes window=%s steady=%d (%.2f/min) churn=%d (%.2f/min, a change every 500ms, debounce %s)",
		w, steady, perMin(steady), churn, perMin(churn), nodestatelib.DefaultPublishDebounce)
	fmt.Fprintln(os.Stdout, "BENCH "+line)
	t.Log(line)
}

// exampleNode is examples/admit-node laid out as a node: its kubelet root dir (the CPU and
// memory checkpoints, config.yaml) and its machine as sysfs and procfs trees.
func exampleNode(t *testing.T) (kubeletDir, sys, proc string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(cp.repoRoot, "examples", "admit-node", "machine.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	sys, proc = sysTree(t, m)
	files := repoDirFiles(t, "examples/admit-node")
	kubeletDir = KubeletDir(t, map[string]string{"cpu_manager_state": files["cpu_manager_state"], "memory_manager_state": files["memory_manager_state"], "config.yaml": files["kubelet-config.yaml"]})
	return kubeletDir, sys, proc
}
