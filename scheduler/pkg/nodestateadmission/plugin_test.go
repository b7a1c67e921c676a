package nodestateadmission

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
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

// The pods preemption nominated to a node are in the NodeInfo the framework gives Filter (its
// first pass, RunFilterPluginsWithNominatedPods): the kubelet admits them first, once their
// victims are gone, so pod must fit after them.
func TestNominatedPodsReplayedFirst(t *testing.T) {
	h := newHarness(t, "", configMap(t, nodeState(t, "node-c", false, "restricted", time.Now())))
	nominated, pod := guaranteed("nominated", "16", "2Gi"), guaranteed("pod", "16", "2Gi")
	nominated.Status.NominatedNodeName = "node-c"
	if st := h.filter(pod, "node-c"); !st.IsSuccess() {
		t.Fatalf("pod alone: %s", statusOf(st))
	}
	h.onNode = map[string][]*corev1.Pod{"node-c": {nominated}}
	st := h.filter(pod, "node-c")
	if st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], topologyRefusal) || !strings.Contains(st.Reasons()[0], "after 1 pod(s) nominated here by preemption") {
		t.Errorf("pod after a nominated pod: %s, want Unschedulable %q after 1 nominated pod", statusOf(st), topologyRefusal)
	}
	// Bound (NodeName set), the pod is the node's: its published state and the reservations
	// count it, never the nominated path (twice would refuse pods the kubelet admits).
	bound := nominated.DeepCopy()
	bound.Spec.NodeName = "node-c"
	h.onNode["node-c"] = []*corev1.Pod{bound}
	if st := h.filter(pod, "node-c"); !st.IsSuccess() {
		t.Errorf("pod beside a bound pod the state does not hold: %s", statusOf(st))
	}
}

// Preemption's pass removes the victims from the NodeInfo it filters with: a checkpoint owner
// no longer among the node's pods is inactive, and the replay frees what it holds, as the
// kubelet does once the victim is gone. node-a: 2 NUMA nodes of 16 CPUs, CPUs 0,16 reserved,
// seed-a holding 1,17 on NUMA node 0; a nominated 16-CPU pod takes NUMA node 1 first.
func TestPreemptionVictimsFreed(t *testing.T) {
	h := newHarness(t, "", configMap(t, nodeState(t, "node-a", true, "restricted", time.Now())))
	nominated, pod := guaranteed("nominated", "16", "2Gi"), guaranteed("pod", "14", "2Gi")
	victim := guaranteed("seed-a", "2", "1Gi")
	victim.Spec.NodeName = "node-a"
	h.onNode = map[string][]*corev1.Pod{"node-a": {nominated, victim}}
	if st := h.filter(pod, "node-a"); st.Code() != fwk.Unschedulable || !strings.Contains(st.Reasons()[0], "nominated here by preemption") {
		t.Errorf("14 CPUs beside seed-a and the nominated pod: %s, want Unschedulable after 1 nominated pod", statusOf(st))
	}
	h.onNode["node-a"] = []*corev1.Pod{nominated} // seed-a chosen as the victim
	if st := h.filter(pod, "node-a"); !st.IsSuccess() {
		t.Errorf("14 CPUs with seed-a preempted: %s, want Success", statusOf(st))
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

// devicesSection is the PodResources section of examples/kubelet-root's devices (its real
// device checkpoint's): GetAllocatableResources, each device with the NUMA nodes the checkpoint
// recorded for it (the FPGAs without topology).
func devicesSection(t *testing.T) []byte {
	t.Helper()
	pr := machine.PodResources{Pods: []machine.PodResourcesPod{}, Allocatable: []machine.PodResourcesDevices{
		{Resource: "nvidia.com/gpu", IDs: []string{"GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f", "GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a"}, NUMANodes: []int64{0}},
		{Resource: "nvidia.com/gpu", IDs: []string{"GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b", "GPU-4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d"}, NUMANodes: []int64{1}},
		{Resource: "intel.com/sriov_netdevice", IDs: []string{"0000:3b:02.0", "0000:3b:02.1"}, NUMANodes: []int64{0}},
		{Resource: "intel.com/sriov_netdevice", IDs: []string{"0000:af:02.0", "0000:af:02.1"}, NUMANodes: []int64{1}},
		{Resource: "example.com/fpga", IDs: []string{"fpga-0", "fpga-1"}},
	}}
	doc, err := json.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(machine.PodResourcesHeader + "\n" + string(doc) + "\n" + machine.PodResourcesEnd)
}

// Devices: examples/kubelet-root's real device checkpoint, where two pods hold all four GPUs,
// published with the devices' topology: with those pods on the node, the kubelet refuses a pod
// asking for a GPU (its words), a refusal that pods leaving would lift (Unschedulable), and
// admits one asking for the free FPGA; with them gone from the node (deleted: the checkpoint
// keeps their GPUs until the kubelet's next allocation frees them) it admits the GPU pod; a
// node that publishes no device topology leaves the pod not judged: the fallback's.
func TestFilterDevices(t *testing.T) {
	checkpoint, err := os.ReadFile("../../../examples/kubelet-root/device-plugins/kubelet_internal_checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	withDevices := func(node, policy string) *corev1.ConfigMap {
		s := nodeState(t, node, false, policy, now)
		s.Files["device-plugins/kubelet_internal_checkpoint"] = checkpoint
		s.Sections[machine.PodResourcesHeader] = devicesSection(t)
		return configMap(t, s)
	}
	h := newHarness(t, `{"fallback":"reject"}`, withDevices("gpu-a", "restricted"), withDevices("gpu-b", "best-effort"),
		configMap(t, nodeState(t, "gpu-unknown", false, "restricted", now)))
	h.capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), "intel.com/sriov_netdevice": resource.MustParse("4"), "example.com/fpga": resource.MustParse("2")}
	var holders []*corev1.Pod
	for _, uid := range []types.UID{"6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f", "0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b"} {
		holders = append(holders, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "holder-" + string(uid[:8]), Namespace: "default", UID: uid}})
	}
	h.onNode = map[string][]*corev1.Pod{"gpu-a": holders, "gpu-b": holders}
	asking := func(name, resourceName string) *corev1.Pod {
		pod := guaranteed(name, "2", "1Gi")
		for _, list := range []corev1.ResourceList{pod.Spec.Containers[0].Resources.Requests, pod.Spec.Containers[0].Resources.Limits} {
			list[corev1.ResourceName(resourceName)] = resource.MustParse("1")
		}
		return pod
	}
	// restricted: no free GPU gives no device hint, so no preferred merge; best-effort admits the
	// merge and the device manager's allocation fails.
	for node, refused := range map[string]string{
		"gpu-a": topologyRefusal,
		"gpu-b": "UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
	} {
		st := h.filter(asking("gpu", "nvidia.com/gpu"), node)
		if st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], refused) {
			t.Errorf("gpu on %s: %s, want Unschedulable %q", node, statusOf(st), refused)
		}
		t.Logf("gpu on %s: %s", node, statusOf(st))
	}
	// The holders deleted: the kubelet frees their GPUs at this admission, as the replay does.
	h.onNode = nil
	if st := h.filter(asking("gpu", "nvidia.com/gpu"), "gpu-a"); !st.IsSuccess() {
		t.Errorf("gpu on gpu-a without the checkpoint's holders: %s, want admitted", statusOf(st))
	}
	h.onNode = map[string][]*corev1.Pod{"gpu-a": holders, "gpu-b": holders}
	if st := h.filter(asking("fpga", "example.com/fpga"), "gpu-a"); !st.IsSuccess() {
		t.Errorf("fpga on gpu-a: %s, want Success", statusOf(st))
	}
	if st := h.filter(asking("gpu", "nvidia.com/gpu"), "gpu-unknown"); st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], "kubelet admission not judged: ") {
		t.Errorf("gpu on gpu-unknown: %s, want not judged (fallback: reject)", statusOf(st))
	}
}

// The scheduler filters nodes in parallel while the informer updates states and binding
// goroutines reserve and unreserve: run under -race.
func TestConcurrentFilterReserveAndUpdates(t *testing.T) {
	now := time.Now()
	h := newHarness(t, "", configMap(t, nodeState(t, "node-a", true, "restricted", now)), configMap(t, nodeState(t, "node-b", false, "restricted", now)))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 10 {
				pod := guaranteed(fmt.Sprintf("p-%d-%d", i, j), "2", "1Gi")
				node := []string{"node-a", "node-b"}[j%2]
				if st := h.filter(pod, node); !st.IsSuccess() && st.Code() != fwk.Unschedulable {
					t.Errorf("%s on %s: %s", pod.Name, node, statusOf(st))
				}
				h.reserve(pod, node)
				if j%3 == 0 {
					h.unreserve(pod, node)
				}
			}
		})
	}
	wg.Go(func() {
		for j := range 5 {
			h.plugin.states.set(configMap(t, nodeState(t, "node-b", false, "restricted", now.Add(time.Duration(j)*time.Second))))
		}
	})
	wg.Wait()
}

// A node on a kubelet build the rules were not checked against (a release day's) is logged once
// per version, with whose rules judge it; a build checked is not.
func TestSayUnchecked(t *testing.T) {
	var lines []string
	ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
	p := newPlugin(Args{})
	node := func(name, version string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version}}}
	}
	for _, n := range []*corev1.Node{node("a", "v1.99.0"), node("b", "v1.99.0"), node("c", "v1.37.1")} {
		p.sayUnchecked(ctx, n)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"node"="a"`) || !strings.Contains(lines[0], "kubelet v1.99.0 is newer than every build this plugin was checked against") {
		t.Errorf("logged %q", lines)
	}
}
