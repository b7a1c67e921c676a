package admit

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
