package nodestate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// ListFleet answers a node from its monitor's conditions only when it set every one asked,
// within MaxAge; the others are read, each with why.
func TestListFleet(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	node := func(name string, age time.Duration, status corev1.ConditionStatus, types ...corev1.NodeConditionType) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.4", OperatingSystem: "linux"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		for _, ct := range types {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: ct, Status: status, Reason: "CheckpointsIntact",
				Message: "7 checkpoint files valid for kubelet v1.36.4", LastHeartbeatTime: metav1.NewTime(now.Add(-age)),
				LastTransitionTime: metav1.NewTime(now.Add(-40 * 24 * time.Hour))})
		}
		return n
	}
	cp := ConditionTypes[CheckCheckpoints]
	client := fake.NewClientset(
		node("fresh", 4*time.Minute, corev1.ConditionFalse, cp, ConditionTypes[CheckRestart]),
		node("stale", 16*time.Minute, corev1.ConditionFalse, cp),
		node("none", 0, corev1.ConditionFalse),
		node("other", time.Minute, corev1.ConditionFalse, ConditionTypes[CheckRestart]),
		node("corrupt", time.Minute, corev1.ConditionTrue, cp),
		node("unknown", time.Minute, corev1.ConditionUnknown, cp),
	)
	cfg := Config{AllNodes: true, Client: client}
	verify := FleetOptions{Checks: []NodeCheck{CheckCheckpoints}, ReadProblems: true, Now: now}
	split, err := ListFleet(context.Background(), cfg, verify)
	if err != nil {
		t.Fatal(err)
	}
	if len(split.Monitored) != 1 || split.Monitored[0].Node != "fresh" || split.Monitored[0].Source.AgeSeconds != 240 ||
		split.Monitored[0].Source.From != FromConditions || !split.Monitored[0].Source.At.Time.Equal(now.Add(-4*time.Minute)) {
		t.Fatalf("monitored: %+v", split.Monitored)
	}
	why := map[string]ReadWhy{}
	for _, r := range split.Read {
		why[r.Info.Name] = r.Why
	}
	want := map[string]ReadWhy{"stale": ReadStale, "none": ReadNoMonitor, "other": ReadNoMonitor, "corrupt": ReadProblem, "unknown": ReadProblem}
	if len(why) != len(want) {
		t.Errorf("read %v, want %v", why, want)
	}
	for n, w := range want {
		if why[n] != w {
			t.Errorf("%s read as %q, want %q", n, why[n], w)
		}
	}
	if got, want := split.Summary(), "1 of 6 nodes answered from the monitor's conditions (deploy/npd), the oldest written 4m ago; 5 read now through debug pods: "+
		"2 without the monitor's conditions, 1 with conditions older than 15m (--max-condition-age), 2 whose monitor reports a problem or cannot judge"; got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}

	// The row: the node's files, valid, as the condition says; json carries where and how old.
	rows := split.Monitored[0].MonitorRows()
	if len(rows) != 1 || rows[0].File() != "-" || rows[0].Verdict() != "valid" || rows[0].Why() != "7 checkpoint files valid for kubelet v1.36.4" {
		t.Fatalf("rows %+v", rows)
	}
	b, err := json.Marshal(rows[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"node":"fresh"`, `"verdict":"valid"`, `"monitor":{"condition":"KubeletCheckpointsCorrupt","status":"False","reason":"CheckpointsIntact"`,
		`"lastTransitionTime":"2026-10-18T08:00:00Z"`, `"source":{"from":"conditions","at":"2026-11-27T07:56:00Z","ageSeconds":240}`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("json lacks %s:\n%s", w, b)
		}
	}

	// Every check asked: a node with only some of them runs no whole monitor; a problem is the
	// conditions' answer when it is not read again (conditions).
	split, err = ListFleet(context.Background(), cfg, FleetOptions{Checks: []NodeCheck{CheckCheckpoints, CheckRestart}, Now: now, MaxAge: time.Hour})
	if err != nil || len(split.Monitored) != 1 || split.Monitored[0].Node != "fresh" || len(split.Monitored[0].Results) != 2 {
		t.Errorf("two checks: %+v, %v", split.Monitored, err)
	}
	split, err = ListFleet(context.Background(), cfg, FleetOptions{Checks: []NodeCheck{CheckCheckpoints}, Now: now, MaxAge: time.Hour})
	if err != nil || len(split.Monitored) != 4 || len(split.Read) != 2 {
		t.Errorf("problems answered, an hour allowed: monitored %d, read %d, %v", len(split.Monitored), len(split.Read), err)
	}
	if !split.AnyMonitor() {
		t.Error("AnyMonitor: false with monitored nodes")
	}
	split, err = ListFleet(context.Background(), cfg, FleetOptions{Checks: []NodeCheck{CheckDevices}, Now: now})
	if err != nil || split.AnyMonitor() || len(split.Read) != 6 {
		t.Errorf("no node with the devices condition: AnyMonitor %v, read %d, %v", split.AnyMonitor(), len(split.Read), err)
	}
	split, err = ListFleet(context.Background(), cfg, FleetOptions{Checks: []NodeCheck{CheckCheckpoints}, Now: now, Fresh: true})
	if err != nil || len(split.Monitored) != 0 || len(split.Read) != 6 || split.Summary() != "" {
		t.Errorf("fresh: monitored %d, read %d, %v", len(split.Monitored), len(split.Read), err)
	}
	if _, err := ListFleet(context.Background(), Config{AllNodes: true, Selector: "pool=none", Client: client}, verify); err == nil ||
		err.Error() != `no nodes match "pool=none"` {
		t.Errorf("no nodes: %v", err)
	}
}
