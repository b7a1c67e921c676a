//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	lib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// plantConditions patches node status as the Node Problem Detector's exporter writes it: every
// condition of the monitor, False unless problem names it, written beat ago.
func plantConditions(t *testing.T, node string, beat time.Duration, problem ...lib.NodeCheck) {
	t.Helper()
	if err := patchConditions(t, node, conditionsPatch(beat, problem...)); err != nil {
		t.Fatal(err)
	}
}

// conditionsPatch is the node status patch of plantConditions.
func conditionsPatch(beat time.Duration, problem ...lib.NodeCheck) []byte {
	at := metav1.NewTime(time.Now().Add(-beat).Truncate(time.Second))
	var conds []corev1.NodeCondition
	for _, c := range lib.NodeChecks {
		cond := corev1.NodeCondition{Type: lib.ConditionTypes[c], Status: corev1.ConditionFalse, Reason: "Fine",
			Message: string(c) + " fine", LastHeartbeatTime: at, LastTransitionTime: metav1.NewTime(at.Add(-48 * time.Hour))}
		if slices.Contains(problem, c) {
			cond.Status, cond.Reason, cond.Message = corev1.ConditionTrue, string(lib.ConditionTypes[c]), string(c)+" is wrong"
		}
		conds = append(conds, cond)
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	return patch
}

func patchConditions(t testing.TB, node string, patch []byte) error {
	_, err := Client().CoreV1().Nodes().Patch(ctxFor(t, time.Minute), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// TestLiveConditions reads the node checks back from the conditions the Node Problem
// Detector's monitor sets (planted here with a status patch, as NPD's exporter writes them):
// nodes with every condition, fresh, answer from them, with their age and no debug pod; a node
// without them, or with conditions older than --max-condition-age, is read through a debug
// pod; --fresh reads all. `conditions` answers every check; `verify --all-nodes` the
// checkpoints one, and reads a node whose monitor reports a problem there file by file.
func TestLiveConditions(t *testing.T) {
	cpu, err := os.ReadFile(filepath.Join("..", "..", "examples", "kubelet-root", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	sel := TestSelector(t)
	names := []string{"cond-a", "cond-b", "cond-c", "cond-none", "cond-stale"}
	for _, n := range names {
		CreateNode(t, n, decode.HomeKubelet, nil, KubeletDir(t, map[string]string{"cpu_manager_state": string(cpu)}))
	}
	expectNoLeftovers(t)
	plantConditions(t, "cond-a", 3*time.Minute)
	plantConditions(t, "cond-b", 3*time.Minute, lib.CheckCgroups)
	plantConditions(t, "cond-c", 3*time.Minute, lib.CheckCheckpoints)
	plantConditions(t, "cond-stale", 20*time.Minute)

	// Only the nodes with the monitor: no debug pod, one answer per check with its age.
	res := nodestate(t, nil, "conditions", "cond-a", "cond-b")
	if res.ExitCode != 1 || strings.Contains(res.Stderr, "debug pods") {
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
	// The node without the monitor, and the one whose monitor is gone, are read through debug pods.
	res = nodestate(t, nil, "conditions", "--all-nodes", "-l", sel)
	if !strings.Contains(res.Stderr, "3 of 5 nodes answered from the monitor's conditions (deploy/npd), the oldest written 3m") ||
		!strings.Contains(res.Stderr, "2 read now through debug pods: 1 without the monitor's conditions, 1 with conditions older than 15m") ||
		strings.Count(res.Stdout, "debug-pod") != 8 || !strings.Contains(res.Stdout, "cond-none    checkpoints   OK") {
		t.Errorf("--all-nodes: %s", res)
	}
	res = nodestate(t, nil, "conditions", "--all-nodes", "-l", sel, "--fresh")
	if strings.Count(res.Stdout, "debug-pod") != 20 || strings.Contains(res.Stdout, " conditions ") || strings.Contains(res.Stderr, "answered") {
		t.Errorf("--fresh: %s", res)
	}

	// verify --all-nodes: one row for each node its monitor answers for, the files of the others.
	type row struct {
		Node    string `json:"node"`
		File    string `json:"file"`
		Verdict string `json:"verdict"`
		Monitor *struct {
			Condition string `json:"condition"`
			Status    string `json:"status"`
		} `json:"monitor"`
		Source *struct {
			From       string `json:"from"`
			AgeSeconds int64  `json:"ageSeconds"`
		} `json:"source"`
	}
	verifyJSON := func(args ...string) (map[string][]row, Result) {
		t.Helper()
		res := nodestate(t, nil, append([]string{"verify", "--all-nodes", "-l", sel, "-o", "json"}, args...)...)
		var list struct{ Items []row }
		if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil || res.ExitCode != 0 {
			t.Fatalf("verify %v: %v\n%s", args, err, res)
		}
		byNode := map[string][]row{}
		for _, r := range list.Items {
			byNode[r.Node] = append(byNode[r.Node], r)
		}
		return byNode, res
	}
	byNode, res := verifyJSON()
	for _, n := range names {
		rs := byNode[n]
		if len(rs) != 1 || rs[0].Verdict != "valid" || rs[0].Source == nil {
			t.Errorf("%s: %+v", n, rs)
			continue
		}
		r := rs[0]
		switch n {
		case "cond-a", "cond-b": // the checkpoints condition is False on both
			if r.File != "-" || r.Monitor == nil || r.Monitor.Condition != "KubeletCheckpointsCorrupt" || r.Monitor.Status != "False" ||
				r.Source.From != "conditions" || r.Source.AgeSeconds < 180 || r.Source.AgeSeconds > 240 {
				t.Errorf("%s: want the condition's answer, 3m old: %+v %+v %+v", n, r, r.Monitor, r.Source)
			}
		default: // no monitor, a stale one, or a problem: the files, read now
			if r.File != "cpu_manager_state" || r.Monitor != nil || r.Source.From != "debug-pod" || r.Source.AgeSeconds != 0 {
				t.Errorf("%s: want its file read now: %+v %+v", n, r, r.Source)
			}
		}
	}
	if !strings.Contains(res.Stderr, "2 of 5 nodes answered from the monitor's conditions") ||
		!strings.Contains(res.Stderr, "3 read now through debug pods: 1 without the monitor's conditions, 1 with conditions older than 15m (--max-condition-age), 1 whose monitor reports a problem or cannot judge") ||
		!strings.Contains(res.Stderr, "node cond-c: the monitor said 3m") || !strings.Contains(res.Stderr, "checkpoints is wrong; reading it now") {
		t.Errorf("stderr: %s", res.Stderr)
	}
	// A longer --max-condition-age takes the stale node's answer; the table shows AGE and FROM.
	res = nodestate(t, nil, "verify", "--all-nodes", "-l", sel, "--max-condition-age", "30m")
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	if h := rows["NODE"]; strings.Join(h, " ") != "NODE FILE FORMAT VERDICT AGE FROM MEANING" {
		t.Errorf("header %q\n%s", h, res)
	}
	if r := rows["cond-stale"]; len(r) < 6 || r[1] != "-" || r[3] != "valid" || !strings.HasPrefix(r[4], "20m") || r[5] != "conditions" {
		t.Errorf("stale node within 30m: %q\n%s", r, res)
	}
	if r := rows["cond-none"]; len(r) < 6 || r[1] != "cpu_manager_state" || r[4] != "0s" || r[5] != "debug-pod" {
		t.Errorf("node without the monitor: %q\n%s", r, res)
	}
	byNode, _ = verifyJSON("--fresh")
	for _, n := range names {
		if rs := byNode[n]; len(rs) != 1 || rs[0].Source == nil || rs[0].Source.From != "debug-pod" || rs[0].File != "cpu_manager_state" {
			t.Errorf("--fresh %s: %+v", n, rs)
		}
	}
	expectNoLeftovers(t)
}
