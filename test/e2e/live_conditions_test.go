//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	lib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// TestLiveConditions reads the node checks back from the conditions the Node Problem
// Detector's monitor sets (planted here with a status patch, as NPD's exporter writes them):
// nodes with every condition answer from them, with their age and no debug pod; a node without
// them is read through a debug pod and judged by node-check's rules; --fresh reads all.
func TestLiveConditions(t *testing.T) {
	cpu, err := os.ReadFile(filepath.Join("..", "..", "examples", "kubelet-root", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	sel := TestSelector(t)
	names := []string{"cond-a", "cond-b", "cond-none"}
	for _, n := range names {
		CreateNode(t, n, decode.HomeKubelet, nil, KubeletDir(t, map[string]string{"cpu_manager_state": string(cpu)}))
	}
	expectNoLeftovers(t)
	beat := metav1.NewTime(time.Now().Add(-3 * time.Minute).Truncate(time.Second))
	for _, n := range names[:2] {
		var conds []corev1.NodeCondition
		for _, c := range lib.NodeChecks {
			cond := corev1.NodeCondition{Type: lib.ConditionTypes[c], Status: corev1.ConditionFalse, Reason: "Fine",
				Message: string(c) + " fine", LastHeartbeatTime: beat, LastTransitionTime: beat}
			if n == "cond-b" && c == lib.CheckCgroups {
				cond.Status, cond.Reason, cond.Message = corev1.ConditionTrue, "CgroupStateDrift", "cpuset-drift 5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f/app"
			}
			conds = append(conds, cond)
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
		if _, err := Client().CoreV1().Nodes().Patch(ctxFor(t, 10*time.Second), n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	// Only the nodes with the monitor: no debug pod, one answer per check with its age.
	res := nodestate(t, nil, "conditions", "cond-a", "cond-b")
	if res.ExitCode != 1 || strings.Contains(res.Stderr, "run no monitor") {
		t.Fatalf("conditions of monitored nodes: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 9 || !strings.HasPrefix(lines[0], "NODE") {
		t.Fatalf("want a header and 8 rows: %s", res)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		wantStatus := "OK"
		if f[0] == "cond-b" && f[1] == "cgroups" {
			wantStatus = "Problem"
		}
		if f[2] != wantStatus || !strings.HasPrefix(f[3], "3m") || f[4] != "conditions" {
			t.Errorf("row %q: want %s, age 3m, from conditions", l, wantStatus)
		}
	}
	// The node without the monitor is read through a debug pod.
	res = nodestate(t, nil, "conditions", "--all-nodes", "-l", sel)
	if !strings.Contains(res.Stderr, "1 of 3 nodes run no monitor") || strings.Count(res.Stdout, "debug-pod") != 4 ||
		!strings.Contains(res.Stdout, "cond-none   checkpoints   OK") {
		t.Errorf("--all-nodes: %s", res)
	}
	res = nodestate(t, nil, "conditions", "--all-nodes", "-l", sel, "--fresh")
	if strings.Count(res.Stdout, "debug-pod") != 12 || strings.Contains(res.Stdout, " conditions ") {
		t.Errorf("--fresh: %s", res)
	}
	expectNoLeftovers(t)
}

// TestScaleConditions: conditions --all-nodes on NODESTATE_E2E_CONDITIONS_NODES kwok nodes
// carrying the monitor's conditions, from the conditions (one LIST) beside --fresh (a debug
// pod per node), in one run; skipped unless set.
func TestScaleConditions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NODESTATE_E2E_CONDITIONS_NODES"))
	if n <= 0 {
		t.Skip("NODESTATE_E2E_CONDITIONS_NODES not set")
	}
	cpu, err := os.ReadFile(filepath.Join("..", "..", "examples", "kubelet-root", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	dir := KubeletDir(t, map[string]string{"cpu_manager_state": string(cpu)})
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("cscale-%05d", i))
	}
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: dir} })
	beat := metav1.NewTime(time.Now().Truncate(time.Second))
	var conds []corev1.NodeCondition
	for _, c := range lib.NodeChecks {
		conds = append(conds, corev1.NodeCondition{Type: lib.ConditionTypes[c], Status: corev1.ConditionFalse, Reason: "Fine", Message: "fine", LastHeartbeatTime: beat, LastTransitionTime: beat})
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	var g errgroup.Group
	g.SetLimit(20)
	for _, name := range names {
		g.Go(func() error {
			_, err := Client().CoreV1().Nodes().Patch(ctxFor(t, time.Minute), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	sel := TestSelector(t)
	from := nodestate(t, nil, "conditions", "--all-nodes", "-l", sel, "--no-headers")
	fresh := nodestate(t, nil, "conditions", "--all-nodes", "-l", sel, "--no-headers", "--fresh")
	if c := strings.Count(from.Stdout, " conditions "); c != 4*n {
		t.Errorf("from conditions: %d rows from conditions, want %d", c, 4*n)
	}
	if c := strings.Count(fresh.Stdout, " debug-pod "); c != 4*n {
		t.Errorf("--fresh: %d rows read through debug pods, want %d\n%s", c, 4*n, fresh.Stderr)
	}
	t.Logf("CONDITIONS %d nodes: from conditions %s, --fresh %s (ratio %.0fx)", n, from.Duration.Round(time.Millisecond), fresh.Duration.Round(time.Millisecond), float64(fresh.Duration)/float64(from.Duration))
	expectNoLeftovers(t)
}
