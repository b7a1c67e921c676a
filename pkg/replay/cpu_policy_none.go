package replay

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// nonePolicy is policy_none.go: no hints, no allocation, no cpuset.
type nonePolicy struct{}

func (nonePolicy) validateState(*cpuState) error { return nil }

func (nonePolicy) GetTopologyHints(*v1.Pod, *v1.Container) map[string][]TopologyHint { return nil }

func (nonePolicy) GetPodTopologyHints(*v1.Pod) map[string][]TopologyHint { return nil }

func (nonePolicy) Allocate(*v1.Pod, *v1.Container) error { return nil }

func (nonePolicy) AllocatePod(*v1.Pod) error { return nil }

func (nonePolicy) removeContainer(string, string) {}

func (nonePolicy) allocatableCPUs() cpuset.CPUSet { return cpuset.New() }

func (nonePolicy) availableCPUs() cpuset.CPUSet { return cpuset.New() }

func (nonePolicy) pins() bool { return false }
