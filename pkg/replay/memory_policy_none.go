package replay

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	v1 "k8s.io/api/core/v1"
)

// memoryNonePolicy is policy_none.go: no hints, no allocation, no state.
type memoryNonePolicy struct{}

func (memoryNonePolicy) GetTopologyHints(*v1.Pod, *v1.Container) map[string][]TopologyHint {
	return nil
}

func (memoryNonePolicy) GetPodTopologyHints(*v1.Pod) map[string][]TopologyHint { return nil }

func (memoryNonePolicy) Allocate(*v1.Pod, *v1.Container) error { return nil }

func (memoryNonePolicy) removeStaleState(map[string]map[string]bool) {}

func (memoryNonePolicy) MemoryBlocks(string, string) []decode.MemoryBlock { return nil }

func (memoryNonePolicy) AllocatePod(*v1.Pod) error { return nil }
