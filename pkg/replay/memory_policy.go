package replay

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	v1 "k8s.io/api/core/v1"
)

// memoryPolicy is memorymanager.Policy: None or Static.
type memoryPolicy interface {
	GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, c *v1.Container) error
	removeStaleState(active map[string]map[string]bool)
	MemoryBlocks(podUID, container string) []decode.MemoryBlock
	AllocatePod(pod *v1.Pod) error
}
