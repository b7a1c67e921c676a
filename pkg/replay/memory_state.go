package replay

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The memory manager's machine state (memorymanager/state): one table per NUMA node and
// resource, and the comparison Start makes between the stored state and the expected one.

// machineState is the memory manager's NUMANodeMap, built here from the machine.
type machineState map[int]*decode.NUMANodeMemory

// update is updateExpectedMachineState: a block is taken from each node of its affinity in
// turn, as much as is free there.
func (s machineState) update(blocks []decode.MemoryBlock, pod, ctr string) error {
	for _, b := range blocks {
		size := b.Size
		for _, id := range b.NUMAAffinity {
			node, ok := s[id]
			if !ok {
				return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist", pod, ctr)
			}
			node.NumberOfAssignments++
			node.Cells = b.NUMAAffinity
			t, ok := node.MemoryMap[b.Type]
			if !ok {
				return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource that does not exist", pod, ctr)
			}
			size = reserve(t, size)
		}
	}
	return nil
}

// reserve takes what it can of size from the table's free memory and returns what is left
// for the next node of the block's group.
func reserve(t *decode.MemoryTable, size uint64) uint64 {
	if size == 0 || t.Free == 0 {
		return size
	}
	if t.Free >= size {
		t.Reserved += size
		t.Free -= size
		return 0
	}
	size -= t.Free
	t.Reserved += t.Free
	t.Free = 0
	return size
}

// stateMismatch is the kubelet's error, with what differs (the kubelet only logs that).
type stateMismatch struct{ details []string }

func (*stateMismatch) Error() string {
	return "[memorymanager] the expected machine state is different from the real one"
}

// diffStates says, node by node and field by field, how the stored machine state differs from
// the one the assignments and the machine imply.
func diffStates(stored, expected machineState) []string {
	var out []string
	ids := map[int]bool{}
	for id := range stored {
		ids[id] = true
	}
	for id := range expected {
		ids[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		s, x := stored[id], expected[id]
		switch {
		case s == nil:
			out = append(out, fmt.Sprintf("NUMA node %d: not in the stored state, but the machine has it", id))
			continue
		case x == nil:
			out = append(out, fmt.Sprintf("NUMA node %d: in the stored state, but not on the machine", id))
			continue
		}
		if s.NumberOfAssignments != x.NumberOfAssignments {
			out = append(out, fmt.Sprintf("NUMA node %d: numberOfAssignments %d stored, %d from the assignments", id, s.NumberOfAssignments, x.NumberOfAssignments))
		}
		if !sameCells(s.Cells, x.Cells) {
			out = append(out, fmt.Sprintf("NUMA node %d: cells %v stored, %v from the assignments", id, s.Cells, x.Cells))
		}
		names := map[string]bool{}
		for n := range s.MemoryMap {
			names[n] = true
		}
		for n := range x.MemoryMap {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			st, xt := s.MemoryMap[n], x.MemoryMap[n]
			if st == nil || xt == nil {
				out = append(out, fmt.Sprintf("NUMA node %d %s: stored %v, expected %v", id, n, st != nil, xt != nil))
				continue
			}
			for _, f := range []struct {
				name   string
				sv, xv uint64
			}{{"total", st.Total, xt.Total}, {"systemReserved", st.SystemReserved, xt.SystemReserved}, {"allocatable", st.Allocatable, xt.Allocatable},
				{"reserved", st.Reserved, xt.Reserved}, {"free", st.Free, xt.Free}} {
				if f.sv != f.xv {
					out = append(out, fmt.Sprintf("NUMA node %d %s %s: %d stored, %d expected (%+d)", id, n, f.name, f.sv, f.xv, int64(f.xv)-int64(f.sv)))
				}
			}
		}
	}
	return out
}

// statesEqual is areMachineStatesEqual: before 1.32 every table must be identical; from 1.32
// free and reserved are compared summed over each node's group of cells.
func statesEqual(real, expected machineState, grouped bool) bool {
	if len(real) != len(expected) {
		return false
	}
	for id, n1 := range real {
		n2, ok := expected[id]
		if !ok || n1 == nil || n2 == nil {
			return false
		}
		if n1.NumberOfAssignments != n2.NumberOfAssignments || !sameCells(n1.Cells, n2.Cells) || len(n1.MemoryMap) != len(n2.MemoryMap) {
			return false
		}
		for name, t1 := range n1.MemoryMap {
			t2, ok := n2.MemoryMap[name]
			if !ok || t1 == nil || t2 == nil {
				return false
			}
			if !grouped {
				if *t1 != *t2 {
					return false
				}
				continue
			}
			if t1.Total != t2.Total || t1.SystemReserved != t2.SystemReserved || t1.Allocatable != t2.Allocatable {
				return false
			}
			var free1, res1, free2, res2 uint64
			for _, cell := range n1.Cells {
				// The kubelet dereferences these without checking (it would panic); a missing
				// cell or table can only mean the states differ.
				c1, c2 := real[cell], expected[cell]
				if c1 == nil || c2 == nil || c1.MemoryMap[name] == nil || c2.MemoryMap[name] == nil {
					return false
				}
				free1 += c1.MemoryMap[name].Free
				res1 += c1.MemoryMap[name].Reserved
				free2 += c2.MemoryMap[name].Free
				res2 += c2.MemoryMap[name].Reserved
			}
			if free1 != free2 || res1 != res2 {
				return false
			}
		}
	}
	return true
}

func sameCells(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := append([]int(nil), a...), append([]int(nil), b...)
	sort.Ints(x)
	sort.Ints(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
