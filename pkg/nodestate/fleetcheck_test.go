package nodestate

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// CheckFleet answers from the monitor's conditions with one LIST, and reads through a debug
// pod only the nodes missing one of them (or every node, fresh).
func TestCheckFleet(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	beat := metav1.NewTime(now.Add(-90 * time.Second))
	conds := func(skip NodeCheck, problem NodeCheck) []corev1.NodeCondition {
		out := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		for _, c := range NodeChecks {
			if c == skip {
				continue
			}
			st := corev1.ConditionFalse
			if c == problem {
				st = corev1.ConditionTrue
			}
			out = append(out, corev1.NodeCondition{Type: ConditionTypes[c], Status: st, Reason: "R", Message: string(c) + " message", LastHeartbeatTime: beat})
		}
		return out
	}
	node := func(name string, c []corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.4", OperatingSystem: "linux"}, Conditions: c}}
	}
	client := runningPodsClient(node("a", conds("", CheckCgroups)), node("b", conds(CheckDevices, "")), node("c", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}))
	cpu, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	var execs atomic.Int32
	exec := func(_ context.Context, _, _, _ string, _ []string, stdout, stderr io.Writer) error {
		execs.Add(1)
		defer io.WriteString(stderr, fetch.CollectEnd)
		tw := tar.NewWriter(stdout)
		tw.WriteHeader(&tar.Header{Name: "cpu_manager_state", Mode: 0o600, Size: int64(len(cpu)), Typeflag: tar.TypeReg})
		tw.Write(cpu)
		return tw.Close()
	}
	cfg := Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Concurrency: 2, Exec: exec}
	fleet, err := CheckFleet(context.Background(), cfg, FleetOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet.Nodes) != 3 || len(fleet.Split.Read) != 2 || execs.Load() != 2 {
		t.Fatalf("%d nodes, read %v, %d execs", len(fleet.Nodes), fleet.Split.Read, execs.Load())
	}
	a := fleet.Nodes[0]
	if a.Node != "a" || !a.FromConditions || len(a.Results) != 4 {
		t.Fatalf("a: %+v", a)
	}
	for _, r := range a.Results {
		want := CheckOK
		if r.Check == CheckCgroups {
			want = CheckProblem
		}
		if r.Status != want || r.Summary != string(r.Check)+" message" || !r.At.Equal(beat.Time) {
			t.Errorf("a %s: %+v", r.Check, r)
		}
	}
	for _, n := range fleet.Nodes[1:] {
		if n.FromConditions || n.Err != nil || len(n.Results) != 4 {
			t.Fatalf("%s: %+v", n.Node, n)
		}
		// The debug pod read the CPU state only: valid for the node's kubelet; no config, so the
		// restart cannot be judged.
		if r := n.Results[0]; r.Check != CheckCheckpoints || r.Status != CheckOK || !r.At.Equal(now) {
			t.Errorf("%s checkpoints: %+v", n.Node, r)
		}
		if r := n.Results[1]; r.Check != CheckRestart || r.Status != CheckUnknown {
			t.Errorf("%s restart: %+v", n.Node, r)
		}
	}
	// One LIST; the nodes read are not got again one by one.
	lists, gets := 0, 0
	for _, act := range client.Actions() {
		if act.GetResource().Resource == "nodes" {
			switch act.GetVerb() {
			case "list":
				lists++
			case "get":
				gets++
			}
		}
	}
	if lists != 1 || gets != 0 {
		t.Errorf("%d node lists and %d gets, want 1 and 0", lists, gets)
	}
	execs.Store(0)
	fleet, err = CheckFleet(context.Background(), cfg, FleetOptions{Fresh: true, Now: now})
	if err != nil || len(fleet.Split.Read) != 3 || execs.Load() != 3 || fleet.Split.Summary() != "" {
		t.Errorf("fresh: read %v, %d execs, %v", fleet.Split.Read, execs.Load(), err)
	}
}
