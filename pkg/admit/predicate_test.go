package admit

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestFitsSkipsUnaskedResources: fitsRequest checks a resource only when the pod asks for it
// (`podRequest.Memory > 0 && ...`), so a node whose pods already use more than its allocatable
// memory (allocatable lowered by a new reservation) still admits a pod asking only CPU.
func TestFitsSkipsUnaskedResources(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("10")}
	running := []*v1.Pod{guaranteed("running", "1", "2Gi")}
	cpuOnly := &v1.Pod{}
	cpuOnly.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}
	if got := fits(cpuOnly, alloc, running); len(got) != 0 {
		t.Errorf("a pod asking only CPU: %+v, want it to fit", got)
	}
	if got := fits(guaranteed("mem", "1", "1Mi"), alloc, running); len(got) != 1 || got[0].name != v1.ResourceMemory {
		t.Errorf("a pod asking 1Mi: %+v, want it out of memory", got)
	}
	if got := fits(&v1.Pod{}, alloc, running); len(got) != 0 {
		t.Errorf("a pod asking nothing: %+v, want it to fit", got)
	}
}

// TestPredicateOtherPods: a running pod admitted anew (admit pod/NAME on its node) is not
// weighed against itself, its host port nor its requests, as the kubelet's OtherPods never
// hold the pod admitted; another pod on the same port is.
func TestPredicateOtherPods(t *testing.T) {
	withPort := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		return p
	}
	web := withPort(guaranteed("web", "2", "1Gi"))
	node := &NodeResources{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods: resource.MustParse("10")}, Object: &v1.Node{}}
	node.Object.Name = "n"
	v137 := decode.Release("1.37")
	noGates := func(string) bool { return false }
	if r := predicateAdmit(web, node, otherPods([]*v1.Pod{web}, web), v137, noGates); !r.Admit {
		t.Errorf("web beside itself: %+v, want admitted", r)
	}
	other := withPort(guaranteed("other", "500m", "1Gi"))
	if r := predicateAdmit(web, node, otherPods([]*v1.Pod{web, other}, web), v137, noGates); r.Admit || r.Reason != ReasonNodePorts {
		t.Errorf("web beside another pod on its host port: %+v, want NodePorts", r)
	}
	// The same pod counted twice would be out of CPU first (2 + 2 of 3).
	if r := predicateAdmit(web, node, []*v1.Pod{web}, v137, noGates); r.Admit || r.Reason != ReasonOutOfCPU {
		t.Errorf("web weighed against itself: %+v, want OutOfcpu", r)
	}
}
