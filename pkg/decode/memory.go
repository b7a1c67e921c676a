package decode

import (
	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/memstate"
)

var (
	memV1Layout = &layout{
		New: func() any {
			return &state.MemoryManagerCheckpointV1{MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{}}
		},
		Model: func(v, _ any) any {
			cp := v.(*state.MemoryManagerCheckpointV1)
			return memoryModel(cp.PolicyName, cp.MachineState, cp.Entries, nil)
		},
	}
	memV2Layout = &layout{
		New: func() any {
			return &state.MemoryManagerCheckpointV2{MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{},
				PodEntries: state.PodMemoryAssignments{}}
		},
		Model: func(v, _ any) any {
			cp := v.(*state.MemoryManagerCheckpointV2)
			return memoryModel(cp.PolicyName, cp.MachineState, cp.Entries, cp.PodEntries)
		},
	}
	memV3Layout = &layout{
		New: func() any {
			return &state.MemoryManagerCheckpoint{MemoryManagerCheckpointV1: state.MemoryManagerCheckpointV1{
				MachineState: state.NUMANodeMap{}, Entries: state.ContainerMemoryAssignments{}}}
		},
		Payload: func(v any) (any, error) {
			data := &state.MemoryManagerCheckpointData{}
			return data, unmarshalPayload(v.(*state.MemoryManagerCheckpoint).Data, data)
		},
		PayloadError: "failed to deserialize memory manager checkpoint data: %w",
		Model: func(_, payload any) any {
			d := payload.(*state.MemoryManagerCheckpointData)
			return memoryModel(d.PolicyName, d.MachineState, d.Entries, d.PodEntries)
		},
	}
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
