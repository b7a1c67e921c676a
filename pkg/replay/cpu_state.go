package replay

import "k8s.io/utils/cpuset"

// The CPU manager's in-memory state (cpumanager/state/state_mem.go).

// cpuState is the CPU manager's state: the checkpoint as restored, then as allocations change it.
type cpuState struct {
	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet
	podEntries  map[string]cpuset.CPUSet
}

func (s *cpuState) get(pod, ctr string) (cpuset.CPUSet, bool) {
	set, ok := s.assignments[pod][ctr]
	return set, ok
}

func (s *cpuState) set(pod, ctr string, set cpuset.CPUSet) {
	if s.assignments[pod] == nil {
		s.assignments[pod] = map[string]cpuset.CPUSet{}
	}
	s.assignments[pod][ctr] = set
}

func (s *cpuState) delete(pod, ctr string) {
	delete(s.assignments[pod], ctr)
	if len(s.assignments[pod]) == 0 {
		delete(s.assignments, pod)
	}
}
