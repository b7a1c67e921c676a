//go:build e2e

package e2e

// Pod UIDs in checkpoints are shown as namespace/name: real pods on a node, a checkpoint written
// with their UIDs (and valid checksums), read live.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

func TestLivePodNames(t *testing.T) {
	ns := NewNamespace(t, nil)
	other := NewNamespace(t, nil)
	dir := KubeletDir(t, nil)
	node := "live-names"
	CreateNode(t, node, decode.HomeKubelet, nil, dir)
	expectNoLeftovers(t)

	// Workload pods bound to the node (no scheduler needed), in two namespaces.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type workload struct{ ns, name, uid string }
	pods := []*workload{{ns: ns, name: "web-7f9c"}, {ns: ns, name: "db-0"}, {ns: other, name: "batch-x2"}}
	for _, w := range pods {
		_, err := Client().CoreV1().Pods(w.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: w.ns},
			Spec: corev1.PodSpec{
				NodeName:   node,
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}, {Name: "sidecar", Image: "registry.example/sidecar:1"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		WaitPodRunning(t, w.ns, w.name, 30*time.Second)
		// The UID as the API server has it.
		got, err := Client().CoreV1().Pods(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.uid = string(got.UID)
	}
	const gone = "00000000-dead-4bee-8f00-000000000001" // a pod no longer in the API

	entries := map[string]map[string]string{
		pods[0].uid: {"app": "1-2", "sidecar": "3"},
		pods[1].uid: {"app": "4-7"},
		pods[2].uid: {"app": "8"},
		gone:        {"app": "9"},
	}
	files := map[string]string{
		"cpu_manager_state": cpuStateV4(t, "0,10-15", entries),
		"allocated_pods_state": allocatedPodsState(t, map[string]map[string]string{
			pods[0].uid: {"app": "2", "sidecar": "1"},
			pods[2].uid: {"app": "1"},
			gone:        {"app": "1"},
		}),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The checksums written above are the kubelet's: both files verify.
	r := nodestate(t, nil, "verify", node, "-o", "json")
	if r.ExitCode != 0 {
		t.Fatalf("verify of the written checkpoints: %s", r)
	}
	for _, it := range parseVerify(t, r.Stdout) {
		if it.Verdict != "valid" {
			t.Errorf("%s: %s (%s)", it.File, it.Verdict, it.Error)
		}
	}

	// cpus: namespace/name for live pods, the raw UID for the one that is gone.
	r = nodestate(t, nil, "cpus", node)
	if r.ExitCode != 0 || r.Stderr != "" {
		t.Fatalf("cpus: %s", r)
	}
	rows := tableRows(r.Stdout)
	want := [][]string{
		{"NODE", "POD", "CONTAINER", "CPUS"},
		{node, ns + "/db-0", "app", "4-7"},
		{node, ns + "/web-7f9c", "app", "1-2"},
		{node, ns + "/web-7f9c", "sidecar", "3"},
		{node, other + "/batch-x2", "app", "8"},
		{node, gone, "app", "9"},
		{node, "(shared pool)", "-", "0,10-15"},
	}
	if fmt.Sprint(sortedRows(rows)) != fmt.Sprint(sortedRows(want)) {
		t.Errorf("cpus rows:\n%q\nwant (any order):\n%q", rows, want)
	}
	for _, w := range pods {
		if strings.Contains(r.Stdout, w.uid) {
			t.Errorf("cpus shows the UID of %s/%s instead of its name:\n%s", w.ns, w.name, r.Stdout)
		}
	}

	// -o json: namespace, pod and podUID side by side.
	r = nodestate(t, nil, "cpus", node, "-o", "json")
	var list struct {
		Items []struct{ Namespace, Pod, PodUID, Container string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || r.ExitCode != 0 {
		t.Fatalf("cpus -o json: %v: %s", err, r)
	}
	named := 0
	for _, it := range list.Items {
		for _, w := range pods {
			if it.PodUID == w.uid {
				named++
				if it.Namespace != w.ns || it.Pod != w.name {
					t.Errorf("UID %s shown as %s/%s, want %s/%s", w.uid, it.Namespace, it.Pod, w.ns, w.name)
				}
			}
		}
		if it.PodUID == gone && (it.Namespace != "" || it.Pod != "") {
			t.Errorf("a UID without a pod got a name: %+v", it)
		}
	}
	if named != 4 {
		t.Errorf("%d named container rows, want 4:\n%s", named, r.Stdout)
	}

	// pods (allocated_pods_state): the same names.
	r = nodestate(t, nil, "pods", node)
	if r.ExitCode != 0 {
		t.Fatalf("pods: %s", r)
	}
	for _, s := range []string{ns + "/web-7f9c", other + "/batch-x2", gone} {
		if !strings.Contains(r.Stdout, s) {
			t.Errorf("pods output lacks %s:\n%s", s, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, pods[0].uid) || strings.Contains(r.Stdout, pods[2].uid) {
		t.Errorf("pods shows UIDs of live pods:\n%s", r.Stdout)
	}
	if n := CountManagedPods(t, ""); n != 0 {
		t.Errorf("%d debug pods left", n)
	}
}

// sortedRows sorts table rows (header first) so they compare in any order.
func sortedRows(rows [][]string) []string {
	var out []string
	for i, r := range rows {
		key := strings.Join(r, "|")
		if i == 0 {
			key = "\x00" + key
		}
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}
