package nodestate

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/k8stopologyawareschedwg/podfingerprint"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// admitNodeState is examples/admit-node published: a real kubelet v1.37.1's files, its machine
// as its sysfs prints it, its kubelet config.
func admitNodeState(t testing.TB, node string) *PublishedState {
	t.Helper()
	dir := filepath.Join(repo, "examples/admit-node")
	dc, _, err := LoadDoctorConfig(filepath.Join(dir, "machine.json"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := local.Read(dir, decode.Paths(), local.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(dir, "kubelet-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &PublishedState{Format: PublishedFormat, Node: node, ReadAt: time.Now().UTC(), KubeletVersion: "v1.37.1", KubeletRootDir: decode.DefaultRootDir,
		KubeletConfig: config, Files: snap.Files, Missing: snap.Missing, Sections: map[string][]byte{machine.SysfsHeader: sysfsDumpOf(dc.Machine)}}
}

func writes(actions []clienttesting.Action) (n int) {
	for _, a := range actions {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

// The publisher writes when the fingerprint changed, and on a refresh; never otherwise. What it
// writes is the ConfigMap consumers read: labelled, annotated, owned by its Node.
func TestPublisherWritesOnChange(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "node-uid"}}
	client := fake.NewClientset(node)
	state := admitNodeState(t, "worker-1")
	p := &Publisher{Client: client, Node: "worker-1", Read: func(context.Context) (*PublishedState, error) {
		c := *state
		c.Files = maps.Clone(state.Files)
		c.ReadAt = time.Now().UTC()
		return &c, nil
	}}
	ctx := t.Context()
	step := func(refresh, wantWrite bool) {
		t.Helper()
		client.ClearActions()
		out, err := p.Publish(ctx, refresh)
		if err != nil {
			t.Fatal(err)
		}
		if out.Wrote != wantWrite || (writes(client.Actions()) > 0) != wantWrite {
			t.Fatalf("refresh=%v: wrote %v (%d writes), want %v", refresh, out.Wrote, writes(client.Actions()), wantWrite)
		}
	}
	step(false, true)  // first
	step(false, false) // nothing changed
	step(false, false)
	step(true, true) // the refresh
	state.Files["cpu_manager_state"] = append([]byte(nil), state.Files["cpu_manager_state"]...)
	state.Files["cpu_manager_state"][len(state.Files["cpu_manager_state"])-2] ^= 1
	step(false, true) // a changed file
	step(false, false)
	if p.Writes() != 3 {
		t.Errorf("%d writes counted, want 3", p.Writes())
	}

	cm, err := client.CoreV1().ConfigMaps(PublishedNamespace).Get(ctx, "worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := PublishedStateOf(cm)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[PublishedLabel] != PublishedLabelValue || cm.Annotations[FingerprintAnnotation] != got.Fingerprint() || cm.Annotations[ReadAtAnnotation] == "" {
		t.Errorf("labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != "node-uid" || refs[0].Name != "worker-1" {
		t.Errorf("owner %+v", refs)
	}
	// The node is read once, for its UID.
	gets := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
			gets++
		}
	}
	if gets != 0 {
		t.Errorf("the node was read again: %d gets since the first publish", gets)
	}
}

// Where the NodeResourceTopology API is served, the publisher applies the node's object when
// the state changed; where it is not, it says so once and writes the ConfigMap alone.
func TestPublisherNodeResourceTopology(t *testing.T) {
	for _, served := range []bool{true, false} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "node-uid"}}
		client := fake.NewClientset(node)
		if served {
			client.Resources = []*metav1.APIResourceList{{GroupVersion: NRTResource.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: NRTResource.Resource, Kind: nrtKind}}}}
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{NRTResource: nrtKind + "List"})
		var applied []*unstructured.Unstructured
		dyn.PrependReactor("patch", NRTResource.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			pa := a.(clienttesting.PatchAction)
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(pa.GetPatch()); err != nil {
				t.Fatal(err)
			}
			applied = append(applied, obj)
			return true, obj, nil
		})
		var logs []string
		state := admitNodeState(t, "worker-1")
		p := &Publisher{Client: client, Dynamic: dyn, Node: "worker-1", Read: func(context.Context) (*PublishedState, error) { return state, nil },
			Logf: func(f string, a ...any) { logs = append(logs, f) }}
		for _, refresh := range []bool{false, true, false} {
			if _, err := p.Publish(t.Context(), refresh); err != nil {
				t.Fatal(err)
			}
		}
		if !served {
			if len(applied) != 0 || len(logs) != 1 || !strings.Contains(logs[0], "is not served") {
				t.Errorf("not served: %d applied, logs %q", len(applied), logs)
			}
			continue
		}
		if len(applied) != 1 {
			t.Fatalf("served: %d applies, want 1 (the refresh changes no content)", len(applied))
		}
		checkAdmitNodeNRT(t, applied[0])
	}
}

// checkAdmitNodeNRT: examples/admit-node's zones. kubeReserved cpu 2 reserves core 0 of socket
// 0 (CPUs 0 and 16, NUMA 0); the pod holds CPUs 1 and 17 (NUMA 0); the memory manager's
// state gives NUMA 0 1 GiB reserved of 100 MiB system-reserved memory.
func checkAdmitNodeNRT(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if obj.GetName() != "worker-1" || obj.GetKind() != nrtKind || obj.GetAPIVersion() != "topology.node.k8s.io/v1alpha2" {
		t.Errorf("object %s %s %s", obj.GetAPIVersion(), obj.GetKind(), obj.GetName())
	}
	zones, _, _ := unstructured.NestedSlice(obj.Object, "zones")
	got := map[string]string{}
	for _, z := range zones {
		zone := z.(map[string]any)
		if zone["type"] != "Node" {
			t.Errorf("zone type %v", zone["type"])
		}
		for _, r := range zone["resources"].([]any) {
			res := r.(map[string]any)
			got[zone["name"].(string)+"/"+res["name"].(string)] = res["capacity"].(string) + " " + res["allocatable"].(string) + " " + res["available"].(string)
		}
	}
	want := map[string]string{
		"node-0/cpu": "16 14 12", "node-1/cpu": "16 16 16",
		"node-0/memory":        "34045165568 30719082496 29645340672",
		"node-1/memory":        "34045165568 30823940096 30823940096",
		"node-0/hugepages-1Gi": "2147483648 2147483648 2147483648", "node-1/hugepages-1Gi": "2147483648 2147483648 2147483648",
		"node-0/hugepages-2Mi": "1073741824 1073741824 1073741824", "node-1/hugepages-2Mi": "1073741824 1073741824 1073741824",
	}
	if !maps.Equal(got, want) {
		t.Errorf("zones %v\nwant %v", got, want)
	}
	attrs, _, _ := unstructured.NestedSlice(obj.Object, "attributes")
	a := map[string]string{}
	for _, x := range attrs {
		m := x.(map[string]any)
		a[m["name"].(string)] = m["value"].(string)
	}
	if a["topologyManagerPolicy"] != "restricted" || a["topologyManagerScope"] != "pod" {
		t.Errorf("attributes %v", a)
	}
	if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "node-uid" {
		t.Errorf("owner %+v", refs)
	}
}

// Run publishes at start, then when the kubelet replaces a checkpoint file (a write to a temp
// file and a rename, as its checkpoint manager does), and not for other files of the root dir.
func TestPublisherRunWatches(t *testing.T) {
	root := t.TempDir()
	src, err := os.ReadFile(filepath.Join(repo, "examples/admit-node/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cpu_manager_state"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	p, stop := runPublisher(t, root, 20*time.Millisecond)
	waitWrites := func(n int64) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for p.Writes() < n {
			select {
			case <-deadline:
				t.Fatalf("%d writes, want %d", p.Writes(), n)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitWrites(1)
	replace := func(name string, data []byte) {
		tmp := filepath.Join(root, ".tmp-"+filepath.Base(name))
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	replace("cpu_manager_state", append(src, ' '))
	waitWrites(2)
	// Another file, and the same content again: no write.
	replace("unrelated", []byte("x"))
	replace("cpu_manager_state", append(src, ' '))
	time.Sleep(200 * time.Millisecond) // ten debounces: a write would have happened
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if p.Writes() != 2 {
		t.Errorf("%d writes, want 2", p.Writes())
	}
}

// Changes that never go still (a file rewritten faster than the debounce) are still published,
// within publishBurstMax debounces of the first.
func TestPublisherRunBurst(t *testing.T) {
	root := t.TempDir()
	cpu := filepath.Join(root, "cpu_manager_state")
	if err := os.WriteFile(cpu, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, stop := runPublisher(t, root, 100*time.Millisecond)
	defer stop()
	for p.Writes() < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	// Rewritten every 20 ms, for up to 30 s: a debounce alone would never fire.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; p.Writes() < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("a burst of changes was never published")
		}
		if err := os.WriteFile(cpu, []byte(fmt.Sprintf(`{"n":%d}`, i)), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The NodeResourceTopology counts the PodResources API's healthy devices per NUMA node less
// those its pods hold, and fingerprints its pods as podfingerprint does (the attribute
// NodeResourceTopologyMatch compares with its own).
func TestNodeResourceTopologyDevices(t *testing.T) {
	s := admitNodeState(t, "worker-1")
	pr := &machine.PodResources{
		Allocatable: []machine.PodResourcesDevices{
			{Resource: "example.com/gpu", IDs: []string{"gpu-0", "gpu-1"}, NUMANodes: []int64{0}},
			{Resource: "example.com/gpu", IDs: []string{"gpu-2"}, NUMANodes: []int64{1}},
			{Resource: "example.com/nic", IDs: []string{"nic-0"}}, // no topology: in no zone
		},
		Pods: []machine.PodResourcesPod{
			{Namespace: "ml", Name: "train", Containers: []machine.PodResourcesContainer{{Name: "app",
				Devices: []machine.PodResourcesDevices{{Resource: "example.com/gpu", IDs: []string{"gpu-1"}, NUMANodes: []int64{0}}}}}},
			{Namespace: "default", Name: "web", Containers: []machine.PodResourcesContainer{{Name: "app"}}},
		},
	}
	s.Sections[machine.PodResourcesHeader] = nodelocal.PodResourcesSection(pr)
	obj, err := PreparePublished(s, nil, nil).NodeResourceTopology()
	if err != nil {
		t.Fatal(err)
	}
	zones, _, _ := unstructured.NestedSlice(obj.Object, "zones")
	got := map[string]string{}
	for _, z := range zones {
		zone := z.(map[string]any)
		for _, r := range zone["resources"].([]any) {
			res := r.(map[string]any)
			if strings.Contains(res["name"].(string), "example.com") {
				got[zone["name"].(string)+"/"+res["name"].(string)] = res["capacity"].(string) + " " + res["allocatable"].(string) + " " + res["available"].(string)
			}
		}
	}
	if want := map[string]string{"node-0/example.com/gpu": "2 2 1", "node-1/example.com/gpu": "1 1 1"}; !maps.Equal(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	fp := podfingerprint.NewFingerprint(2)
	_ = fp.Add("default", "web")
	_ = fp.Add("ml", "train")
	attrs, _, _ := unstructured.NestedSlice(obj.Object, "attributes")
	a := map[string]string{}
	for _, x := range attrs {
		m := x.(map[string]any)
		a[m["name"].(string)] = m["value"].(string)
	}
	if a[podfingerprint.Attribute] != fp.Sign() || a[podfingerprint.AttributeMethod] != podfingerprint.MethodAll || !strings.HasPrefix(fp.Sign(), "pfp0v001") {
		t.Errorf("attributes %v, want fingerprint %s", a, fp.Sign())
	}
	// Costs: the NUMA distances.
	costs, _, _ := unstructured.NestedSlice(zones[0].(map[string]any), "costs")
	if len(costs) != 2 || costs[1].(map[string]any)["name"] != "node-1" || costs[1].(map[string]any)["value"] != int64(21) {
		t.Errorf("costs %v", costs)
	}
}

// runPublisher runs a Publisher of node worker-1 (a fake API server) over the kubelet root dir
// root, with debounce and an hour's refresh, until stop, which returns Run's error.
func runPublisher(t *testing.T, root string, debounce time.Duration) (p *Publisher, stop func() error) {
	t.Helper()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "u"}})
	empty := t.TempDir()
	p = &Publisher{Client: client, Node: "worker-1", Debounce: debounce, Refresh: time.Hour,
		Local: LocalConfig{Paths: nodelocal.Paths{RootDir: root, SysRoot: empty, ProcRoot: empty}, KubeletVersion: "v1.37.1"}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	return p, func() error {
		cancel()
		return <-done
	}
}

// Without a memory manager's state a zone's memory is the machine's, all of it available, and
// its hugepages are named as the kubelet names their resources (the quantity of one page).
func TestNodeResourceTopologyMemoryWithoutState(t *testing.T) {
	node := machine.NUMANode{ID: 1, Memory: 64 << 30, HugePages: []machine.HugePage{
		{PageSizeKiB: 64, NumPages: 8},        // arm64's 64 KiB pages
		{PageSizeKiB: 2048, NumPages: 512},    // 1 GiB of 2 MiB pages
		{PageSizeKiB: 1 << 20, NumPages: 0},   // a size with no pages: not a resource here
		{PageSizeKiB: 16 << 20, NumPages: 2},  // 16 GiB pages (POWER)
		{PageSizeKiB: 3 << 10, NumPages: 100}, // not a power of two: still a whole Mi
	}}
	got := map[string]string{}
	for _, r := range memoryResources(node, nil) {
		res := r.(map[string]any)
		got[res["name"].(string)] = res["capacity"].(string) + " " + res["allocatable"].(string) + " " + res["available"].(string)
	}
	want := map[string]string{
		"memory":         "68719476736 68719476736 68719476736",
		"hugepages-64Ki": "524288 524288 524288",
		"hugepages-2Mi":  "1073741824 1073741824 1073741824",
		"hugepages-16Gi": "34359738368 34359738368 34359738368",
		"hugepages-3Mi":  "314572800 314572800 314572800",
	}
	if !maps.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
}
