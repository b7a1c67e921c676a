//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveDoctor plants, on nodes of one test, the ways a kubelet refuses to start or holds
// stale state, and reads them all through the real apiserver: the debug pod's exec runs on
// this host (kwok), so the machine doctor sees is this host's sysfs, and the healthy nodes'
// states are built from this host's real online CPUs. kwok v0.8.0 serves no /configz (its
// server has healthz, metrics, exec, attach, logs and port-forward only): the admin's GET
// through the node proxy gets an HTTP error (400 here) and doctor falls back to config.yaml, saying why; a user
// bound to deploy/rbac.yaml (no nodes/proxy) takes the fallback without even asking.
func TestLiveDoctor(t *testing.T) {
	raw, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	host, err := cpuset.Parse(strings.TrimSpace(string(raw)))
	if err != nil || host.Size() < 2 {
		t.Skipf("host CPUs %q: need 2 or more", raw)
	}
	hostCPUs := host.List()
	last := hostCPUs[len(hostCPUs)-1]
	// More CPUs than the host has online: what a state written before CPUs were offlined holds.
	bigger := host.Union(cpuset.New(last+1, last+2, last+3, last+4, last+5, last+6))
	shared := host.Difference(cpuset.New(last)).String() // the pool when one pod holds the last CPU
	const (
		staticConfig = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"
		noneConfig   = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n"
		gone         = "00000000-dead-4bee-8f00-00000000d0c7"
	)
	ns := NewNamespace(t, nil)
	sel := TestSelector(t)       // of the test, not of a subtest
	nodes := map[string]string{} // node -> kubelet dir
	for _, n := range []string{"doc-healthy-a", "doc-healthy-b", "doc-drift", "doc-offlined", "doc-stale", "doc-dra"} {
		nodes[n] = KubeletDir(t, map[string]string{"config.yaml": staticConfig})
		CreateNode(t, n, decode.HomeKubelet, nil, nodes[n])
	}
	expectNoLeftovers(t)

	// A live pod on healthy-b, holding the host's last CPU: no stale finding for it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = Client().CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: "doc-healthy-b",
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	WaitPodRunning(t, ns, "pinned", 30*time.Second)
	pod, err := Client().CoreV1().Pods(ns).Get(ctx, "pinned", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastCPU := cpuset.New(last).String()
	write := func(node, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(nodes[node], name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("doc-healthy-a", "cpu_manager_state", cpuStateV4(t, host.String(), nil))
	write("doc-healthy-b", "cpu_manager_state", cpuStateV4(t, shared, map[string]map[string]string{string(pod.UID): {"app": lastCPU}}))
	write("doc-drift", "cpu_manager_state", cpuStateV4(t, host.String(), nil))
	write("doc-drift", "config.yaml", noneConfig)
	write("doc-offlined", "cpu_manager_state", cpuStateV4(t, bigger.String(), nil))
	write("doc-stale", "cpu_manager_state", cpuStateV4(t, shared, map[string]map[string]string{gone: {"app": lastCPU}}))
	write("doc-dra", "dra_manager_state", repoFile(t, "testdata/kubelet/dra_manager_state/v1.34.10/corrupt-content-changed.json"))

	type finding struct {
		Severity, Check, File, Entry, Message string
	}
	type nodeResult struct {
		Node         string `json:"node"`
		Error        string `json:"error"`
		KubeletStart struct {
			Starts  bool   `json:"starts"`
			Error   string `json:"error"`
			Phase   string `json:"phase"`
			Kubelet string `json:"kubelet"`
		} `json:"kubeletStart"`
		Findings []finding `json:"findings"`
		Skipped  []string  `json:"skipped"`
	}
	parse := func(t *testing.T, r Result) map[string]nodeResult {
		t.Helper()
		var doc struct {
			Items []nodeResult `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Items) == 0 {
			// One node: the object itself.
			var one nodeResult
			if err2 := json.Unmarshal([]byte(r.Stdout), &one); err2 != nil {
				t.Fatalf("doctor -o json: %v / %v\n%s", err, err2, r)
			}
			doc.Items = []nodeResult{one}
		}
		out := map[string]nodeResult{}
		for _, it := range doc.Items {
			out[it.Node] = it
		}
		return out
	}
	// rbacUser: reading ResourceClaims is optional and not in deploy/rbac.yaml, so doc-dra's
	// claims are not checked against the API, and doctor says so.
	const claimsSkipped = "prepared claims against their ResourceClaims: no get on resourceclaims in namespace prod"
	// kwok nodes run no container, so the exec shows no cpuset cgroup tree: doctor names the
	// cgroup check as skipped (make e2e-node checks the cgroups on a real kubelet).
	const cgroupsSkipped = "the checkpoints against the cgroups: the node showed no cpuset cgroup tree"
	check := func(t *testing.T, got map[string]nodeResult, rbacUser bool) {
		t.Helper()
		if len(got) != len(nodes) {
			t.Fatalf("%d nodes in the output, want %d: %v", len(got), len(nodes), got)
		}
		for node, res := range got {
			if i := slices.Index(res.Skipped, cgroupsSkipped); i >= 0 {
				res.Skipped = slices.Delete(res.Skipped, i, i+1)
			} else {
				t.Errorf("%s: skipped %q, want the cgroup check named", node, res.Skipped)
			}
			if rbacUser && node == "doc-dra" {
				if len(res.Skipped) != 1 || !strings.HasPrefix(res.Skipped[0], claimsSkipped) {
					t.Errorf("%s: skipped %q, want the claims named", node, res.Skipped)
				}
				res.Skipped = nil
			}
			if res.Error != "" || len(res.Skipped) > 0 || res.KubeletStart.Kubelet != decode.HomeKubelet {
				t.Errorf("%s: error %q, skipped %q, kubelet %q", node, res.Error, res.Skipped, res.KubeletStart.Kubelet)
			}
			var errs []finding
			for _, f := range res.Findings {
				if f.Severity != "info" {
					errs = append(errs, f)
				}
			}
			has := func(check, file, text string) {
				t.Helper()
				for _, f := range errs {
					if f.Check == check && f.File == file && strings.Contains(f.Message+" "+f.Entry, text) {
						return
					}
				}
				t.Errorf("%s: no %s finding on %s with %q: %+v", node, check, file, text, res.Findings)
			}
			switch node {
			case "doc-healthy-a", "doc-healthy-b":
				if !res.KubeletStart.Starts || len(errs) > 0 {
					t.Errorf("%s: a false finding: starts=%v %q %+v", node, res.KubeletStart.Starts, res.KubeletStart.Error, errs)
				}
			case "doc-drift":
				if res.KubeletStart.Starts || !strings.Contains(res.KubeletStart.Error, `configured policy "none" differs from state checkpoint policy "static"`) {
					t.Errorf("%s: %+v", node, res.KubeletStart)
				}
			case "doc-offlined":
				want := `current set of available CPUs "` + host.String() + `" doesn't match with CPUs in state "` + bigger.String() + `"`
				if res.KubeletStart.Starts || !strings.Contains(res.KubeletStart.Error, want) {
					t.Errorf("%s: %+v, want %q", node, res.KubeletStart, want)
				}
			case "doc-stale":
				if !res.KubeletStart.Starts {
					t.Errorf("%s: %+v", node, res.KubeletStart)
				}
				has("stale-pod", "cpu_manager_state", gone)
			case "doc-dra":
				if !res.KubeletStart.Starts {
					t.Errorf("%s: %+v", node, res.KubeletStart)
				}
				found := false
				for _, f := range errs {
					found = found || (f.File == "dra_manager_state" && f.Severity == "error")
				}
				if !found {
					t.Errorf("%s: the refused DRA file is not an error finding: %+v", node, res.Findings)
				}
			}
		}
	}

	t.Run("admin: configz tried, config.yaml used", func(t *testing.T) {
		r := nodestate(t, nil, "doctor", "--all-nodes", "-l", sel, "-n", ns, "-o", "json")
		if r.ExitCode != 1 {
			t.Errorf("exit %d, want 1 (errors found): %s", r.ExitCode, r)
		}
		check(t, parse(t, r), false)
		// Said once for the six nodes (the node's name in it as NODE), not once per node.
		if !strings.Contains(r.Stderr, "6 nodes (doc-dra, doc-drift, doc-healthy-a, ...): using kubelet config from /var/lib/kubelet/config.yaml (configz: GET /api/v1/nodes/NODE/proxy/configz answered HTTP ") {
			t.Errorf("stderr does not say once that configz failed and config.yaml was used:\n%s", r.Stderr)
		}
		t.Logf("stderr:\n%s", r.Stderr)
		// -v=1: each node's line.
		r = nodestate(t, nil, "doctor", "--all-nodes", "-l", sel, "-n", ns, "-o", "json", "-v=1")
		if !strings.Contains(r.Stderr, "node doc-drift: using kubelet config from /var/lib/kubelet/config.yaml (configz: GET /api/v1/nodes/doc-drift/proxy/configz answered HTTP ") {
			t.Errorf("-v=1: stderr does not say for doc-drift that configz failed and config.yaml was used:\n%s", r.Stderr)
		}
	})

	t.Run("blocks", func(t *testing.T) {
		r := nodestate(t, nil, "doctor", "--all-nodes", "-l", sel, "-n", ns)
		if r.ExitCode != 1 {
			t.Errorf("exit %d, want 1: %s", r.ExitCode, r)
		}
		for _, want := range []string{"doc-drift", "doc-offlined", "doc-stale", "doc-dra", "doc-healthy-a"} {
			if !strings.Contains(r.Stdout, "Node: "+want+"\n") {
				t.Errorf("no section for %s:\n%s", want, r.Stdout)
			}
		}
		t.Logf("stdout:\n%s", r.Stdout)
	})

	t.Run("deploy/rbac.yaml user: no nodes/proxy, config.yaml without error", func(t *testing.T) {
		bindPluginRoles(t, "e2e-doctor")
		env := Env(t, "KUBECONFIG="+UserKubeconfig(t, "e2e-doctor"))
		r := nodestate(t, env, "doctor", "--all-nodes", "-l", sel, "-o", "json")
		if r.ExitCode != 1 {
			t.Errorf("exit %d, want 1: %s", r.ExitCode, r)
		}
		check(t, parse(t, r), true)
		if !strings.Contains(r.Stderr, "(configz: no get on nodes/proxy") || strings.Contains(r.Stderr, "error:") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
	})

	t.Run("collect bundle is a complete offline input", func(t *testing.T) {
		dir := t.TempDir()
		r := nodestate(t, nil, "collect", "doc-offlined", "doc-healthy-a", "doc-healthy-b", "-n", ns, "-d", dir)
		if r.ExitCode != 0 {
			t.Fatalf("collect: %s", r)
		}
		// healthy-b's node.json records its pods from the API server (kwok's statuses carry no
		// container ID, so no container is recorded running, as the live outlook reads them):
		// doctor --from-dir then answers "if the kubelet restarts" too.
		raw, err := os.ReadFile(filepath.Join(dir, "doc-healthy-b", "node.json"))
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Pods struct {
				ByUID map[string]struct {
					Namespace, Name string
					Terminal        bool
				}
			}
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if p := info.Pods.ByUID[string(pod.UID)]; p.Name != "pinned" || p.Namespace != ns || p.Terminal {
			t.Errorf("node.json records the pinned pod as %+v\n%s", p, raw)
		}
		for uid, p := range info.Pods.ByUID {
			if strings.HasPrefix(p.Name, "nodestate-") {
				t.Errorf("node.json records the debug pod %s (%s)", p.Name, uid)
			}
		}
		off := Run(t, 0, Env(t), PluginBin(t), "doctor", "--from-dir", filepath.Join(dir, "doc-healthy-b"), "-o", "json")
		var checks []string
		for _, f := range parse(t, off)[""].Findings {
			checks = append(checks, f.Check)
		}
		if !slices.Contains(checks, "if-reboot") || !slices.Contains(checks, "if-kubelet-restart") {
			t.Errorf("offline doctor of doc-healthy-b's bundle: findings %v, want both restart outlooks\n%s", checks, off)
		}
		for _, node := range []string{"doc-offlined", "doc-healthy-a"} {
			for _, f := range []string{"machine.json", "kubelet-config.yaml", "node.json", "cpu_manager_state"} {
				if _, err := os.Stat(filepath.Join(dir, node, f)); err != nil {
					t.Errorf("%s: %v", node, err)
				}
			}
			off := Run(t, 0, Env(t), PluginBin(t), "doctor", "--from-dir", filepath.Join(dir, node), "-o", "json")
			got := parse(t, off)[""]
			if got.KubeletStart.Kubelet != decode.HomeKubelet || got.KubeletStart.Starts != (node == "doc-healthy-a") {
				t.Errorf("offline doctor of %s's bundle: %+v\n%s", node, got.KubeletStart, off)
			}
		}
	})
}
