// Package state mirrors pkg/kubelet/cm/memorymanager/state (1.37 naming).
package state

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// MemoryTable is one resource's accounting on one NUMA node.
type MemoryTable struct {
	TotalMemSize   uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// NUMANodeState is one NUMA node's state.
type NUMANodeState struct {
	NumberOfAssignments int                              `json:"numberOfAssignments"`
	MemoryMap           map[v1.ResourceName]*MemoryTable `json:"memoryMap"`
	Cells               []int                            `json:"cells"`
}

// NUMANodeMap is NUMA node ID -> state.
type NUMANodeMap map[int]*NUMANodeState

// Block is one memory assignment.
type Block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

// ContainerMemoryAssignments is pod UID -> container -> blocks.
type ContainerMemoryAssignments map[string]map[string][]Block

// PodEntry is one pod-level assignment.
type PodEntry struct {
	MemoryBlocks []Block `json:"memoryBlocks,omitempty"`
}

// PodMemoryAssignments is pod UID -> pod-level assignment.
type PodMemoryAssignments map[string]PodEntry

// MemoryManagerCheckpointV1 is the 1.21-1.36 layout.
type MemoryManagerCheckpointV1 struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	Checksum     checksum.Checksum          `json:"checksum"`
}

// MemoryManagerCheckpointV2 adds pod-level assignments (1.36 with PodLevelResourceManagers).
type MemoryManagerCheckpointV2 struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	PodEntries   PodMemoryAssignments       `json:"podEntries,omitempty"`
	Checksum     checksum.Checksum          `json:"checksum"`
}

// MemoryManagerCheckpoint is the 1.37+ (V3) layout: V1 fields plus the authoritative Data.
type MemoryManagerCheckpoint struct {
	MemoryManagerCheckpointV1 `json:",inline"`
	Data                      string            `json:"data"`
	DataChecksum              checksum.Checksum `json:"dataChecksum"`
}

// MemoryManagerCheckpointData is the document inside Data.
type MemoryManagerCheckpointData struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	PodEntries   PodMemoryAssignments       `json:"podEntries,omitempty"`
}
