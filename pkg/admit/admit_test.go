package admit

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// node8 is 1 socket, 2 NUMA nodes, 4 cores of 2 threads (siblings c, c+4), no checkpoint.
func node8(t *testing.T, cfg string) Input {
	t.Helper()
	m, err := machine.Parse([]byte(`{"schema":"statevec/machine/v1","cpus":[
		{"id":0,"core":0,"numa":0},{"id":1,"core":1,"numa":0},{"id":2,"core":2,"numa":1},{"id":3,"core":3,"numa":1},
		{"id":4,"core":0,"numa":0},{"id":5,"core":1,"numa":0},{"id":6,"core":2,"numa":1},{"id":7,"core":3,"numa":1}],
		"numa":[{"id":0,"memory":8589934592},{"id":1,"memory":8589934592}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := replay.ParseKubeletConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return Input{Machine: m, Config: c, Kubelet: kubelet(t, "v1.37.1")}
}

func kubelet(tb testing.TB, version string) decode.Kubelet {
	tb.Helper()
	k, err := decode.ParseKubelet(version, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func guaranteed(name, cpu, memory string, extra ...v1.ResourceName) *v1.Pod {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	for _, e := range extra {
		res[e] = resource.MustParse("1")
	}
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: res, Limits: res}}}
	return p
}

const static = `{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,4","cpuManagerPolicyOptions":{"full-pcpus-only":"true"},
	"topologyManagerPolicy":"single-numa-node"}`

func TestPredictStacksAndDropsRejected(t *testing.T) {
	in := node8(t, static)
	// a takes NUMA node 1's cores; b does not fit on one node any more; c fits in node 0's
	// last core once b's (absent) allocation is gone.
	in.Pods = []*v1.Pod{guaranteed("a", "4", "1Gi"), guaranteed("b", "4", "1Gi"), guaranteed("c", "2", "1Gi")}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.KubeletStart.Starts || res.AllocatableCPUs != "1-3,5-7" {
		t.Fatalf("start: %+v, allocatable %q", res.KubeletStart, res.AllocatableCPUs)
	}
	got := []string{}
	for _, a := range res.Admissions {
		s := a.Pod + ":" + a.Reason
		for _, c := range a.Containers {
			s += " " + c.Name + "=" + c.CPUs
		}
		got = append(got, s)
	}
	want := []string{"a: app=2-3,6-7", "b:TopologyAffinityError", "c: app=1,5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %v, want %v", got, want)
	}
	if b := res.Admissions[1]; b.Message != "Resources cannot be allocated with Topology locality" || len(b.Why) == 0 ||
		!strings.Contains(strings.Join(b.Why, "\n"), "topologyManagerPolicy single-numa-node") {
		t.Errorf("b: %q why %q", b.Message, b.Why)
	}
	if n, err := LargestCPURequest(in, in.Pods[1]); err != nil || n != 4 {
		t.Errorf("largest request on the empty node: %d (%v), want 4 (one NUMA node's CPUs, whole cores)", n, err)
	}
}

func TestPredictNoStartNoAdmission(t *testing.T) {
	in := node8(t, `{"cpuManagerPolicy":"static"}`) // no CPU reserved: the static policy refuses
	in.Pods = []*v1.Pod{guaranteed("a", "1", "1Gi")}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.KubeletStart.Starts || res.KubeletStart.Phase != replay.PhaseCPUNew || len(res.Admissions) != 0 {
		t.Errorf("got %+v with %d admissions", res.KubeletStart, len(res.Admissions))
	}
}

// The node-resource predicate runs after the resource managers, in the kubelet's words.
func TestNodeResourcesPredicate(t *testing.T) {
	in := node8(t, `{}`)
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi"),
		v1.ResourcePods: resource.MustParse("2"), "hugepages-2Mi": resource.MustParse("0")}
	in.Node = &NodeResources{Allocatable: alloc, Pods: []*v1.Pod{guaranteed("running", "6", "1Gi")}}
	huge := guaranteed("huge", "1", "1Gi")
	huge.Spec.Containers[0].Resources.Requests["hugepages-2Mi"] = resource.MustParse("2Mi")
	huge.Spec.Containers[0].Resources.Limits["hugepages-2Mi"] = resource.MustParse("2Mi")
	in.Pods = []*v1.Pod{guaranteed("big", "3", "1Gi"), huge, guaranteed("fits", "2", "1Gi"), guaranteed("fourth", "100m", "1Mi"),
		guaranteed("device", "100m", "1Mi", "example.com/gpu")}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ reason, message string }{
		{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 6000, capacity: 8000"},
		{"OutOfhugepages-2Mi", "Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"},
		{"", ""},
		{"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
	}
	for i, w := range want {
		a := res.Admissions[i]
		if a.Reason != w.reason || a.Message != w.message {
			t.Errorf("%s: got %s %q, want %s %q", a.Pod, a.Reason, a.Message, w.reason, w.message)
		}
		if w.reason != "" && a.Handler != HandlerNodeResources {
			t.Errorf("%s: handler %q", a.Pod, a.Handler)
		}
		// The pod's status says it as the 1.37 kubelet's rejectPod does.
		if wantStatus := map[bool]string{true: "Pod was rejected: " + w.message}[w.reason != ""]; a.StatusMessage != wantStatus {
			t.Errorf("%s: status message %q, want %q", a.Pod, a.StatusMessage, wantStatus)
		}
	}
	// Without the devices the pod asking for one is not judged: the device manager's own checks
	// come before the predicate's. What the replay without them said is kept as a note.
	dev := res.Admissions[4]
	if u := dev.Unreplayed; len(u) != 1 || !strings.HasPrefix(u[0], "devices: device plugin resource example.com/gpu") {
		t.Errorf("device pod: unreplayed %q", u)
	}
	if dev.Verdict != VerdictNotJudged || dev.Admitted || dev.Reason != "" || len(dev.NotJudged) != 1 || !strings.Contains(dev.NotJudged[0], "example.com/gpu") ||
		len(dev.Why) != 1 || !strings.Contains(dev.Why[0], "replayed without its devices: refused, OutOfpods") {
		t.Errorf("device pod: %+v", dev)
	}
	if strings.Join(res.Replayed, ",") != "cpu,memory" || strings.Join(res.NotReplayed, ",") != "devices,dra" {
		t.Errorf("providers %v / %v", res.Replayed, res.NotReplayed)
	}
}

// Pod-level resources (PodLevelResourceManagers, pod scope): one CPU set and one memory
// allocation for the pod; the Guaranteed-equivalent container gets exclusive CPUs from it, the
// other one the rest (the pod's shared pool).
func TestPodLevelResources(t *testing.T) {
	in := node8(t, `{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,4","memoryManagerPolicy":"Static",
		"reservedMemory":[{"numaNode":0,"limits":{"memory":"100Mi"}}],"topologyManagerPolicy":"best-effort","topologyManagerScope":"pod",
		"featureGates":{"PodLevelResourceManagers":true}}`)
	p := guaranteed("plr", "2", "1Gi")
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side"})
	podRes := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("2Gi")}
	p.Spec.Resources = &v1.ResourceRequirements{Requests: podRes, Limits: podRes}
	in.Pods = []*v1.Pod{p}
	res, err := Predict(in)
	if err != nil || !res.KubeletStart.Starts {
		t.Fatal(err, res.KubeletStart)
	}
	a := res.Admissions[0]
	if !a.Admitted || a.PodCPUs != "2-3,6-7" {
		t.Fatalf("got admitted=%v %s %q pod CPUs %q", a.Admitted, a.Reason, a.Message, a.PodCPUs)
	}
	got := map[string]string{}
	for _, c := range a.Containers {
		got[c.Name] = c.CPUs + " " + blocksText(c.MemoryBlocks)
	}
	if got["app"] != "2,6 memory=1073741824@[1]" || got["side"] != "3,7 memory=1073741824@[1]" {
		t.Errorf("containers %v", got)
	}
}

func blocksText(b []decode.MemoryBlock) string {
	var parts []string
	for _, x := range b {
		parts = append(parts, fmt.Sprintf("%s=%d@%v", x.Type, x.Size, x.NUMAAffinity))
	}
	return strings.Join(parts, ",")
}

// A resource whose devices' NUMA nodes are not known is not judged: the device manager leaves
// it alone (no "unregistered device" refusal made up), the pod says why; the other resources'
// devices are still replayed.
func TestPredictNotJudgedDevices(t *testing.T) {
	in := node8(t, static)
	vf := replay.Device{ID: "0000:af:02.0", Health: replay.DeviceHealthy, Topology: &replay.DeviceTopology{Nodes: []replay.DeviceNUMANode{{ID: 1}}}}
	in.Devices = &replay.DeviceInput{Plugins: map[string][]replay.Device{"intel.com/sriov": {vf}},
		NotJudged: map[string]string{"nvidia.com/gpu": "device ID \"GPU-1\" is not a PCI address"}}
	in.DeviceTopology = map[string]string{"intel.com/sriov": "sysfs", "nvidia.com/gpu": "not known: device ID \"GPU-1\" is not a PCI address"}
	in.Pods = []*v1.Pod{guaranteed("vf", "2", "1Gi", "intel.com/sriov"), guaranteed("gpu", "2", "1Gi", "nvidia.com/gpu"), guaranteed("after", "1", "1Gi")}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	nic, gpu, after := res.Admissions[0], res.Admissions[1], res.Admissions[2]
	if gpu.Admitted || gpu.Verdict != VerdictNotJudged || len(gpu.Containers) != 0 || len(gpu.Unreplayed) != 1 ||
		!strings.Contains(gpu.Unreplayed[0], "nvidia.com/gpu not judged") || len(gpu.NotJudged) != 1 || !strings.Contains(gpu.NotJudged[0], "not a PCI address") ||
		len(gpu.Why) != 1 || !strings.HasPrefix(gpu.Why[0], "replayed without its devices: admitted (app CPUs ") {
		t.Errorf("gpu pod: %+v", gpu)
	}
	if !nic.Admitted || nic.Verdict != VerdictAdmitted || fmt.Sprint(nic.Containers[0].Devices) != "map[intel.com/sriov:[0000:af:02.0]]" || !onNUMA1(nic.Containers[0].CPUs) || len(nic.Unreplayed) != 0 {
		t.Errorf("vf pod: admitted %v, containers %+v, unreplayed %q", nic.Admitted, nic.Containers, nic.Unreplayed)
	}
	// A pod asking for no device, after the one not judged, finds CPUs nobody replayed.
	if after.Admitted || after.Verdict != VerdictNotJudged || len(after.NotJudged) != 1 || !strings.Contains(after.NotJudged[0], "after pod default/gpu") {
		t.Errorf("pod after: %+v", after)
	}
	if res.Replayed[0] != ProviderDevices || res.DeviceTopology["intel.com/sriov"] != "sysfs" {
		t.Errorf("replayed %v, device topology %v", res.Replayed, res.DeviceTopology)
	}
	if _, ok := res.DeviceCapacity["nvidia.com/gpu"]; ok {
		t.Errorf("capacity %v counts the resource not judged", res.DeviceCapacity)
	}
}

// onNUMA1: node8's NUMA node 1 holds CPUs 2-3 and 6-7, where the VF sits.
func onNUMA1(cpus string) bool {
	for _, c := range strings.Split(cpus, ",") {
		if c != "2" && c != "3" && c != "6" && c != "7" {
			return false
		}
	}
	return cpus != ""
}
