//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveAdmit admits a Guaranteed pod through the real apiserver on two kwok nodes whose
// machine is this host's sysfs (read in the same exec as the files): one with its CPUs free,
// one whose every CPU but the reserved one is held by a live pod. --all-nodes says which node
// admits it and on which CPUs; pod/NAME replays a pod bound to the full node there.
func TestLiveAdmit(t *testing.T) {
	raw, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	host, err := cpuset.Parse(strings.TrimSpace(string(raw)))
	if err != nil || host.Size() < 2 || !host.Contains(0) {
		t.Skipf("host CPUs %q: need 2 or more, with CPU 0", raw)
	}
	const config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"
	ns := NewNamespace(t, nil)
	sel := TestSelector(t)
	dirs := map[string]string{}
	for _, n := range []string{"adm-free", "adm-full"} {
		dirs[n] = KubeletDir(t, map[string]string{"config.yaml": config})
		CreateNode(t, n, decode.HomeKubelet, nil, dirs[n])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := func(name, node string) *corev1.Pod {
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
	}
	holder, err := Client().CoreV1().Pods(ns).Create(ctx, pod("holder", "adm-full"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	WaitPodRunning(t, ns, "holder", 30*time.Second)
	rest := host.Difference(cpuset.New(0)).String()
	if err := os.WriteFile(filepath.Join(dirs["adm-free"], "cpu_manager_state"), []byte(cpuStateV4(t, host.String(), nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	full := cpuStateV4(t, "0", map[string]map[string]string{string(holder.UID): {"app": rest}})
	if err := os.WriteFile(filepath.Join(dirs["adm-full"], "cpu_manager_state"), []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: one-cpu}\nspec:\n  containers:\n  - name: app\n    resources:\n      requests: {cpu: \"1\", memory: 64Mi}\n      limits: {cpu: \"1\", memory: 64Mi}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type admission struct {
		Pod        string `json:"pod"`
		Admitted   bool   `json:"admitted"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		Containers []struct {
			Name      string `json:"name"`
			CPUs      string `json:"cpus"`
			Exclusive bool   `json:"exclusive"`
		} `json:"containers"`
	}
	type nodeResult struct {
		Node         string `json:"node"`
		Error        string `json:"error"`
		KubeletStart struct {
			Starts bool `json:"starts"`
		} `json:"kubeletStart"`
		Admissions []admission `json:"admissions"`
	}
	const refused = "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, which is unexpected"

	r := nodestate(t, nil, "admit", "--all-nodes", "-l", sel, "-n", ns, "-f", manifest, "-o", "json")
	var list struct {
		Items []nodeResult `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Items) != 2 || r.ExitCode != 1 {
		t.Fatalf("admit --all-nodes: %v\n%s", err, r)
	}
	for _, n := range list.Items {
		if n.Error != "" || !n.KubeletStart.Starts || len(n.Admissions) != 1 {
			t.Fatalf("%s: %+v\n%s", n.Node, n, r)
		}
		a := n.Admissions[0]
		switch n.Node {
		case "adm-free":
			// The static policy's first free core after the reserved CPU 0, exclusive.
			if got, err := cpuset.Parse(a.Containers[0].CPUs); !a.Admitted || err != nil || got.Size() != 1 || got.Contains(0) || !a.Containers[0].Exclusive {
				t.Errorf("adm-free: %+v", a)
			}
		case "adm-full":
			if a.Admitted || a.Reason != "UnexpectedAdmissionError" || a.Message != refused {
				t.Errorf("adm-full: %+v", a)
			}
		}
	}

	// pod/NAME: a pod bound to the full node, replayed there.
	if _, err := Client().CoreV1().Pods(ns).Create(ctx, pod("late", "adm-full"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = nodestate(t, nil, "admit", "pod/late", "-n", ns, "-o", "json")
	// One node: its object, "admissions" at the top (the JSON contract).
	var one nodeResult
	if err := json.Unmarshal([]byte(r.Stdout), &one); err != nil || r.ExitCode != 1 || one.Node != "adm-full" || len(one.Admissions) != 1 {
		t.Fatalf("admit pod/late: %v\n%s", err, r)
	}
	if a := one.Admissions[0]; a.Pod != "late" || a.Admitted || a.Message != refused || !strings.Contains(r.Stderr, "pod "+ns+"/late on node adm-full") {
		t.Errorf("pod/late: %+v\n%s", a, r)
	}
	// pod/NAME --all-nodes: where else the kubelet admits it. Its nodeName is its own node's,
	// which the kubelet's predicate holds against any other (NodeName): replayed as if placed
	// on each node, it is admitted on the free one.
	r = nodestate(t, nil, "admit", "pod/late", "--all-nodes", "-l", sel, "-n", ns, "-o", "json")
	list.Items = nil
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("admit pod/late --all-nodes: %v\n%s", err, r)
	}
	for _, n := range list.Items {
		if len(n.Admissions) != 1 || n.Admissions[0].Admitted != (n.Node == "adm-free") {
			t.Errorf("pod/late --all-nodes on %s: %+v\n%s", n.Node, n.Admissions, r)
		}
	}

	// Nodes without a kubelet config (no configz on kwok, no config.yaml): the error they share
	// is said once, with their count and first names; -v=1 says it of each.
	noconf := map[string]string{"nodestate-e2e/noconf": "true"}
	for _, n := range []string{"adm-noconf-a", "adm-noconf-b", "adm-noconf-c", "adm-noconf-d"} {
		CreateNode(t, n, decode.HomeKubelet, noconf, KubeletDir(t, nil))
	}
	args := []string{"admit", "--all-nodes", "-l", sel + ",nodestate-e2e/noconf=true", "-n", ns, "-f", manifest}
	const shared = "no kubelet config: give --kubelet-config"
	r = nodestate(t, nil, args...)
	once := "error: 4 nodes (adm-noconf-a, adm-noconf-b, adm-noconf-c, ...): " + shared
	if r.ExitCode != 2 || strings.Count(r.Stderr, shared) != 1 || !strings.Contains(r.Stderr, once) || strings.Count(r.Stdout, shared) != 4 {
		t.Errorf("admit without kubelet config: want stderr to say once %q\n%s", once, r)
	}
	r = nodestate(t, nil, append(args, "-v=1")...)
	if r.ExitCode != 2 || strings.Count(r.Stderr, shared) != 4 {
		t.Errorf("admit without kubelet config, -v=1: want the error once per node\n%s", r)
	}
}
