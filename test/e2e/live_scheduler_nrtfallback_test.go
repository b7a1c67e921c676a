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
//     there soon after, the replay's verdict now.
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

	sched := startNodestateScheduler(t, "nodestate-scheduler-nrt-fallback", bin, config)

	ns := NewNamespace(t, nil)
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
	if p := bound("fits-zone"); p.Spec.NodeName != "fb-nrt" {
		t.Errorf("fits-zone bound to %s, want fb-nrt", p.Spec.NodeName)
	}
	if p := bound("judged-4"); p.Spec.NodeName != "fb-judged" {
		t.Errorf("judged-4 bound to %s, want fb-judged", p.Spec.NodeName)
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
