package nodestate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

func publishedConfigMap(t *testing.T, s *PublishedState) *corev1.ConfigMap {
	t.Helper()
	b, err := EncodePublished(s)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Node, Namespace: PublishedNamespace, Labels: map[string]string{PublishedLabel: PublishedLabelValue}},
		BinaryData: map[string][]byte{PublishedDataKey: b}}
}

// readyNode is a Ready Linux node of kubelet v1.37.1 whose status gives allocatable.
func readyNode(name string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: allocatable}}
}

// admit --all-nodes --from-published: one LIST of nodes and one of the published ConfigMaps, no
// debug pod; a fresh state is judged as a read node is, with its age; a stale one, a missing
// one and one that does not decode are each their node's error, not judged.
func TestPublishedFleet(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	fresh := admitNodeState(t, "fresh")
	fresh.ReadAt = now.Add(-2 * time.Minute)
	stale := admitNodeState(t, "stale")
	stale.ReadAt = now.Add(-20 * time.Minute)
	objs := []runtime.Object{publishedConfigMap(t, fresh), publishedConfigMap(t, stale)}
	bad := publishedConfigMap(t, fresh)
	bad.Name = "hostile" // another node's state under its name
	objs = append(objs, bad)
	for _, name := range []string{"fresh", "stale", "none", "hostile"} {
		objs = append(objs, readyNode(name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30")}))
	}
	client := fake.NewClientset(objs...)
	db := guaranteedPod("db", "", "6", "4Gi")
	db.Status = corev1.PodStatus{}
	r, err := New(t.Context(), Config{AllNodes: true, Client: client, Published: &PublishedRead{Now: now}, Engines: Engines{Admit: &AdmitConfig{Pods: []*corev1.Pod{db}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*NodeResult{}
	for res, err := range r.Results(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		got[res.Node] = res
	}
	if len(got) != 4 {
		t.Fatalf("%d nodes answered, want 4", len(got))
	}
	f := got["fresh"]
	if f.Err != nil || f.Admit == nil || f.Admit.Err != nil || len(f.Admit.Admissions) != 1 || !f.Admit.Admissions[0].Admitted {
		t.Fatalf("fresh: %v %+v", f.Err, f.Admit)
	}
	if f.Source == nil || f.Source.From != FromPublished || f.Source.AgeSeconds != 120 || f.Source.Age() != "2m" {
		t.Errorf("fresh's provenance %+v", f.Source)
	}
	// Its pods not listed, its answer says what it rests on.
	if !slices.ContainsFunc(f.Admit.Notes, func(n string) bool {
		return strings.HasPrefix(n, "node-resource predicate not replayed, and an admitted pod placed as if every checkpoint owner still runs: the node's pods were not listed")
	}) {
		t.Errorf("fresh's notes %q", f.Admit.Notes)
	}
	for node, want := range map[string]string{"stale": "published state is 20m old, over --max-age 15m", "none": ErrNoPublishedState.Error(), "hostile": `holds the state of node "fresh", not its own`} {
		if res := got[node]; res.Err == nil || !strings.Contains(res.Err.Error(), want) || res.Admit != nil || len(res.Rows) != 1 {
			t.Errorf("%s: %v, want %q and no admission", node, res.Err, want)
		}
	}
	if !errors.Is(got["none"].Err, ErrNoPublishedState) {
		t.Errorf("none: %v", got["none"].Err)
	}
	var requests []string
	for _, a := range client.Actions() {
		requests = append(requests, a.GetVerb()+" "+a.GetResource().Resource)
	}
	slices.Sort(requests)
	if want := []string{"list configmaps", "list nodes"}; !slices.Equal(requests, want) {
		t.Errorf("requests %q, want %q", requests, want)
	}
}

// The published states come in pages (the API server's, --chunk-size as kubectl's): every page
// is judged, and every node that published none is said, each.
func TestPublishedFleetPages(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	published := []string{"a", "b", "c"}
	var objs []runtime.Object
	var states []*corev1.ConfigMap
	for _, name := range published {
		s := admitNodeState(t, name)
		s.ReadAt = now.Add(-time.Minute)
		states = append(states, publishedConfigMap(t, s))
	}
	for _, name := range append([]string{"none-1", "none-2", "none-3"}, published...) {
		objs = append(objs, readyNode(name, nil))
	}
	client := fake.NewClientset(objs...)
	var continues []string
	// One state a page, the next named by its index.
	client.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts := a.(clienttesting.ListActionImpl).GetListOptions()
		continues = append(continues, opts.Continue)
		i := 0
		if opts.Continue != "" {
			i = int(opts.Continue[0] - '0')
		}
		page := &corev1.ConfigMapList{Items: []corev1.ConfigMap{*states[i]}}
		if i+1 < len(states) {
			page.Continue = string(rune('0' + i + 1))
		}
		return true, page, nil
	})
	db := guaranteedPod("db", "", "6", "4Gi")
	db.Status = corev1.PodStatus{}
	r, err := New(t.Context(), Config{AllNodes: true, Client: client, Published: &PublishedRead{Now: now}, Engines: Engines{Admit: &AdmitConfig{Pods: []*corev1.Pod{db}}}})
	if err != nil {
		t.Fatal(err)
	}
	admitted, missing := []string{}, []string{}
	for res, err := range r.Results(t.Context()) {
		switch {
		case err != nil:
			t.Fatal(err)
		case errors.Is(res.Err, ErrNoPublishedState):
			missing = append(missing, res.Node)
		case res.Err == nil && res.Admit != nil && len(res.Admit.Admissions) == 1 && res.Admit.Admissions[0].Admitted:
			admitted = append(admitted, res.Node)
		default:
			t.Errorf("%s: %v %+v", res.Node, res.Err, res.Admit)
		}
	}
	slices.Sort(admitted)
	slices.Sort(missing)
	if !slices.Equal(admitted, published) || !slices.Equal(missing, []string{"none-1", "none-2", "none-3"}) {
		t.Errorf("admitted on %q, no state said for %q", admitted, missing)
	}
	if want := []string{"", "1", "2"}; !slices.Equal(continues, want) {
		t.Errorf("pages asked %q, want %q", continues, want)
	}
}

// A fleet read starts the kubelet once for the nodes whose start reads the same (the same
// files, machine, config and kubelet), and each node's answer is the one its own start gives:
// two nodes publishing admit-node's state share a start, a third with other checkpoints
// (kubelet-root's) does not, and each answers as without the memo.
func TestPublishedFleetSharesStarts(t *testing.T) {
	other := admitNodeState(t, "other")
	snap, err := local.Read(filepath.Join(repo, "examples/kubelet-root"), decode.Paths(), local.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	other.Files, other.Missing = snap.Files, snap.Missing
	states := []*PublishedState{admitNodeState(t, "a"), admitNodeState(t, "b"), other}
	var pods []*corev1.Pod
	for i := range 3 {
		p := guaranteedPod(fmt.Sprintf("p-%d", i), "", "6", "4Gi")
		p.Status = corev1.PodStatus{}
		pods = append(pods, p)
	}
	pr := PublishedRead{MaxAge: time.Hour, Now: time.Now()}
	shared := &Runner{cfg: Config{Published: &PublishedRead{}, Engines: Engines{Admit: &AdmitConfig{Pods: pods}}}, memo: newParseMemo()}
	alone := &Runner{cfg: shared.cfg}
	for round := range 2 {
		for _, s := range states {
			cm := publishedConfigMap(t, s)
			info := &fetch.NodeInfo{Name: s.Node}
			got, _ := shared.publishedNode(cm, info, pr)
			want, _ := alone.publishedNode(cm, info, pr)
			if got.Admit == nil || want.Admit == nil || got.Admit.Err != nil || want.Admit.Err != nil {
				t.Fatalf("%s: no admission: %+v, %+v", s.Node, got.Admit, want.Admit)
			}
			if !reflect.DeepEqual(got.Admit.Result, want.Admit.Result) {
				t.Fatalf("round %d, %s: with the shared start %+v, alone %+v", round, s.Node, got.Admit.Result.Admissions, want.Admit.Result.Admissions)
			}
		}
	}
	if kept := len(shared.memo.starts.parsed); kept != 2 {
		t.Fatalf("%d starts kept for 2 distinct nodes' states, want 2", kept)
	}
}

// A fleet read lists a node's pods only where they decide its answer: a pod the managers refuse
// while every checkpoint owner counts running, and admit once none does. admit-node's state
// holds CPUs 1 and 17 of NUMA node 0 for pod uid-seed-a; once a pod of 16 CPUs fills node 1,
// one of 14 fits on node 0 only without it (restricted topology policy). With its pod
// running the kubelet refuses; with it gone from the API server, or finished, it frees them
// and admits, so the fleet answers as named nodes do. A pod that fits either way, or no way,
// costs no LIST; a forbidden LIST leaves the answer as it was, and says so.
func TestPublishedFleetListsPodsWhereOwnersDecide(t *testing.T) {
	now := time.Now()
	holder := func(node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seed-" + node, Namespace: "default", UID: "uid-seed-a"},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	objs := []runtime.Object{holder("running", corev1.PodRunning), holder("finished", corev1.PodSucceeded)}
	nodes := []string{"gone", "running", "finished"}
	for _, name := range nodes {
		s := admitNodeState(t, name)
		s.ReadAt = now
		objs = append(objs, publishedConfigMap(t, s), readyNode(name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}))
	}
	fleet := func(t *testing.T, client *fake.Clientset, cpus string) (admitted map[string]bool, podLists int, notes []string) {
		t.Helper()
		var pods []*corev1.Pod
		for i, cpus := range []string{"16", cpus} {
			pod := guaranteedPod(fmt.Sprintf("pod-%d", i), "", cpus, "4Gi")
			pod.Status = corev1.PodStatus{}
			pods = append(pods, pod)
		}
		r, err := New(t.Context(), Config{AllNodes: true, Client: client, Published: &PublishedRead{Now: now}, Engines: Engines{Admit: &AdmitConfig{Pods: pods}}})
		if err != nil {
			t.Fatal(err)
		}
		client.ClearActions()
		admitted = map[string]bool{}
		for res, err := range r.Results(t.Context()) {
			if err != nil {
				t.Fatal(err)
			}
			if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || len(res.Admit.Admissions) != 2 || !res.Admit.Admissions[0].Admitted {
				t.Fatalf("%s: %v %+v", res.Node, res.Err, res.Admit)
			}
			admitted[res.Node] = res.Admit.Admissions[1].Admitted
			notes = append(notes, res.Admit.Notes...)
		}
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
				podLists++
			}
		}
		return admitted, podLists, notes
	}

	client := fake.NewClientset(objs...)
	admitted, lists, _ := fleet(t, client, "14")
	if want := map[string]bool{"gone": true, "running": false, "finished": true}; !reflect.DeepEqual(admitted, want) || lists != 3 {
		t.Errorf("14 CPUs: admitted %v after %d pod LISTs, want %v after 3", admitted, lists, want)
	}
	for _, cpus := range []string{"6", "18"} {
		if admitted, lists, _ := fleet(t, client, cpus); lists != 0 || admitted["gone"] != (cpus == "6") {
			t.Errorf("%s CPUs: admitted %v after %d pod LISTs, want none listed", cpus, admitted, lists)
		}
	}

	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC"))
	})
	admitted, lists, notes := fleet(t, client, "14")
	if slices.ContainsFunc(nodes, func(n string) bool { return admitted[n] }) || lists != 3 ||
		!slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "its pods could not be listed") }) {
		t.Errorf("pods forbidden: admitted %v after %d pod LISTs, notes %q; want refused, said why", admitted, lists, notes)
	}
}

// A pod after another, both admitted with every checkpoint owner counted running, is refused
// once the owner is gone: the first pod, 14 CPUs, then fits NUMA node 0 (the lower one), which
// the owner's 2 CPUs had kept it from, and takes every CPU the second pod needs beside the only
// node's GPUs (restricted, pod scope). The fleet lists the pods of the nodes where that is so,
// and answers each as its kubelet would: refused where the owner is gone, admitted where it runs.
func TestPublishedFleetListsPodsWhereALaterPodHangsOnOwners(t *testing.T) {
	now := time.Now()
	// Four GPUs, all on NUMA node 0 as their plugin sent them; one held by a pod of no node.
	objs := []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: "default", UID: "uid-seed-a"},
		Spec: corev1.PodSpec{NodeName: "running"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	for _, name := range []string{"gone", "running"} {
		s, node := gpuNodeState(t, name, now)
		objs = append(objs, publishedConfigMap(t, s), node)
	}
	withGPU := gpuPod("gpu", "2", "4Gi")
	wide := guaranteedPod("wide", "", "14", "4Gi")
	client := fake.NewClientset(objs...)
	fleet := func(pods ...*corev1.Pod) (map[string][]bool, int) { return fleetAnswers(t, client, now, pods...) }
	admitted, lists := fleet(wide, withGPU)
	if want := map[string][]bool{"gone": {true, false}, "running": {true, true}}; !reflect.DeepEqual(admitted, want) || lists != 2 {
		t.Errorf("wide then gpu: admitted %v after %d pod LISTs, want %v after 2", admitted, lists, want)
	}
	// The GPU pod alone: admitted whoever runs, no LIST. First of two, it is admitted with none
	// running, so the wide pod after it may hang on which of the two owners (the pinned pod, the
	// GPU's holder) runs: listed.
	if admitted, lists := fleet(withGPU); lists != 0 || !admitted["gone"][0] {
		t.Errorf("gpu alone: admitted %v after %d pod LISTs, want none listed", admitted, lists)
	}
	if admitted, lists := fleet(withGPU, wide); lists != 2 || !reflect.DeepEqual(admitted["gone"], []bool{true, true}) {
		t.Errorf("gpu then wide: admitted %v after %d pod LISTs, want both admitted after 2", admitted, lists)
	}
}

// gpuNodeState is examples/admit-node's state published by node, with four GPUs on NUMA node 0
// as their plugin sent them and gpu-single's device checkpoint (one GPU held by gpuHolder), and
// its Ready node object reporting them.
func gpuNodeState(t *testing.T, node string, now time.Time) (*PublishedState, *corev1.Node) {
	t.Helper()
	checkpoint, err := os.ReadFile(filepath.Join(repo, "testdata/kubelet/kubelet_internal_checkpoint/v1.37.1/gpu-single.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := admitNodeState(t, node)
	s.ReadAt = now
	s.Sections[machine.PodResourcesHeader] = nodelocal.PodResourcesSection(&machine.PodResources{Allocatable: []machine.PodResourcesDevices{{Resource: "nvidia.com/gpu",
		IDs:       []string{"GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f", "GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a", "GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b", "GPU-4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d"},
		NUMANodes: []int64{0}}}})
	s.Files["device-plugins/kubelet_internal_checkpoint"] = checkpoint
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("4")}
	n := readyNode(node, capacity)
	n.Status.Capacity = capacity
	return s, n
}

// gpuHolder is the pod holding a GPU in gpu-single's device checkpoint.
const gpuHolder = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"

// gpuPod is a Guaranteed pod of one container asking one GPU beside its CPUs and memory.
func gpuPod(name, cpu, memory string) *corev1.Pod {
	p := guaranteedPod(name, "", cpu, memory)
	for _, q := range []corev1.ResourceList{p.Spec.Containers[0].Resources.Requests, p.Spec.Containers[0].Resources.Limits} {
		q["nvidia.com/gpu"] = resource.MustParse("1")
	}
	return p
}

// fleetAnswers is admit --all-nodes --from-published of pods over client's nodes: each node's
// answers, and how many pod LISTs it took.
func fleetAnswers(t *testing.T, client *fake.Clientset, now time.Time, pods ...*corev1.Pod) (admitted map[string][]bool, podLists int) {
	t.Helper()
	for _, p := range pods {
		p.Status = corev1.PodStatus{}
	}
	r, err := New(t.Context(), Config{AllNodes: true, Client: client, Published: &PublishedRead{Now: now}, PodNames: true, Engines: Engines{Admit: &AdmitConfig{Pods: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	admitted = map[string][]bool{}
	for res, err := range r.Results(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || len(res.Admit.Admissions) != len(pods) {
			t.Fatalf("%s: %v %+v", res.Node, res.Err, res.Admit)
		}
		for _, a := range res.Admit.Admissions {
			admitted[res.Node] = append(admitted[res.Node], a.Admitted)
		}
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			podLists++
		}
	}
	return admitted, podLists
}

// Owners gone in part: two owners pin 3 and 2 of NUMA node 0's 7 free cores (core 0 is
// reserved); the GPUs are all on node 0, the 3-core owner holds one. An 8-CPU pod lands on node
// 0 wherever 4 of its cores are free: with neither owner running (7 free, 3 left after it) or
// only the 3-core one gone (5, 1 left), but not with both running (2 free: node 1). A GPU pod
// of 2 CPUs after it fits node 0 in those three cases, and is refused where only the 2-core
// owner is gone: 4 free, all taken. The two replays (every owner running, none) admit it; only
// the node's pods tell. A node of one owner (2 cores) has no case between them: not listed.
func TestPublishedFleetListsPodsWhereOwnersGoneInPartDecide(t *testing.T) {
	now := time.Now()
	two := map[string]map[string]string{gpuHolder: {"cuda": "2-4,18-20"}, "uid-two": {"app": "5-6,21-22"}}
	var objs []runtime.Object
	for node, state := range map[string]struct {
		shared  string
		owners  map[string]map[string]string
		running []string
	}{
		"both":      {"1,7-15,17,23-31", two, []string{gpuHolder, "uid-two"}},
		"two-gone":  {"1,7-15,17,23-31", two, []string{gpuHolder}},
		"one-owner": {"1-4,7-15,17-20,23-31", map[string]map[string]string{gpuHolder: {"cuda": "5-6,21-22"}}, []string{gpuHolder}},
	} {
		s, n := gpuNodeState(t, node, now)
		s.Files["cpu_manager_state"] = cpuCheckpoint(t, state.shared, state.owners)
		delete(s.Files, "memory_manager_state")
		objs = append(objs, publishedConfigMap(t, s), n)
		for _, uid := range state.running {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + uid, Namespace: "default", UID: types.UID(uid)},
				Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	client := fake.NewClientset(objs...)
	admitted, lists := fleetAnswers(t, client, now, guaranteedPod("eight", "", "8", "1Gi"), gpuPod("gpu", "2", "1Gi"))
	// One owner: the two replays are every case, no LIST; two: listed.
	if want := map[string][]bool{"both": {true, true}, "two-gone": {true, false}, "one-owner": {true, true}}; !reflect.DeepEqual(admitted, want) || lists != 2 {
		t.Errorf("admitted %v after %d pod LISTs, want %v after 2", admitted, lists, want)
	}
}
