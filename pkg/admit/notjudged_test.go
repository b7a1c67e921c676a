package admit

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// TestNotJudgedOnDeviceVectors runs every case of every device set as on a node whose device
// plugins are not known (Input.Devices nil): no pod asking for devices may be admitted, and
// every pod judged, admitted or refused, must be answered exactly as the real kubelet answered
// it (its CPUs too when admitted). A pod refused with TopologyAffinityError before any device
// could be allocated is judged (refusedBeforeAnyDevice); the sets must hold such pods, or the
// exception goes untested.
func TestNotJudgedOnDeviceVectors(t *testing.T) {
	var onceWrongYes, devicePods, judgedAdmitted, judgedRefused, notJudged, afterNotJudged, sets int
	for _, set := range admissionSets(t) {
		if !deviceSet(set.Name) {
			continue
		}
		sets++
		kubelet := set.MetaString("kubelet")
		for _, c := range set.Cases {
			var want expectedCase
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatalf("%s %s: %v", set.Name, c.Name, err)
			}
			in := caseInput(t, c, kubelet, true)
			in.Devices = nil
			got, err := Predict(in)
			if err != nil {
				t.Errorf("%s %s: %v", set.Name, c.Name, err)
				continue
			}
			if !want.Starts {
				continue
			}
			if len(got.Admissions) < len(want.Pods) {
				t.Errorf("%s %s: %d admissions, want %d", set.Name, c.Name, len(got.Admissions), len(want.Pods))
				continue
			}
			for i, w := range want.Pods {
				a, pod := got.Admissions[i], in.Pods[i]
				name := set.Name + " " + c.Name + " pod " + w.Pod
				asks, _ := unjudgedDevices(pod, in)
				if len(asks) > 0 {
					devicePods++
					if a.Admitted || a.Verdict == VerdictAdmitted {
						t.Errorf("%s: asks for devices not replayed, answered admitted", name)
					}
				}
				switch a.Verdict {
				case VerdictNotJudged:
					if a.Admitted || len(a.NotJudged) == 0 || a.Reason != "" || len(a.Containers) != 0 {
						t.Errorf("%s: not judged, but admitted=%v reasons=%q reason=%q containers=%d", name, a.Admitted, a.NotJudged, a.Reason, len(a.Containers))
					}
					if len(asks) > 0 {
						notJudged++
						// Once answered "yes": the replay without the devices admits it, the kubelet does not.
						if !w.Admit && len(a.Why) > 0 && strings.HasPrefix(a.Why[0], "replayed without its devices: admitted") {
							onceWrongYes++
						}
					}
					if slices.ContainsFunc(a.NotJudged, func(r string) bool { return strings.HasPrefix(r, "after pod ") }) {
						afterNotJudged++
					}
					continue
				case VerdictAdmitted, VerdictRefused:
				default:
					t.Errorf("%s: verdict %q", name, a.Verdict)
					continue
				}
				if a.Hangs != w.Hangs {
					t.Errorf("%s: judged hangs=%v, the kubelet's %v", name, a.Hangs, w.Hangs)
					continue
				}
				if w.Hangs {
					continue
				}
				if a.Admitted != w.Admit || a.Reason != w.Reason || a.Message != w.Message || a.Admitted != (a.Verdict == VerdictAdmitted) {
					t.Errorf("%s: judged %s admitted=%v %s %q, the kubelet: admitted=%v %s %q", name, a.Verdict, a.Admitted, a.Reason, a.Message, w.Admit, w.Reason, w.Message)
					continue
				}
				for _, ctr := range a.Containers {
					if wc := w.Containers[ctr.Name]; ctr.CPUs != wc.CPUs {
						t.Errorf("%s container %s: judged CPUs %q, the kubelet's %q", name, ctr.Name, ctr.CPUs, wc.CPUs)
					}
				}
				if len(asks) == 0 {
					continue
				}
				if a.Admitted {
					judgedAdmitted++
				} else {
					judgedRefused++
				}
			}
		}
	}
	t.Logf("device sets without their devices: %d sets, %d pods asking for devices: %d judged (%d refused before any device, %d admitted), %d not judged; %d pods not judged (also) because one before them is not; %d not judged that the replay without devices admits and the kubelet refuses",
		sets, devicePods, judgedAdmitted+judgedRefused, judgedRefused, judgedAdmitted, notJudged, afterNotJudged, onceWrongYes)
	if sets == 0 || devicePods == 0 {
		t.Fatal("no device set, or no pod asking for devices, among the admission vectors")
	}
	if judgedAdmitted != 0 {
		t.Errorf("%d pods asking for devices not replayed judged admitted", judgedAdmitted)
	}
	if judgedRefused == 0 {
		t.Error("no pod asking for devices judged refused before any device: the exception is not exercised")
	}
	if afterNotJudged == 0 {
		t.Error("no pod after one not judged among the device sets: the rule is not exercised")
	}
}

// The exception, container by container: without its devices, a pod refused with
// TopologyAffinityError is judged refused only when no device could be allocated before the
// refusing container's merge (pod scope: never; container scope: the refusing container is at or
// before the first one asking for a device not replayed). Any other refusal, or an admission,
// leaves it not judged, and the pod after it too.
func TestRefusedBeforeAnyDevice(t *testing.T) {
	ctr := func(name, cpu string, extra ...v1.ResourceName) v1.Container {
		res := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("256Mi")}
		for _, e := range extra {
			res[e] = resource.MustParse("1")
		}
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: res, Limits: res}}
	}
	pod := func(name string, ctrs ...v1.Container) *v1.Pod {
		p := &v1.Pod{}
		p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
		p.Spec.Containers = ctrs
		return p
	}
	// node8 under single-numa-node: 6 exclusive CPUs fit on no NUMA node, 2 do.
	gpu, big := ctr("gpu", "2", "nvidia.com/gpu"), ctr("big", "6")
	for _, tc := range []struct {
		name, scope string
		pod         *v1.Pod
		verdict     string
	}{
		{"refusing container before the device", "container", pod("p", big, gpu), VerdictRefused},
		{"refusing container is the device's", "container", pod("p", ctr("both", "6", "nvidia.com/gpu")), VerdictRefused},
		{"device container allocated first", "container", pod("p", gpu, big), VerdictNotJudged},
		{"pod scope merges first", "pod", pod("p", gpu, big), VerdictRefused},
		{"admitted without its devices", "pod", pod("p", gpu), VerdictNotJudged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := node8(t, `{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,4","topologyManagerPolicy":"single-numa-node","topologyManagerScope":"`+tc.scope+`"}`)
			in.DevicesNotReplayed = "give --devices FILE"
			in.Pods = []*v1.Pod{tc.pod, pod("next", ctr("small", "1"))}
			res, err := Predict(in)
			if err != nil {
				t.Fatal(err)
			}
			a, next := res.Admissions[0], res.Admissions[1]
			if a.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %+v", a.Verdict, tc.verdict, a)
			}
			switch tc.verdict {
			case VerdictRefused:
				if a.Admitted || a.Reason != ReasonTopologyAffinity || a.Message != "Resources cannot be allocated with Topology locality" ||
					!strings.Contains(strings.Join(a.Why, "\n"), "nvidia.com/gpu devices were not replayed") {
					t.Errorf("refused: %+v", a)
				}
				if next.Verdict != VerdictAdmitted {
					t.Errorf("the pod after a refusal proven: %+v", next)
				}
			case VerdictNotJudged:
				if a.Admitted || len(a.NotJudged) != 1 || a.NotJudged[0] != "devices: device plugin resource nvidia.com/gpu: give --devices FILE" {
					t.Errorf("not judged: %+v", a)
				}
				if next.Verdict != VerdictNotJudged || next.Admitted || len(next.NotJudged) != 1 || !strings.HasPrefix(next.NotJudged[0], "after pod default/p,") ||
					len(next.Why) != 1 || !strings.HasPrefix(next.Why[0], "replayed after the pods before it") {
					t.Errorf("the pod after: %+v", next)
				}
			}
		})
	}
}

// A DRA-backed extended resource (the pod's status.extendedResourceClaimStatus maps it) is not
// the device manager's even where the device manager is replayed: the pod is not judged, and
// says DRA serves it; the same request with no such mapping is the device manager's.
func TestDRABackedExtendedResourceNotJudged(t *testing.T) {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi"), "nvidia.com/gpu": resource.MustParse("1")}
	gpuPod := func(mapped bool) *v1.Pod {
		p := &v1.Pod{}
		p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
		p.Spec.Containers = []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{Requests: res, Limits: res}}}
		if mapped {
			p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended-resources-x",
				RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "train", ResourceName: "nvidia.com/gpu", RequestName: "container-0-request-0"}}}
		}
		return p
	}
	for _, mapped := range []bool{true, false} {
		in := node8(t, `{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,4"}`)
		in.Devices = &replay.DeviceInput{}
		in.Pods = []*v1.Pod{gpuPod(mapped)}
		got, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		a := got.Admissions[0]
		draReason := len(a.NotJudged) == 1 && strings.HasPrefix(a.NotJudged[0], "dra: extended resource nvidia.com/gpu: served by DRA") &&
			strings.Contains(a.NotJudged[0], "claim p-extended-resources-x")
		if mapped != (a.Verdict == VerdictNotJudged && draReason) || a.Admitted && mapped {
			t.Errorf("mapped=%v: %+v", mapped, a)
		}
	}
}

// A pod not created yet (no status): a DeviceClass naming the extended resource
// (extendedResourceName) makes it DRA's on a node where no device plugin serves it, and only
// there; where a device plugin registered it (its devices, or the node's allocatable), it stays
// the device manager's.
func TestDeviceClassExtendedResourceNotJudged(t *testing.T) {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi"), "example.com/gpu": resource.MustParse("1")}
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-p"
	pod.Spec.Containers = []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{Requests: res, Limits: res}}}
	for _, tc := range []struct {
		name      string
		classes   map[string]string
		plugin    bool
		allocated string
		notKnown  string
		dra       bool
	}{
		{name: "a class names it, no plugin", classes: map[string]string{"example.com/gpu": "gpu.example.com"}, dra: true},
		{name: "a class names it, the node's allocatable lists none", classes: map[string]string{"example.com/gpu": "gpu.example.com"}, allocated: "0", dra: true},
		{name: "a class names it, a plugin registered it", classes: map[string]string{"example.com/gpu": "gpu.example.com"}, plugin: true},
		{name: "a class names it, the node's allocatable lists it", classes: map[string]string{"example.com/gpu": "gpu.example.com"}, allocated: "2"},
		{name: "no class names it", classes: map[string]string{"other.com/fpga": "fpga"}},
		{name: "the classes not known, no plugin", notKnown: "not listed", dra: true},
		{name: "the classes not known, a plugin registered it", notKnown: "not listed", plugin: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := node8(t, `{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,4"}`)
			in.Devices = &replay.DeviceInput{}
			if tc.plugin {
				in.Devices.Plugins = map[string][]replay.Device{"example.com/gpu": {{ID: "g0", Health: "Healthy"}}}
			}
			if tc.allocated != "" {
				in.Node = &NodeResources{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("8Gi"),
					v1.ResourcePods: resource.MustParse("110"), "example.com/gpu": resource.MustParse(tc.allocated)}}
			}
			in.DRAExtendedResources, in.DRAExtendedNotKnown = tc.classes, tc.notKnown
			in.Pods = []*v1.Pod{pod}
			got, err := Predict(in)
			if err != nil {
				t.Fatal(err)
			}
			a := got.Admissions[0]
			want := "dra: extended resource example.com/gpu: served by DRA on this node (DeviceClass gpu.example.com names it"
			if tc.notKnown != "" {
				want = "dra: extended resource example.com/gpu: no device plugin serves it on this node, and DRA may: not listed"
			}
			dra := a.Verdict == VerdictNotJudged && len(a.NotJudged) == 1 && strings.HasPrefix(a.NotJudged[0], want)
			if dra != tc.dra || a.Admitted && tc.dra {
				t.Errorf("%+v", a)
			}
		})
	}
}
