package nodestateadmission

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	topologyv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	nrtconfig "sigs.k8s.io/scheduler-plugins/apis/config"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// nrtAPI is an API server on loopback that serves the NodeResourceTopology objects given, and
// the discovery documents the upstream plugin's client reads to find them: what the fallback
// plugin, built from its real source, talks to.
func nrtAPI(t *testing.T, nrts ...*topologyv1alpha2.NodeResourceTopology) *rest.Config {
	t.Helper()
	byName := map[string]*topologyv1alpha2.NodeResourceTopology{}
	for _, nrt := range nrts {
		nrt.APIVersion, nrt.Kind = "topology.node.k8s.io/v1alpha2", "NodeResourceTopology"
		byName[nrt.Name] = nrt
	}
	const prefix = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case r.URL.Path == "/api":
			body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case r.URL.Path == "/apis":
			gv := metav1.GroupVersionForDiscovery{GroupVersion: "topology.node.k8s.io/v1alpha2", Version: "v1alpha2"}
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
				Groups: []metav1.APIGroup{{Name: "topology.node.k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}}
		case r.URL.Path == "/apis/topology.node.k8s.io/v1alpha2":
			body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "topology.node.k8s.io/v1alpha2",
				APIResources: []metav1.APIResource{{Name: "noderesourcetopologies", SingularName: "noderesourcetopology", Kind: "NodeResourceTopology",
					Verbs: metav1.Verbs{"get", "list", "watch"}}}}
		case strings.HasPrefix(r.URL.Path, prefix) && byName[strings.TrimPrefix(r.URL.Path, prefix)] != nil:
			body = byName[strings.TrimPrefix(r.URL.Path, prefix)]
		default:
			w.WriteHeader(http.StatusNotFound)
			body = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// singleNUMA is a node's NodeResourceTopology under single-numa-node, container scope, with
// cpu CPUs and 32 GiB free on each of two NUMA zones.
func singleNUMA(node, cpu string) *topologyv1alpha2.NodeResourceTopology {
	var zones topologyv1alpha2.ZoneList
	for _, name := range []string{"node-0", "node-1"} {
		var res topologyv1alpha2.ResourceInfoList
		for rn, q := range map[string]string{"cpu": cpu, "memory": "32Gi"} {
			qty := resource.MustParse(q)
			res = append(res, topologyv1alpha2.ResourceInfo{Name: rn, Capacity: qty, Allocatable: qty, Available: qty})
		}
		zones = append(zones, topologyv1alpha2.Zone{Name: name, Type: "Node", Resources: res})
	}
	return &topologyv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: node}, Zones: zones,
		Attributes: topologyv1alpha2.AttributeList{{Name: "topologyManagerPolicy", Value: "single-numa-node"}, {Name: "topologyManagerScope", Value: "container"}}}
}

// With fallback NodeResourceTopologyMatch, the upstream plugin (its carried source, its
// client reading the NRT objects from an API server) judges exactly the nodes the replay
// cannot: no state, a stale one; the node with a fresh state is the replay's, whatever its NRT
// object says. Its refusal keeps its words and says it was the fallback's, and why.
func TestFallbackNodeResourceTopologyMatch(t *testing.T) {
	now := time.Now()
	api := nrtAPI(t,
		singleNUMA("nrt-only", "8"),   // no published state: NRT judges
		singleNUMA("node-old", "8"),   // stale state: NRT judges
		singleNUMA("node-fresh", "1"), // judged by the replay: NRT's 1 CPU per zone is not asked
	)
	h := newHarnessWith(t, `{"fallback":"NodeResourceTopologyMatch","maxAge":"30m"}`, api,
		configMap(t, nodeState(t, "node-fresh", false, "restricted", now)),
		configMap(t, nodeState(t, "node-old", false, "restricted", now.Add(-time.Hour))))
	if h.plugin.topologyMatch == nil {
		t.Fatal("no fallback plugin built")
	}
	fits := guaranteed("fits-a-zone", "4", "1Gi")
	wide := guaranteed("wide-10", "10", "1Gi") // 10 CPUs: more than a zone's 8, fewer than the node's 16
	for _, tc := range []struct {
		pod    *corev1.Pod
		node   string
		refuse string // "" admits
	}{
		{fits, "nrt-only", ""},
		{wide, "nrt-only", "cannot align container (judged by the fallback NodeResourceTopologyMatch: no published state (ConfigMap nodestate-publish/nrt-only))"},
		{fits, "node-old", ""},
		{wide, "node-old", "cannot align container (judged by the fallback NodeResourceTopologyMatch: published state stale: read 1h0m"},
		{fits, "node-fresh", ""},      // NRT would refuse it (1 CPU per zone): the replay admits
		{wide, "node-fresh", ""},      // restricted on a fresh 2x10-CPU machine: the replay admits
		{fits, "no-nrt-no-state", ""}, // upstream passes a node without an NRT object
	} {
		st := h.filter(tc.pod, tc.node)
		switch {
		case tc.refuse == "" && !st.IsSuccess():
			t.Errorf("%s on %s: %s, want Success", tc.pod.Name, tc.node, statusOf(st))
		case tc.refuse != "" && (st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Reasons()[0], tc.refuse)):
			t.Errorf("%s on %s: %s, want Unschedulable %q", tc.pod.Name, tc.node, statusOf(st), tc.refuse)
		}
	}
}

// stubTopologyMatch stands in for the upstream plugin where a test counts what reaches it.
type stubTopologyMatch struct {
	mu      sync.Mutex
	calls   []string
	verdict *fwk.Status
}

func (s *stubTopologyMatch) record(what string) {
	s.mu.Lock()
	s.calls = append(s.calls, what)
	s.mu.Unlock()
}
func (s *stubTopologyMatch) Name() string { return "NodeResourceTopologyMatch" }
func (s *stubTopologyMatch) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s.record("PreFilter " + pod.Name)
	return nil, nil
}
func (s *stubTopologyMatch) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
func (s *stubTopologyMatch) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, n fwk.NodeInfo) *fwk.Status {
	s.record("Filter " + pod.Name + " " + n.Node().Name)
	return s.verdict
}
func (s *stubTopologyMatch) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	s.record("Reserve " + pod.Name + " " + node)
	return nil
}
func (s *stubTopologyMatch) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) {
	s.record("Unreserve " + pod.Name + " " + node)
}
func (s *stubTopologyMatch) PostBind(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) {
	s.record("PostBind " + pod.Name + " " + node)
}
func (s *stubTopologyMatch) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: "noderesourcetopologies.v1alpha2.topology.node.k8s.io", ActionType: fwk.Add | fwk.Update}}}, nil
}
func (s *stubTopologyMatch) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// withStub builds the fallback plugin as stub for the test's duration.
func withStub(t *testing.T, stub *stubTopologyMatch) {
	saved := newTopologyMatch
	newTopologyMatch = func(context.Context, *nrtconfig.NodeResourceTopologyMatchArgs, fwk.Handle) (topologyMatch, error) {
		return stub, nil
	}
	t.Cleanup(func() { newTopologyMatch = saved })
}

// The fallback plugin's cache sees every pod the profile places, as in a profile of its own:
// Reserve, Unreserve and PostBind reach it for pods the replay never judges too; its PreFilter
// runs for the pods whose nodes it may judge; its events are registered with the plugin's.
func TestFallbackPluginKeptConsistent(t *testing.T) {
	stub := &stubTopologyMatch{verdict: fwk.NewStatus(fwk.Unschedulable, "cannot align pod")}
	withStub(t, stub)
	h := newHarness(t, `{"fallback":"NodeResourceTopologyMatch"}`)
	pod := guaranteed("pod", "2", "1Gi")
	burstable := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burstable", Namespace: "default", UID: "uid-burstable"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}

	st := h.filter(pod, "node-missing")
	if want := "cannot align pod (judged by the fallback NodeResourceTopologyMatch: no published state (ConfigMap nodestate-publish/node-missing))"; st.Code() != fwk.Unschedulable || st.Reasons()[0] != want {
		t.Errorf("Filter: %s, want %q", statusOf(st), want)
	}
	h.reserve(pod, "node-a")
	h.unreserve(pod, "node-a")
	h.reserve(burstable, "node-b")
	h.fw.RunPostBindPlugins(context.Background(), framework.NewCycleState(), burstable, "node-b")
	got := strings.Join(stub.take(), ", ")
	want := "PreFilter pod, Filter pod node-missing, Reserve pod node-a, Unreserve pod node-a, Reserve burstable node-b, PostBind burstable node-b"
	if got != want {
		t.Errorf("the fallback plugin saw:\n  %s\nwant\n  %s", got, want)
	}

	events, err := h.plugin.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	for _, e := range events {
		resources = append(resources, string(e.Event.Resource))
	}
	if got := strings.Join(resources, " "); got != "Node Node Pod noderesourcetopologies.v1alpha2.topology.node.k8s.io" {
		t.Errorf("events registered for: %s", got)
	}
}

// The fallback plugin's args: its own v1 args in ours, defaulted and converted by its scheme;
// refused where they would be ignored.
func TestFallbackArgs(t *testing.T) {
	args, err := decodeArgs(&runtime.Unknown{Raw: []byte(`{"fallback":"NodeResourceTopologyMatch","nodeResourceTopologyMatch":{"cacheResyncPeriodSeconds":5}}`), ContentType: runtime.ContentTypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	internal, err := nodeResourceTopologyMatchArgs(args.NodeResourceTopologyMatch)
	if err != nil {
		t.Fatal(err)
	}
	if internal.CacheResyncPeriodSeconds != 5 || internal.ScoringStrategy.Type != nrtconfig.LeastAllocated ||
		internal.PreemptionMode == nil || *internal.PreemptionMode != nrtconfig.PreemptionDisabled {
		t.Errorf("converted args: %+v", internal)
	}
	for _, raw := range []string{`{"nodeResourceTopologyMatch":{}}`, `{"fallback":"reject","nodeResourceTopologyMatch":{}}`, `{"fallback":"nodeResourceTopologyMatch"}`} {
		if _, err := decodeArgs(&runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}); err == nil {
			t.Errorf("args %s accepted", raw)
		}
	}
}

// A pod the plugin failed is activated (moved to activeQ, its backoff skipped) when a node's
// published state changes so that a verdict may: fresh again after stale, a new fingerprint,
// removed; not when only the read time of a fresh state moves, and not once bound.
func TestRetryOnRepublish(t *testing.T) {
	now := time.Now()
	old := configMap(t, nodeState(t, "node-old", false, "restricted", now.Add(-time.Hour)))
	h := newHarness(t, `{"fallback":"reject","maxAge":"30m"}`, old)
	pod := guaranteed("waits", "2", "1Gi")
	if st := h.filter(pod, "node-old"); st.IsSuccess() {
		t.Fatal("stale state admitted under fallback reject")
	}
	if got := h.activated.wait(0); len(got) != 0 {
		t.Fatalf("activated before any change: %v", got)
	}

	fresh := configMap(t, nodeState(t, "node-old", false, "restricted", now))
	if fresh.Annotations[nodestate.FingerprintAnnotation] != old.Annotations[nodestate.FingerprintAnnotation] {
		t.Fatal("the republished state is not the same state read again")
	}
	fresh.ResourceVersion = "2"
	h.republish(fresh)
	if got := h.activated.wait(1); len(got) != 1 || got[0] != "default/waits" {
		t.Errorf("after the state turned fresh: activated %v, want [default/waits]", got)
	}

	// Rejected again (an unjudged pod under reject), then only the read time moves: nothing.
	if st := h.filter(pod, "node-missing"); st.IsSuccess() {
		t.Fatal("missing state admitted under fallback reject")
	}
	again := fresh.DeepCopy()
	again.Annotations[nodestate.ReadAtAnnotation] = now.Add(time.Minute).UTC().Format(time.RFC3339)
	h.republish(again)
	if got := h.activated.wait(0); len(got) != 0 {
		t.Errorf("after the read time alone moved: activated %v", got)
	}
	// A new node's first state: activated.
	h.publish(configMap(t, nodeState(t, "node-new", false, "restricted", now)))
	if got := h.activated.wait(1); len(got) != 1 {
		t.Errorf("after a node's first state: activated %v", got)
	}
	// Bound: forgotten.
	if st := h.filter(pod, "node-missing"); st.IsSuccess() {
		t.Fatal("missing state admitted under fallback reject")
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "node-new"
	h.plugin.podHandler().OnUpdate(pod, bound)
	h.publish(configMap(t, nodeState(t, "node-other", false, "restricted", now)))
	if got := h.activated.wait(0); len(got) != 0 {
		t.Errorf("a bound pod activated: %v", got)
	}
}

// A republish activates only the pods the node's new state may admit: one its machine refuses
// even emptied of every pod (40 CPUs on 32) waits for another node's change, still rejected;
// where the state cannot say (a node the scheduler does not know yet), every pod is retried.
func TestRetryOnlyWhereTheNewStateMayAdmit(t *testing.T) {
	now := time.Now()
	h := newHarness(t, `{"fallback":"reject","maxAge":"30m"}`, configMap(t, nodeState(t, "full", true, "restricted", now)))
	huge, waits := guaranteed("huge", "40", "1Gi"), guaranteed("waits", "2", "1Gi")
	if st := h.filter(huge, "full"); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("40 CPUs on 32: %s", statusOf(st))
	}
	if st := h.filter(waits, "missing"); st.IsSuccess() {
		t.Fatal("a node without a state admitted under fallback reject")
	}
	h.publish(configMap(t, nodeState(t, "emptied", false, "restricted", now)))
	if got := h.activated.wait(1); !slices.Equal(got, []string{"default/waits"}) {
		t.Errorf("after a node's new state: activated %v, want [default/waits]", got)
	}
	if got := h.activated.wait(0); len(got) != 0 {
		t.Errorf("then: activated %v", got)
	}
	// huge is still rejected: a node the scheduler does not know yet retries it.
	h.plugin.nodeOf = func(name string) (*corev1.Node, error) {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	h.publish(configMap(t, nodeState(t, "unknown", false, "restricted", now)))
	if got := h.activated.wait(1); !slices.Equal(got, []string{"default/huge"}) {
		t.Errorf("after an unknown node's state: activated %v, want [default/huge]", got)
	}
}

// The hints: a node update matters when it changes what the replay reads of the node, a pod
// leaving when the kubelet's managers counted it.
func TestQueueingHints(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"}}}
	heartbeat := node.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	gpus := node.DeepCopy()
	gpus.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	for _, tc := range []struct {
		name     string
		old, new any
		hint     fwk.QueueingHintFn
		want     fwk.QueueingHint
	}{
		{"heartbeat", node, heartbeat, nodeReplayedOtherwise, fwk.QueueSkip},
		{"device plugin registered", node, gpus, nodeReplayedOtherwise, fwk.Queue},
		{"guaranteed pod left", guaranteed("g", "1", "1Gi"), nil, managedPodLeft, fwk.Queue},
		{"best-effort pod left", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, nil, managedPodLeft, fwk.QueueSkip},
	} {
		if got, err := tc.hint(klog.Background(), nil, tc.old, tc.new); err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
