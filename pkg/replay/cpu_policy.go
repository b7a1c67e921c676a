package replay

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// cpuPolicy is cpumanager.Policy: none or static.
type cpuPolicy interface {
	// validateState is the policy's Start (a fresh state gets its default set here).
	validateState(st *cpuState) error
	GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, c *v1.Container) error
	AllocatePod(pod *v1.Pod) error
	removeContainer(pod, ctr string)
	allocatableCPUs() cpuset.CPUSet
	availableCPUs() cpuset.CPUSet
	// exclusive is whether the policy pins containers (static) or leaves the cpuset alone.
	pins() bool
}
