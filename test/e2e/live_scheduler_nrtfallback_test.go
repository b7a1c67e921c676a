//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	nsstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// TestLiveSchedulerNRTFallback runs the nodestate-scheduler with deploy/scheduler's
// scheduler-config-nrt-fallback.yaml (fallback: NodeResourceTopologyMatch, the upstream plugin
// compiled in) and rbac-nrt-fallback.yaml, as its ServiceAccount, with the NRT CRD served:
//   - fb-nrt has an NRT object (single-numa-node, container scope, 8 CPUs per zone) and no
//     published state: NodeResourceTopologyMatch's verdict decides. A pod of 4 CPUs binds there;
//     one of 10 (more than a zone, less than the node) stays Pending with the upstream plugin's
//     words, saying it was the fallback's and why;
//   - fb-judged publishes a state (examples/admit-node's machine, fresh, restricted) and has an
//     NRT object of 1 CPU per zone: the replay judges it, and admits a pod of 4 CPUs that
//     NodeResourceTopologyMatch would refuse;
//   - then fb-nrt publishes a state that admits the 10-CPU pod (fresh, best-effort): it binds
//     there soon after, the replay's verdict now;
//   - NodeResourceTopologyMatch's Score, enabled in the same profile as a plugin of its own:
//     of two nodes whose published states both admit a 4-CPU pod, the pod binds to the one
//     whose NRT zones are freer, which the default scorers alone rank second.
func TestLiveSchedulerNRTFallback(t *testing.T) {
	bin := schedulerBin(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 3*time.Minute)
	client := Client()
	if err := cp.applyCRDs(ctx, filepath.Join(root, "deploy", "scheduler-nrt", "noderesourcetopology-crd.yaml")); err != nil {
		t.Fatal(err)
	}
	config := nodestateSchedulerConfig(t, ctx, "scheduler-config-nrt-fallback.yaml", "rbac-nrt-fallback.yaml")

	const group = "nodestate-e2e/scheduler-fallback-group"
	CreateNodeWith(t, "fb-nrt", NodeOptions{Labels: map[string]string{group: "nrt"}})
	createNRT(ctx, t, "fb-nrt", []nrtZone{{"cpu": "8", "memory": "32Gi"}, {"cpu": "8", "memory": "32Gi"}})
	CreateNodeWith(t, "fb-judged", NodeOptions{Labels: map[string]string{group: "judged"}})
	createNRT(ctx, t, "fb-judged", []nrtZone{{"cpu": "1", "memory": "32Gi"}, {"cpu": "1", "memory": "32Gi"}})
	example := publishedtest.Example{Root: root}
	publish := func(node, policy string) time.Time {
		t.Helper()
		cm := publishedtest.ConfigMap(t, example.State(t, node, false, policy, time.Now()), nsstate.PublishedNamespace)
		at := time.Now()
		if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		})
		return at
	}
	publish("fb-judged", "restricted")
	// The Score: both admit a 4-CPU pod by their published states. fb-score-b runs a pod of half
	// a kwok node (500 of its 1k CPUs, 512Gi of its 1Ti), so the default scorers rank fb-score-a
	// first (NodeResourcesFit's LeastAllocated by about 50); fb-score-a's NRT zones hold just the
	// pod's 4 CPUs and 1Gi each, fb-score-b's a thousand, so NodeResourceTopologyMatch ranks
	// fb-score-b first by about 99. Without its Score the pod binds to fb-score-a.
	CreateNodeWith(t, "fb-score-a", NodeOptions{Labels: map[string]string{group: "score"}})
	createNRT(ctx, t, "fb-score-a", []nrtZone{{"cpu": "4", "memory": "1Gi"}, {"cpu": "4", "memory": "1Gi"}})
	CreateNodeWith(t, "fb-score-b", NodeOptions{Labels: map[string]string{group: "score"}})
	createNRT(ctx, t, "fb-score-b", []nrtZone{{"cpu": "1000", "memory": "1000Gi"}, {"cpu": "1000", "memory": "1000Gi"}})
	publish("fb-score-a", "best-effort")
	publish("fb-score-b", "best-effort")

	sched := startNodestateScheduler(t, "nodestate-scheduler-nrt-fallback", bin, config)

	ns := NewNamespace(t, nil)
	hog := schedulerPod(t, ns, "score-b-hog", "500", "512Gi", nil)
	hog.Spec.NodeName, hog.Spec.SchedulerName = "fb-score-b", ""
	if _, err := client.CoreV1().Pods(ns).Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(name, cpu, inGroup string) {
		t.Helper()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, schedulerPod(t, ns, name, cpu, "1Gi", map[string]string{group: inGroup}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bound := func(name string) *corev1.Pod {
		t.Helper()
		return WaitPod(t, ns, name, time.Minute, func(p *corev1.Pod) (bool, error) {
			if sched.exited() {
				return false, fmt.Errorf("the scheduler exited: %v", sched.waitErr)
			}
			return p.Spec.NodeName != "", nil
		})
	}

	create("fits-zone", "4", "nrt")
	create("wide-10", "10", "nrt")
	create("judged-4", "4", "judged")
	create("scored-4", "4", "score")
	if p := bound("fits-zone"); p.Spec.NodeName != "fb-nrt" {
		t.Errorf("fits-zone bound to %s, want fb-nrt", p.Spec.NodeName)
	}
	if p := bound("judged-4"); p.Spec.NodeName != "fb-judged" {
		t.Errorf("judged-4 bound to %s, want fb-judged", p.Spec.NodeName)
	}
	if p := bound("scored-4"); p.Spec.NodeName != "fb-score-b" {
		t.Errorf("scored-4 bound to %s, want fb-score-b (NodeResourceTopologyMatch's Score)", p.Spec.NodeName)
	}
	const want = "cannot align container (judged by the fallback NodeResourceTopologyMatch: no published state (ConfigMap nodestate-publish/fb-nrt))"
	pending := WaitPod(t, ns, "wide-10", time.Minute, func(p *corev1.Pod) (bool, error) {
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("wide-10 bound to %s, want Pending (no NUMA zone of fb-nrt's NRT has 10 CPUs)", p.Spec.NodeName)
		}
		c := podCondition(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "NodeResourceTopologyMatch"), nil
	})
	if c := podCondition(pending, corev1.PodScheduled); !strings.Contains(c.Message, want) {
		t.Errorf("wide-10: PodScheduled says %q, want it to hold %q", c.Message, want)
	} else {
		t.Logf("wide-10 Pending: %s", c.Message)
	}

	published := publish("fb-nrt", "best-effort")
	p := bound("wide-10")
	t.Logf("wide-10 bound to %s %s after fb-nrt published its state", p.Spec.NodeName, time.Since(published).Round(time.Millisecond))
	if p.Spec.NodeName != "fb-nrt" {
		t.Errorf("wide-10 bound to %s, want fb-nrt", p.Spec.NodeName)
	}
}
