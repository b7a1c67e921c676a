package nodestate

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// fakeNodeExec is a debug pod's exec that tars files on stdout and, before its end line,
// prints on stderr what stderr writes for the command asked (the dumps).
func fakeNodeExec(files map[string][]byte, dumps func(cmd []string) string) fetch.ExecFunc {
	return func(_ context.Context, _, _, _ string, cmd []string, stdout, stderr io.Writer) error {
		if dumps != nil {
			_, _ = io.WriteString(stderr, dumps(cmd))
		}
		defer io.WriteString(stderr, fetch.CollectEnd)
		tw := tar.NewWriter(stdout)
		for name, b := range files {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := tw.Write(b); err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

func guaranteedPod(name, node, cpu, memory string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// admitNode is examples/admit-node's machine and kubelet config, and a Ready node "a" of 30 CPUs
// running kubelet v1.37.1.
func admitNode(t *testing.T) (*DoctorConfig, *corev1.Node) {
	t.Helper()
	dir := filepath.Join(repo, "examples/admit-node")
	dc, _, err := LoadDoctorConfig(filepath.Join(dir, "machine.json"), filepath.Join(dir, "kubelet-config.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30"), corev1.ResourceMemory: resource.MustParse("60Gi"), corev1.ResourcePods: resource.MustParse("110")},
	}}
	return dc, node
}

// On a live node, admit runs in the node's worker on the files of the same exec, with the
// node's allocatable and running pods for the predicate: no request more than reading it.
func TestAdmitEngineLive(t *testing.T) {
	dc, node := admitNode(t)
	running := guaranteedPod("running", "a", "26", "1Gi")
	files := map[string][]byte{}
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		var err error
		if files[f], err = os.ReadFile(filepath.Join(repo, "examples/admit-node", f)); err != nil {
			t.Fatal(err)
		}
	}
	exec := fakeNodeExec(files, nil)
	read := func(engines Engines, reactors ...clienttesting.ReactionFunc) (*NodeResult, []string) {
		client := runningPodsClient(node, running)
		for _, react := range reactors {
			client.PrependReactor("list", "pods", react)
		}
		r, err := New(context.Background(), Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Exec: exec, Engines: engines})
		if err != nil {
			t.Fatal(err)
		}
		res := only(t, r)
		// The pod index is listed while the debug pod is deleted: compare the requests, not
		// their order.
		var actions []string
		for _, a := range client.Actions() {
			actions = append(actions, a.GetVerb()+" "+a.GetResource().Resource)
		}
		sort.Strings(actions)
		return res, actions
	}
	_, verifyActions := read(Engines{})
	db := guaranteedPod("db", "", "6", "4Gi")
	db.Status = corev1.PodStatus{}
	res, admitActions := read(Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: []*corev1.Pod{db}}})
	// Admit adds one request: the node's pods, which its node-resource predicate weighs;
	// verify, naming no pod, does without.
	if want := slices.Sorted(slices.Values(append(slices.Clone(verifyActions), "list pods"))); !reflect.DeepEqual(admitActions, want) {
		t.Errorf("admit's requests %q, verify's %q: want verify's and one list of pods", admitActions, verifyActions)
	}
	if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || len(res.Admit.Admissions) != 1 {
		t.Fatalf("admit: %+v", res.Admit)
	}
	// The resource managers admit it; the predicate refuses: 6 CPUs beside the 26 running, of 30.
	a := res.Admit.Admissions[0]
	if a.Admitted || a.Reason != "OutOfcpu" || a.Message != "Node didn't have enough resource: cpu, requested: 6000, used: 26000, capacity: 30000" {
		t.Errorf("db: %v %s %q", a.Admitted, a.Reason, a.Message)
	}
	if !res.Admit.NodeResourcesChecked || strings.Contains(strings.Join(res.Admit.Notes, "\n"), "predicate not replayed") {
		t.Errorf("predicate not run: %q", res.Admit.Notes)
	}
	// Pods that may not be listed are not known: the predicate is not weighed against none (it
	// would admit db beside the 26 CPUs running), and says why.
	forbidden := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC"))
	}
	res, _ = read(Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: []*corev1.Pod{db}}}, forbidden)
	if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || res.Admit.NodeResourcesChecked ||
		!slices.Contains(res.Admit.Notes, "node-resource predicate not replayed: the node's pods could not be listed") {
		t.Errorf("pods not listed: %v %+v", res.Err, res.Admit)
	}
}

// The predicate reads the live node object beyond its allocatable: a NoExecute taint refuses a
// pod that does not tolerate it, and the node's labels decide its node selector, each after the
// resource managers gave it its CPUs (the kubelet's order).
func TestAdmitEngineLiveNodeObject(t *testing.T) {
	dc, node := admitNode(t)
	node.Labels = map[string]string{corev1.LabelOSStable: "linux", "disk": "ssd"}
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	files := map[string][]byte{}
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		var err error
		if files[f], err = os.ReadFile(filepath.Join(repo, "examples/admit-node", f)); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := guaranteedPod(name, "", "2", "1Gi")
		p.Status = corev1.PodStatus{}
		edit(p)
		return p
	}
	tolerates := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoExecute}}
	}
	pods := []*corev1.Pod{
		pod("untolerating", func(*corev1.Pod) {}),
		pod("ssd", func(p *corev1.Pod) { tolerates(p); p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
		pod("hdd", func(p *corev1.Pod) { tolerates(p); p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
	}
	r, err := New(context.Background(), Config{AllNodes: true, Client: runningPodsClient(node), RESTConfig: &rest.Config{}, Exec: fakeNodeExec(files, nil),
		Engines: Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, r)
	if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || len(res.Admit.Admissions) != 3 {
		t.Fatalf("admit: %v %+v", res.Err, res.Admit)
	}
	var got []string
	for _, a := range res.Admit.Admissions {
		got = append(got, fmt.Sprintf("%s %v %s", a.Pod, a.Admitted, a.Reason))
	}
	if want := []string{"untolerating false TaintToleration", "ssd true ", "hdd false NodeAffinity"}; !reflect.DeepEqual(got, want) {
		t.Errorf("admissions %q, want %q", got, want)
	}
	if why := strings.Join(res.Admit.Admissions[0].Why, "\n"); !strings.Contains(why, "NoExecute taint the pod does not tolerate") {
		t.Errorf("untolerating: why %q", why)
	}
}

// A pod asking for an extended resource that a DeviceClass names (extendedResourceName) and no
// device plugin serves on the node is DRA's: not judged, naming the class; the DeviceClasses
// are listed once per run, and only when a pod asks for an extended resource. Where the user may
// not list them, such a pod is not judged either (the kubelet's predicate would drop the request
// and admit it, the device manager ignore it: only DRA would hold its devices).
func TestAdmitDeviceClassExtendedResource(t *testing.T) {
	dc, node := admitNode(t)
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}
	gpu := guaranteedPod("train", "", "2", "1Gi")
	gpu.Status = corev1.PodStatus{}
	gpu.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	gpu.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("1")
	exec := fakeNodeExec(map[string][]byte{}, nil)
	for _, forbidden := range []bool{false, true} {
		client := runningPodsClient(node, class)
		if forbidden {
			client.PrependReactor("list", "deviceclasses", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, "", errors.New("no"))
			})
		}
		r, err := New(context.Background(), Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Exec: exec,
			Engines: Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: []*corev1.Pod{gpu}}}})
		if err != nil {
			t.Fatal(err)
		}
		res := only(t, r)
		if res.Admit == nil || res.Admit.Err != nil || len(res.Admit.Admissions) != 1 {
			t.Fatalf("forbidden=%v: admit %+v", forbidden, res.Admit)
		}
		a := res.Admit.Admissions[0]
		why := strings.Join(a.NotJudged, "\n")
		dra := strings.Contains(why, "served by DRA on this node (DeviceClass gpu.example.com names it")
		unknown := strings.Contains(why, "no device plugin serves it on this node, and DRA may: the DeviceClasses that would say so are not listed (no list on deviceclasses.resource.k8s.io")
		if a.Verdict != "notJudged" || a.Admitted || dra == forbidden || unknown != forbidden {
			t.Errorf("forbidden=%v: %+v, notes %q", forbidden, a, res.Admit.Notes)
		}
		lists := 0
		for _, act := range client.Actions() {
			if act.GetVerb() == "list" && act.GetResource().Resource == "deviceclasses" {
				lists++
			}
		}
		if lists != 1 {
			t.Errorf("forbidden=%v: %d lists of DeviceClasses, want 1", forbidden, lists)
		}
	}
}
