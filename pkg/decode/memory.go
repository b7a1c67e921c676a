package decode

import (
	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/memstate"
)

var (
	memV1Layout = layoutOf(layoutSpec[state.MemoryManagerCheckpointV1, noData]{
		New: func() *state.MemoryManagerCheckpointV1 {
			return &state.MemoryManagerCheckpointV1{MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{}}
		},
		Model: func(cp *state.MemoryManagerCheckpointV1, _ *noData) any {
			return memoryModel(cp.PolicyName, cp.MachineState, cp.Entries, nil)
		},
	})
	memV2Layout = layoutOf(layoutSpec[state.MemoryManagerCheckpointV2, noData]{
		New: func() *state.MemoryManagerCheckpointV2 {
			return &state.MemoryManagerCheckpointV2{MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{},
				PodEntries: state.PodMemoryAssignments{}}
		},
		Model: func(cp *state.MemoryManagerCheckpointV2, _ *noData) any {
			return memoryModel(cp.PolicyName, cp.MachineState, cp.Entries, cp.PodEntries)
		},
	})
	memV3Layout = layoutOf(layoutSpec[state.MemoryManagerCheckpoint, state.MemoryManagerCheckpointData]{
		New: func() *state.MemoryManagerCheckpoint {
			return &state.MemoryManagerCheckpoint{MemoryManagerCheckpointV1: state.MemoryManagerCheckpointV1{
				MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{}}}
		},
		Data:      func(cp *state.MemoryManagerCheckpoint) string { return cp.Data },
		DataError: "failed to deserialize memory manager checkpoint data: %w",
		OwnData:   func(cp *state.MemoryManagerCheckpoint) bool { return cp.Data != "" || cp.DataChecksum != 0 },
		Model: func(_ *state.MemoryManagerCheckpoint, d *state.MemoryManagerCheckpointData) any {
			return memoryModel(d.PolicyName, d.MachineState, d.Entries, d.PodEntries)
		},
	})
)

func memoryModel(policy string, machine state.NUMANodeMap, entries state.ContainerMemoryAssignments, pods state.PodMemoryAssignments) *MemoryState {
	out := &MemoryState{PolicyName: policy, MachineState: map[int]*NUMANodeMemory{}}
	for id, node := range machine {
		if node == nil {
			continue
		}
		n := &NUMANodeMemory{NumberOfAssignments: node.NumberOfAssignments, Cells: node.Cells, MemoryMap: map[string]*MemoryTable{}}
		for res, t := range node.MemoryMap {
			if t != nil {
				n.MemoryMap[string(res)] = &MemoryTable{Total: t.TotalMemSize, SystemReserved: t.SystemReserved,
					Allocatable: t.Allocatable, Reserved: t.Reserved, Free: t.Free}
			}
		}
		out.MachineState[id] = n
	}
	for pod, containers := range entries {
		for name, blocks := range containers {
			if out.Entries == nil {
				out.Entries = map[string]map[string][]MemoryBlock{}
			}
			if out.Entries[pod] == nil {
				out.Entries[pod] = map[string][]MemoryBlock{}
			}
			out.Entries[pod][name] = memoryBlocks(blocks)
		}
	}
	for pod, e := range pods {
		if out.PodEntries == nil {
			out.PodEntries = map[string][]MemoryBlock{}
		}
		out.PodEntries[pod] = memoryBlocks(e.MemoryBlocks)
	}
	return out
}

func memoryBlocks(in []state.Block) []MemoryBlock {
	out := make([]MemoryBlock, len(in))
	for i, b := range in {
		out[i] = MemoryBlock{NUMAAffinity: b.NUMAAffinity, Type: string(b.Type), Size: b.Size}
	}
	return out
}
