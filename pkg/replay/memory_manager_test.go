package replay

import (
	"reflect"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// diffStates words the differences behind the kubelet's one-line "the expected machine state
// is different from the real one": which node, which table, which field, stored against
// expected and by how much.
func TestDiffStates(t *testing.T) {
	table := func(free uint64) *decode.MemoryTable {
		return &decode.MemoryTable{Total: 100, Allocatable: 90, SystemReserved: 10, Reserved: 90 - free, Free: free}
	}
	stored := machineState{
		0: {NumberOfAssignments: 1, Cells: []int{0}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(40)}},
		1: {Cells: []int{1}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(90), "hugepages-2Mi": table(90)}},
		3: {Cells: []int{3}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(90)}},
	}
	expected := machineState{
		0: {NumberOfAssignments: 2, Cells: []int{0, 1}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(30)}},
		1: {Cells: []int{1}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(90), "hugepages-1Gi": table(90)}},
		2: {Cells: []int{2}, MemoryMap: map[string]*decode.MemoryTable{"memory": table(90)}},
	}
	want := []string{
		"NUMA node 0: numberOfAssignments 1 stored, 2 from the assignments",
		"NUMA node 0: cells [0] stored, [0 1] from the assignments",
		"NUMA node 0 memory reserved: 50 stored, 60 expected (+10)",
		"NUMA node 0 memory free: 40 stored, 30 expected (-10)",
		"NUMA node 1 hugepages-1Gi: stored false, expected true",
		"NUMA node 1 hugepages-2Mi: stored true, expected false",
		"NUMA node 2: not in the stored state, but the machine has it",
		"NUMA node 3: in the stored state, but not on the machine",
	}
	if got := diffStates(stored, expected); !reflect.DeepEqual(got, want) {
		t.Errorf("diffStates:\n got %q\nwant %q", got, want)
	}
}
