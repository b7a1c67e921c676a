package admit

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestWhy pins the explanation of a refusal: which policy refused, and the numbers (counts
// of the free CPU sets, free memory only where it was measured, what was not replayed).
func TestWhy(t *testing.T) {
	before := func(mem map[int]NodeFree) *Context {
		return &Context{
			Policy:         Policy{CPU: "static", CPUOptions: []string{"full-pcpus-only=true"}, Memory: "Static", Topology: "restricted", TopologyScope: "pod", TopologyOptions: []string{"prefer-closest-numa-nodes=true"}},
			FreeCPUs:       "1-3,8",
			FreeCPUsByNUMA: map[int]string{1: "8", 0: "1-3"},
			FreeCPUsBySock: map[int]string{0: "1-3,8"},
			FreeCores:      1,
			FreeMemory:     mem,
			Asked:          map[string]string{"app": "cpu 4, memory 1Gi", "init": ""},
		}
	}
	const (
		asked = "asked: app cpu 4, memory 1Gi; init none"
		free  = "free CPUs (shared pool less reserved): 1-3,8 [4]; by NUMA node: 0: 1-3 [3], 1: 8 [1]; by socket: 0: 1-3,8 [4]; free whole cores: 1"
	)
	mem := map[int]NodeFree{1: {"memory": 2 << 30, "hugepages-1Gi": 1 << 30}, 0: {"memory": 0}}
	for _, tc := range []struct {
		name string
		a    Admission
		want []string
	}{
		{"admitted", Admission{Admitted: true, Before: before(nil)}, nil},
		{"no context", Admission{Reason: ReasonSMTAlignment}, nil},
		{"smt", Admission{Reason: ReasonSMTAlignment, Before: before(nil)}, []string{
			"cpuManagerPolicyOptions full-pcpus-only: exclusive CPUs are handed out in whole cores only, and only from cores outside the reserved ones", asked, free}},
		{"topology with memory", Admission{Reason: ReasonTopologyAffinity, Before: before(mem)}, []string{
			"topologyManagerPolicy restricted (scope pod, options prefer-closest-numa-nodes=true): the CPU and memory managers' NUMA hints merge to no affinity this policy admits",
			asked, free, "free memory by NUMA node: 0: memory 0; 1: hugepages-1Gi 1Gi, memory 2Gi"}},
		{"topology without memory", Admission{Reason: ReasonTopologyAffinity, Before: before(map[int]NodeFree{})}, []string{
			"topologyManagerPolicy restricted (scope pod, options prefer-closest-numa-nodes=true): the CPU and memory managers' NUMA hints merge to no affinity this policy admits",
			asked, free}},
		{"not enough cpus, no options, not replayed", Admission{Message: "not enough cpus available to satisfy request: requested=4, available=3",
			Before:     func() *Context { c := before(nil); c.Policy.CPUOptions = nil; c.FreeCPUs = ""; return c }(),
			Unreplayed: []string{"container app asks example.com/gpu", "a DRA claim"}}, []string{
			"cpuManagerPolicy static: more exclusive CPUs asked than the shared pool holds outside the reserved CPUs (or than the chosen NUMA nodes hold)",
			asked, "free CPUs (shared pool less reserved): none [0]; by NUMA node: 0: 1-3 [3], 1: 8 [1]; by socket: 0: 1-3,8 [4]; free whole cores: 1",
			"not replayed: container app asks example.com/gpu; a DRA claim"}},
	} {
		if got := why(&tc.a); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestContainersMarkInitAndSidecar: the result names the kubelet it replayed and tells a
// restartable init container (a sidecar) from a plain one.
func TestContainersMarkInitAndSidecar(t *testing.T) {
	in := node8(t, static)
	p := guaranteed("p", "2", "1Gi")
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{
		{Name: "setup", Resources: p.Spec.Containers[0].Resources},
		{Name: "proxy", RestartPolicy: &always, Resources: p.Spec.Containers[0].Resources},
	}
	in.Pods = []*v1.Pod{p}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kubelet == "" || res.Kubelet != in.Kubelet.String() {
		t.Errorf("kubelet %q, want %q", res.Kubelet, in.Kubelet.String())
	}
	got := map[string][2]bool{}
	for _, c := range res.Admissions[0].Containers {
		got[c.Name] = [2]bool{c.Init, c.Sidecar}
	}
	if want := map[string][2]bool{"setup": {true, false}, "proxy": {true, true}, "app": {false, false}}; !reflect.DeepEqual(got, want) {
		t.Errorf("init, sidecar by container: %v, want %v", got, want)
	}
}
