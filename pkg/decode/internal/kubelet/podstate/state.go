// Package state mirrors pkg/kubelet/status/state (pod_status_manager_state): the ps-v1 layout of
// kubelet 1.27-1.31, whose checksum is fnv32a over the spew text (resource.Quantity internals
// included), and the ps-v2 layout of kubelet 1.32, a JSON document in "data" with
// fnv32a("(string)"+data).
package state

//lint:file-ignore SA1019 the kubelet of 1.27-1.31 hashed v1.PodResizeStatus by name: the mirror must keep that type

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// PodResourceAllocationCheckpoint is the ps-v1 file (1.27-1.31): the allocated requests of each
// container and the last resize status of each pod.
type PodResourceAllocationCheckpoint struct {
	AllocationEntries   map[string]map[string]v1.ResourceList `json:"allocationEntries,omitempty"`
	ResizeStatusEntries map[string]v1.PodResizeStatus         `json:"resizeStatusEntries,omitempty"`
	Checksum            checksum.Checksum                     `json:"checksum"`
}

// NewPodResourceAllocationCheckpoint is what the kubelet decodes into: maps made by make, so an
// absent key hashes as "map[]".
func NewPodResourceAllocationCheckpoint() *PodResourceAllocationCheckpoint {
	return &PodResourceAllocationCheckpoint{
		AllocationEntries:   map[string]map[string]v1.ResourceList{},
		ResizeStatusEntries: map[string]v1.PodResizeStatus{},
	}
}

// Checkpoint is the ps-v2 file (1.32).
type Checkpoint struct {
	Data     string            `json:"data"`
	Checksum checksum.Checksum `json:"checksum"`
}

// PodResourceAllocationInfo is the document inside Data (1.32): resize status is no longer kept.
type PodResourceAllocationInfo struct {
	AllocationEntries map[string]map[string]v1.ResourceRequirements `json:"allocationEntries,omitempty"`
}
