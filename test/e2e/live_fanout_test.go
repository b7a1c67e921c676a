//go:build e2e

package e2e

// --all-nodes fan-out over 100 nodes, some of which cannot be read, and Ctrl-C in the middle
// of one.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// healthLabel sorts the fan-out test's nodes, so -l can pick subsets.
const healthLabel = "nodestate-e2e/health"

func TestLiveAllNodes100(t *testing.T) {
	ns := NewNamespace(t, nil)
	const total = 100
	healthy := KubeletDir(t, repoDirFiles(t, "examples/kubelet-root"))
	corruptVector := "cpu_manager_state/v1.37.1/static-numa.corrupt-digit-data.json"
	corrupt := KubeletDir(t, merge(repoDirFiles(t, "examples/kubelet-root"), vectorFiles(t, corruptVector)))

	// node -> what its row must say
	type expect struct {
		health   string // the healthLabel value
		verdict  string // of every row of the node
		cause    string // of the node's single failure row ("" = the node is read)
		errorHas string
	}
	broken := map[string]expect{
		"all-corrupt":               {health: "corrupt"},
		PrefixPodsPending + "all":   {health: "broken", verdict: "unreadable", cause: "timeout", errorHas: "not Running after 5s"},
		"all-notready":              {health: "broken", verdict: "unreadable", cause: "NotReady", errorHas: "node is not Ready"},
		"all-windows":               {health: "windows", verdict: "not-read", cause: "not supported yet, skipped", errorHas: "windows nodes are not supported yet"},
		PrefixPodsImagePull + "all": {health: "broken", verdict: "unreadable", cause: "ImagePullBackOff", errorHas: "cannot pull image"},
		// Its pod stays Pending while a "kubelet" (recordFailedMount) records a FailedMount event
		// about it: the fan-out's one events watch must end its wait before the timeout does.
		PrefixPodsPending + "mount": {health: "broken", verdict: "unreadable", cause: "FailedMount", errorHas: "--kubelet-root-dir"},
	}
	var names []string
	for name := range broken {
		names = append(names, name)
	}
	for i := len(names); i < total; i++ {
		names = append(names, fmt.Sprintf("all-healthy-%03d", i))
	}
	// Three healthy nodes run a kubelet build no vector was made by (a release day's): judged by
	// the newest rules, said once for the three.
	upgraded := map[string]bool{}
	for _, name := range names[total-3:] {
		upgraded[name] = true
	}
	const unchecked = "kubelet v1.99.0 is newer than every build this plugin was checked against"
	start := time.Now()
	CreateNodes(t, names, func(name string) NodeOptions {
		o := NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: healthy, Labels: map[string]string{healthLabel: "healthy"}}
		if upgraded[name] {
			o.KubeletVersion = "v1.99.0"
		}
		e, ok := broken[name]
		if !ok {
			return o
		}
		o.Labels[healthLabel] = e.health
		switch name {
		case "all-corrupt":
			o.KubeletDir = corrupt
		case PrefixPodsPending + "all", PrefixPodsPending + "mount":
			o.Pods = PodsPending
		case "all-notready":
			o.NotReady = true
		case "all-windows":
			o.Labels["kubernetes.io/os"] = "windows"
		case PrefixPodsImagePull + "all":
			o.Pods = PodsImagePullBackOff
		}
		return o
	})
	t.Logf("%d nodes created in %s", total, time.Since(start).Round(time.Millisecond))
	expectNoLeftovers(t)
	recordFailedMount(t, ns, PrefixPodsPending+"mount")
	exampleFiles := len(repoDirFiles(t, "examples/kubelet-root"))

	run := func(selector string, flags ...string) (Result, map[string]map[string]verifyItem) {
		t.Helper()
		args := append([]string{"verify", "--all-nodes", "-l", selector, "--concurrency", "20", "-n", ns, "-o", "json"}, flags...)
		r := nodestate(t, nil, args...)
		if n := CountManagedPods(t, ""); n != 0 {
			t.Errorf("-l %s: %d debug pods left after the command", selector, n)
		}
		if r.ExitCode < 0 {
			t.Fatalf("-l %s: %s", selector, r)
		}
		return r, byNode(parseVerify(t, r.Stdout))
	}

	// All 100: a node that cannot be read makes it exit 2; every node has its rows. A short
	// --pod-running-timeout for the node whose pod stays Pending.
	r, got := run(TestSelector(t), "--pod-running-timeout", "5s")
	t.Logf("verify --all-nodes over %d nodes (concurrency 20): %s", total, r.Duration.Round(time.Millisecond))
	if r.ExitCode != 2 {
		t.Errorf("all nodes: exit %d, want 2", r.ExitCode)
	}
	if len(got) != total {
		t.Errorf("rows for %d nodes, want %d", len(got), total)
	}
	for _, name := range names {
		rows := got[name]
		e, isBroken := broken[name]
		switch {
		case !isBroken:
			if len(rows) != exampleFiles {
				t.Errorf("%s: %d rows, want %d", name, len(rows), exampleFiles)
			}
			for file, row := range rows {
				if row.Verdict != "valid" {
					t.Errorf("%s %s: %s (%s)", name, file, row.Verdict, row.Error)
				}
			}
		case e.cause == "": // the corrupt node
			for file, row := range rows {
				want := "valid"
				if file == "cpu_manager_state" {
					want = vectorRead(t, corruptVector, decode.HomeKubelet).Verdict
				}
				if row.Verdict != want {
					t.Errorf("%s %s: %s, want %s", name, file, row.Verdict, want)
				}
			}
			checkVectorRow(t, name, rows["cpu_manager_state"], corruptVector, decode.HomeKubelet)
		default:
			row, ok := rows["-"]
			if len(rows) != 1 || !ok || row.Verdict != e.verdict || row.Cause != e.cause || !strings.Contains(row.Error, e.errorHas) {
				t.Errorf("%s: rows %+v, want one row: verdict %s, cause %q, error with %q", name, rows, e.verdict, e.cause, e.errorHas)
			}
		}
	}
	// stderr: one line per node not read: "error: node X: ..." for a failure, "note: node X:
	// ..." for a skipped (Windows) node, which is no failure; one for the three upgraded nodes,
	// and the line saying a note of several nodes is printed once.
	stderr := nonEmptyLines(r.Stderr)
	if len(stderr) != 7 {
		t.Errorf("stderr: %d lines, want 7 (one per unread node, two for the upgraded ones):\n%s", len(stderr), r.Stderr)
	}
	if want := "warning: 3 nodes (" + strings.Join(names[total-3:], ", ") + "): " + unchecked; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
	}
	for name, e := range broken {
		prefix := "error: node "
		if e.verdict == "not-read" {
			prefix = "note: node "
		}
		if e.cause != "" && !strings.Contains(r.Stderr, prefix+name+": ") {
			t.Errorf("stderr does not name %s:\n%s", name, r.Stderr)
		}
	}

	// Without the nodes that cannot be read: only the corrupt file, exit 1. The Windows node is
	// skipped, which is not a failure.
	r, got = run(TestSelector(t) + "," + healthLabel + " in (healthy,corrupt,windows)")
	if r.ExitCode != 1 || len(got) != total-4 {
		t.Errorf("healthy+corrupt+windows: exit %d with %d nodes, want 1 with %d", r.ExitCode, len(got), total-4)
	}
	if got["all-corrupt"]["cpu_manager_state"].Verdict != "corrupt" || got["all-windows"]["-"].Verdict != "not-read" {
		t.Errorf("corrupt node %+v, windows node %+v", got["all-corrupt"], got["all-windows"])
	}

	// Healthy nodes (and the skipped Windows node): exit 0.
	r, got = run(TestSelector(t) + "," + healthLabel + " in (healthy,windows)")
	if r.ExitCode != 0 || len(got) != total-5 {
		t.Errorf("healthy+windows: exit %d with %d nodes, want 0 with %d:\n%s", r.ExitCode, len(got), total-5, r.Stderr)
	}
	t.Logf("verify --all-nodes over %d healthy nodes: %s", len(got), r.Duration.Round(time.Millisecond))
}

// recordFailedMount plays the kubelet of node for the debug pods created on it in ns: it
// records the Warning event a real kubelet (v1.37.1, see ../shared/docs/real-node.md) records
// when the --kubelet-root-dir hostPath is missing, about each such pod, until the test ends.
func recordFailedMount(t *testing.T, ns, node string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cp.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			event := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: ns},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod.Name, UID: pod.UID,
					ResourceVersion: pod.ResourceVersion},
				Type:   corev1.EventTypeWarning,
				Reason: "FailedMount",
				Message: `MountVolume.SetUp failed for volume "kubelet" : hostPath type check failed: /var/lib/kubelet ` +
					`is not a directory`,
				Source:         corev1.EventSource{Component: "kubelet", Host: node},
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
			}
			if _, err := cp.client.CoreV1().Events(ns).Create(ctx, event, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("record the FailedMount event: %v", err)
			}
		}
	}()
}

func TestLiveInterrupt(t *testing.T) {
	ns := NewNamespace(t, nil)
	const total = 100
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("%sint-%03d", PrefixPodsPending, i)
	}
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{Pods: PodsPending} })
	expectNoLeftovers(t)

	// Every debug pod stays Pending: the fan-out would wait 2 minutes per node. Through kubectl,
	// which execs the plugin in its own process: the signal reaches the plugin.
	PluginBin(t)
	cmd := exec.Command(KubectlBin(), "nodestate", "verify", "--all-nodes", "-l", TestSelector(t), "--concurrency", "20", "-n", ns)
	cmd.Env = Env(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			<-done
		}
	})

	// Wait for the fan-out to be under way.
	deadline := time.Now().Add(15 * time.Second)
	pods := 0
	for pods < 20 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		pods = CountManagedPods(t, ns)
	}
	if pods == 0 {
		t.Fatalf("no debug pod appeared in 15s; stderr:\n%s", stderr.String())
	}
	t.Logf("%d debug pods Pending; sending SIGINT", pods)

	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		var exit *exec.ExitError
		code := 0
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		t.Logf("exited %d after %s", code, time.Since(sent).Round(time.Millisecond))
		if code != 2 {
			t.Errorf("exit %d (%v), want 2", code, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10s after SIGINT; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), nodestatelib.ErrInterrupted.Error()) {
		t.Errorf("stderr does not say so:\n%s", stderr.String())
	}

	// Every pod deleted before it exited: none left, not even terminating.
	if n := CountManagedPods(t, ""); n != 0 {
		t.Errorf("%d debug pods not deleted when the plugin exited", n)
	}
	for time.Since(sent) < 10*time.Second && len(ManagedPods(t, ns)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if left := ManagedPods(t, ns); len(left) > 0 {
		t.Errorf("%d debug pods still exist 10s after SIGINT (first: %s/%s)", len(left), left[0].Namespace, left[0].Name)
	}
	t.Logf("no debug pod left %s after SIGINT", time.Since(sent).Round(time.Millisecond))

	// The table streams: every node has its row, the interrupted and the never started ones.
	rows := tableRows(stdout.String())
	if len(rows) != total+1 {
		t.Fatalf("%d rows, want a header and %d:\n%s", len(rows), total, stdout.String())
	}
	for _, row := range rows[1:] {
		if len(row) != 7 || row[1] != "-" || row[3] != "unreadable" || row[5] != "debug-pod" || row[6] != "canceled" {
			t.Errorf("row %q, want NODE - - unreadable 0s debug-pod canceled (NODE FILE FORMAT VERDICT AGE FROM MEANING)", row)
			break
		}
	}
}
