package nodestate

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
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
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30")}}})
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
			got, want := shared.publishedNode(cm, info, pr), alone.publishedNode(cm, info, pr)
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
