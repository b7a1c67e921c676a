package nodestateadmission

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// The real kubelet v1.37.1 refused examples/admit-node/pod-wide.yaml (18 CPUs: more than one
// NUMA node's 16) on this node with these words (restricted, pod scope).
const topologyRefusal = "TopologyAffinityError: Resources cannot be allocated with Topology locality"

// A pod the kubelet refuses on node A (restricted: no NUMA node has 18 free exclusive CPUs) is
// filtered with the kubelet's reason; the same machine under best-effort admits it.
func TestFilterRefusesWithTheKubeletsReason(t *testing.T) {
	now := time.Now()
	h := newHarness(t, "",
		configMap(t, nodeState(t, "node-a", true, "restricted", now)),
		configMap(t, nodeState(t, "node-b", false, "best-effort", now)))
	wide := guaranteed("wide-18", "18", "2Gi")

	st := h.filter(wide, "node-a")
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.HasPrefix(strings.Join(st.Reasons(), ""), topologyRefusal) {
		t.Errorf("node-a: %s, want UnschedulableAndUnresolvable %q...", statusOf(st), topologyRefusal)
	}
	t.Logf("node-a: %s", statusOf(st))
	if st := h.filter(wide, "node-b"); !st.IsSuccess() {
		t.Errorf("node-b: %s, want Success", statusOf(st))
	}
	// pod-db fits on one NUMA node of node-a, beside the pod holding CPUs 1,17.
	if st := h.filter(guaranteed("db", "6", "4Gi"), "node-a"); !st.IsSuccess() {
		t.Errorf("db on node-a: %s, want Success", statusOf(st))
	}
	// 3 CPUs break full-pcpus-only everywhere: the kubelet's SMTAlignmentError.
	if st := h.filter(guaranteed("odd", "3", "1Gi"), "node-b"); st.Code() != fwk.UnschedulableAndUnresolvable || !strings.HasPrefix(st.Reasons()[0], "SMTAlignmentError: ") {
		t.Errorf("odd on node-b: %s, want SMTAlignmentError", statusOf(st))
	}
}

// A pod asking for nothing the kubelet's managers decide skips the plugin.
func TestPreFilterSkipsUnmanagedPods(t *testing.T) {
	burstable := guaranteed("burstable", "2", "1Gi")
	burstable.Spec.Containers[0].Resources.Limits = nil
	if managed(burstable) {
		t.Error("a Burstable pod without devices is managed")
	}
	gpu := burstable.DeepCopy()
	gpu.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	if !managed(gpu) || !managed(guaranteed("g", "500m", "1Gi")) {
		t.Error("a pod asking for a device, or a Guaranteed one, is not managed")
	}
	h := newHarness(t, `{"fallback":"reject"}`)
	// No state anywhere and fallback reject: only a skipped pod passes.
	if st := h.filter(burstable, "node-x"); !st.IsSuccess() {
		t.Errorf("burstable: %s, want Success (skipped)", statusOf(st))
	}
	if st := h.filter(guaranteed("g", "2", "1Gi"), "node-x"); st.IsSuccess() {
		t.Error("a Guaranteed pod passed a node without state under fallback reject")
	}
}

// A reserved pod counts on its node until the node reports it; Unreserve frees it.
func TestReservationCountsUntilReported(t *testing.T) {
	now := time.Now()
	state := nodeState(t, "node-c", false, "restricted", now)
	h := newHarness(t, "", configMap(t, state))
	first, second := guaranteed("first", "16", "2Gi"), guaranteed("second", "16", "2Gi")

	if st := h.filter(first, "node-c"); !st.IsSuccess() {
		t.Fatalf("first: %s", statusOf(st))
	}
	h.reserve(first, "node-c")
	st := h.filter(second, "node-c")
	if st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], topologyRefusal) || !strings.Contains(st.Reasons()[0], "after 1 pod(s) bound here") {
		t.Errorf("second after first reserved: %s, want Unschedulable %q after 1 pod", statusOf(st), topologyRefusal)
	}
	// Asked about again (a retry), a reserved pod is not counted against itself.
	if st := h.filter(first, "node-c"); !st.IsSuccess() {
		t.Errorf("first again: %s", statusOf(st))
	}
	h.unreserve(first, "node-c")
	if st := h.filter(second, "node-c"); !st.IsSuccess() {
		t.Errorf("second after Unreserve: %s", statusOf(st))
	}

	// Reserved again, then the node reports it (its PodResources List names it): not counted twice.
	h.reserve(first, "node-c")
	if st := h.filter(second, "node-c"); st.IsSuccess() {
		t.Fatal("second passed with first reserved")
	}
	reported := nodeState(t, "node-c", false, "restricted", now)
	reported.Sections[machine.PodResourcesHeader] = publishedtest.ReportingPods(first)
	h.publish(configMap(t, reported))
	if st := h.filter(second, "node-c"); !st.IsSuccess() {
		t.Errorf("second after node-c reported first: %s", statusOf(st))
	}
	if n := h.plugin.reserved.count("node-c"); n != 0 {
		t.Errorf("%d reservations left on node-c after it reported them", n)
	}
}

// A node whose state is stale, missing or undecodable follows the fallback, and says why.
func TestFallback(t *testing.T) {
	now := time.Now()
	garbage := configMap(t, nodeState(t, "node-bad", false, "restricted", now))
	garbage.BinaryData[nodestate.PublishedDataKey] = []byte("not gzip")
	objs := []runtime.Object{
		configMap(t, nodeState(t, "node-fresh", false, "restricted", now)),
		configMap(t, nodeState(t, "node-old", false, "restricted", now.Add(-time.Hour))),
		garbage,
	}
	wide := guaranteed("wide-18", "18", "2Gi")
	small := guaranteed("small", "2", "1Gi")
	for _, tc := range []struct {
		args, fallback string
	}{{"", FallbackPass}, {`{"fallback":"pass","maxAge":"30m"}`, FallbackPass}, {`{"fallback":"reject","maxAge":"30m"}`, FallbackReject}} {
		h := newHarness(t, tc.args, objs...)
		if h.plugin.args.Fallback != tc.fallback {
			t.Fatalf("args %s: fallback %q", tc.args, h.plugin.args.Fallback)
		}
		// Judged nodes answer whatever the fallback.
		if st := h.filter(wide, "node-fresh"); st.Code() != fwk.UnschedulableAndUnresolvable {
			t.Errorf("%s: wide on node-fresh: %s", tc.args, statusOf(st))
		}
		for node, why := range map[string]string{
			"node-old":     "published state stale: read 1h0m",
			"node-missing": "no published state (ConfigMap nodestate-publish/node-missing)",
			"node-bad":     "published state not readable: ConfigMap nodestate-publish/node-bad: published state: not gzip",
		} {
			for _, pod := range []*corev1.Pod{wide, small} {
				st := h.filter(pod, node)
				switch tc.fallback {
				case FallbackPass:
					if !st.IsSuccess() {
						t.Errorf("%s: %s on %s: %s, want Success", tc.args, pod.Name, node, statusOf(st))
					}
				case FallbackReject:
					if st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], why) || !strings.HasSuffix(st.Reasons()[0], "(fallback: reject)") {
						t.Errorf("%s: %s on %s: %s, want Unschedulable %q", tc.args, pod.Name, node, statusOf(st), why)
					}
				}
			}
		}
	}
}

// Args the plugin cannot act on are refused at start.
func TestArgs(t *testing.T) {
	for _, raw := range []string{`{"fallback":"guess"}`, `{"maxAge":"-1m"}`, `{"maxAge":3}`} {
		if _, err := decodeArgs(&runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}); err == nil {
			t.Errorf("args %s accepted", raw)
		}
	}
	args, err := decodeArgs(&runtime.Unknown{Raw: []byte(`{"maxAge":"90s","namespace":"elsewhere"}`), ContentType: runtime.ContentTypeJSON})
	if err != nil || args.MaxAge.Duration != 90*time.Second || args.Namespace != "elsewhere" || args.Fallback != FallbackPass {
		t.Errorf("args: %+v, %v", args, err)
	}
}
