package replay

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The memory manager's policy names (case matters to the kubelet).
const (
	MemoryPolicyNone       = "None"
	MemoryPolicyStatic     = "Static"
	MemoryPolicyBestEffort = "BestEffort"
)

// MemoryManager is memorymanager.manager: its policy (None or Static) holds the state.
type MemoryManager struct {
	Policy string
	policy memoryPolicy
}

// memoryPolicy is memorymanager.Policy: None or Static.
type memoryPolicy interface {
	GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, c *v1.Container) error
	removeStaleState(active map[string]map[string]bool)
	MemoryBlocks(podUID, container string) []decode.MemoryBlock
	AllocatePod(pod *v1.Pod) error
}

// memoryNonePolicy is policy_none.go: no hints, no allocation, no state.
type memoryNonePolicy struct{}

func (memoryNonePolicy) GetTopologyHints(*v1.Pod, *v1.Container) map[string][]TopologyHint {
	return nil
}
func (memoryNonePolicy) GetPodTopologyHints(*v1.Pod) map[string][]TopologyHint { return nil }
func (memoryNonePolicy) Allocate(*v1.Pod, *v1.Container) error                 { return nil }
func (memoryNonePolicy) removeStaleState(map[string]map[string]bool)           {}
func (memoryNonePolicy) MemoryBlocks(string, string) []decode.MemoryBlock      { return nil }
func (memoryNonePolicy) AllocatePod(*v1.Pod) error                             { return nil }

// The manager hands the topology manager's calls to its policy.
func (m *MemoryManager) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	return m.policy.GetTopologyHints(pod, c)
}
func (m *MemoryManager) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	return m.policy.GetPodTopologyHints(pod)
}
func (m *MemoryManager) Allocate(pod *v1.Pod, c *v1.Container) error {
	return m.policy.Allocate(pod, c)
}
func (m *MemoryManager) AllocatePod(pod *v1.Pod) error { return m.policy.AllocatePod(pod) }

// MemoryBlocks is the container's memory assignment, nil when the manager pins nothing.
func (m *MemoryManager) MemoryBlocks(podUID, container string) []decode.MemoryBlock {
	return m.policy.MemoryBlocks(podUID, container)
}

func (m *MemoryManager) removeStaleState(active map[string]map[string]bool) {
	m.policy.removeStaleState(active)
}

// static is the Static policy, nil under None.
func (m *MemoryManager) static() *memoryStaticPolicy {
	p, _ := m.policy.(*memoryStaticPolicy)
	return p
}

// memoryStaticPolicy is policy_static.go: memory pinned to NUMA nodes for Guaranteed pods.
type memoryStaticPolicy struct {
	// systemReserved is NUMA node -> resource -> bytes (convertReserved).
	systemReserved map[int]map[string]uint64
	// machineState and assignments are the state, restored then changed by allocations.
	machineState machineState
	assignments  map[string]map[string][]decode.MemoryBlock
	podEntries   map[string][]decode.MemoryBlock
	affinity     *TopologyManager
	// initContainersReusableMemory: pod -> NUMA mask -> resource -> bytes an init container
	// frees for the containers after it.
	initContainersReusableMemory map[string]map[string]map[string]uint64
	gates                        podGates
	// sidecarAware, violationCheck and skipsNoRequest are the release's rows (releases.go).
	sidecarAware, violationCheck, skipsNoRequest bool
}

// newMemoryManager is memorymanager.NewManager on Linux.
func newMemoryManager(e *env, tm *TopologyManager) (*MemoryManager, error) {
	name := e.cfg.MemoryPolicy()
	switch {
	case name == MemoryPolicyNone:
		return &MemoryManager{Policy: name, policy: memoryNonePolicy{}}, nil
	case name == MemoryPolicyStatic:
		reserved, err := systemReservedMemory(e)
		if err != nil {
			return nil, err
		}
		var total uint64
		for _, node := range reserved {
			total += node[string(v1.ResourceMemory)]
		}
		if total == 0 {
			return nil, errors.New("[memorymanager] you should specify the system reserved memory")
		}
		return &MemoryManager{Policy: name, policy: &memoryStaticPolicy{systemReserved: reserved, affinity: tm, gates: e.podGates,
			sidecarAware: e.release.SidecarAware, violationCheck: e.release.MemoryAffinityViolationCheck,
			skipsNoRequest:               e.release.MemorySkipsNoRequest,
			initContainersReusableMemory: map[string]map[string]map[string]uint64{}}}, nil
	case name == MemoryPolicyBestEffort && e.release.BestEffortMemory:
		return nil, fmt.Errorf("policy %q is not available for platform %q", MemoryPolicyBestEffort, "linux")
	}
	return nil, fmt.Errorf("unknown policy: \"%s\"", name)
}

// systemReservedMemory is getSystemReservedMemory: reservedMemory must name existing NUMA
// nodes and, per memory type, add up to the node-allocatable reservation.
func systemReservedMemory(e *env) (map[int]map[string]uint64, error) {
	nodes := map[int]bool{}
	for _, id := range e.machine.NodeIDs() {
		nodes[id] = true
	}
	totals := map[string]resource.Quantity{}
	for _, r := range e.cfg.ReservedMemory {
		if !nodes[int(r.NumaNode)] {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NumaNode)
		}
		for name, q := range r.Limits {
			q = q.DeepCopy()
			if prev, ok := totals[name]; ok {
				q.Add(prev)
			}
			totals[name] = q
		}
	}
	types := map[string]bool{}
	for name := range totals {
		types[name] = true
	}
	for name := range e.reservation {
		if name == string(v1.ResourceMemory) || IsHugePages(name) {
			types[name] = true
		}
	}
	// The kubelet walks a map: with several mismatched types it names any one; memory first here.
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "memory") != (names[j] == "memory") {
			return names[i] == "memory"
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		alloc := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := e.reservation[name]; ok {
			alloc.Add(q)
		}
		reserved := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := totals[name]; ok {
			reserved.Add(q)
		}
		if !alloc.Equal(*reserved) {
			return nil, fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", reserved.String(), name, alloc.String())
		}
	}
	out := map[int]map[string]uint64{}
	for id := range nodes {
		out[id] = map[string]uint64{}
	}
	for _, r := range e.cfg.ReservedMemory {
		for name, q := range r.Limits {
			v, ok := q.AsInt64()
			if !ok {
				return nil, errors.New("could not covert a variable of type Quantity to int64")
			}
			out[int(r.NumaNode)][name] = uint64(v)
		}
	}
	return out, nil
}

// IsHugePages: a hugepages-<size> resource.
func IsHugePages(name string) bool { return len(name) > 10 && name[:10] == "hugepages-" }

// HugePagesName is the resource name of a page size, e.g. hugepages-2Mi.
func HugePagesName(pageSizeKiB uint64) string {
	return "hugepages-" + resource.NewQuantity(int64(pageSizeKiB)*1024, resource.BinarySI).String()
}

// start is the memory manager's Start: restore the checkpoint, then validateState (which
// gives a fresh state the machine's memory).
func (m *MemoryManager) start(e *env, rep *decode.Report) error {
	static := m.static()
	if static != nil {
		static.assignments, static.podEntries = map[string]map[string][]decode.MemoryBlock{}, map[string][]decode.MemoryBlock{}
	}
	if rep == nil {
		if static != nil {
			static.machineState = static.defaultMachineState(e)
		}
		return nil // no checkpoint: a fresh state
	}
	if rep.Verdict != decode.Valid {
		return errors.New(rep.Error)
	}
	ms, ok := rep.Decoded.Memory, rep.Decoded.Memory != nil
	if !ok {
		return fmt.Errorf("%s decoded to %T, not a memory manager state", rep.File, rep.Decoded.Any())
	}
	if ms.PolicyName != m.Policy {
		return fmt.Errorf("could not restore state from checkpoint: %v, please drain this node and delete the memory manager checkpoint file %q before restarting Kubelet",
			fmt.Errorf("[memorymanager] configured policy %q differs from state checkpoint policy %q", m.Policy, ms.PolicyName),
			path.Join(e.rootDir, string(decode.KindMemory)))
	}
	if static == nil {
		return nil
	}
	if err := static.validateState(e, ms); err != nil {
		return err
	}
	static.restore(e, ms)
	return nil
}

// restore keeps the checkpoint as the state the allocations start from (a deep copy: the
// report is the caller's).
func (m *memoryStaticPolicy) restore(e *env, ms *decode.MemoryState) {
	if len(ms.MachineState) == 0 {
		m.machineState = m.defaultMachineState(e)
	} else {
		m.machineState = machineState{}
		for id, n := range ms.MachineState {
			if n == nil {
				continue
			}
			c := &decode.NUMANodeMemory{NumberOfAssignments: n.NumberOfAssignments, Cells: append([]int(nil), n.Cells...), MemoryMap: map[string]*decode.MemoryTable{}}
			for name, t := range n.MemoryMap {
				if t != nil {
					tt := *t
					c.MemoryMap[name] = &tt
				}
			}
			m.machineState[id] = c
		}
	}
	for pod, ctrs := range ms.Entries {
		for ctr, blocks := range ctrs {
			m.setBlocks(pod, ctr, cloneBlocks(blocks))
		}
	}
	if e.release.PodLevelEntries && m.gates.levelManagers {
		for pod, blocks := range ms.PodEntries {
			m.podEntries[pod] = cloneBlocks(blocks)
		}
	}
}

// machineState is the memory manager's NUMANodeMap, built here from the machine.
type machineState map[int]*decode.NUMANodeMemory

// defaultMachineState is getDefaultMachineState: every node's memory and hugepages, less what
// reservedMemory sets aside (uint64 arithmetic, as the kubelet's).
func (m *memoryStaticPolicy) defaultMachineState(e *env) machineState {
	out := machineState{}
	for _, id := range e.machine.NodeIDs() {
		node, _ := e.machine.Node(id)
		st := &decode.NUMANodeMemory{MemoryMap: map[string]*decode.MemoryTable{}, Cells: []int{id}}
		var hugepages uint64
		for _, hp := range node.HugePages {
			name := HugePagesName(hp.PageSizeKiB)
			reserved := m.systemReserved[id][name]
			total := hp.NumPages * hp.PageSizeKiB * 1024
			st.MemoryMap[name] = &decode.MemoryTable{Total: total, SystemReserved: reserved, Allocatable: total - reserved, Free: total - reserved}
			hugepages += total
		}
		reserved := m.systemReserved[id][string(v1.ResourceMemory)]
		alloc := node.Memory - reserved - hugepages
		st.MemoryMap[string(v1.ResourceMemory)] = &decode.MemoryTable{Total: node.Memory, SystemReserved: reserved, Allocatable: alloc, Free: alloc}
		out[id] = st
	}
	return out
}

// validateState is the static policy's validateState: replay every assignment onto a fresh
// machine state and compare it with the stored one.
func (m *memoryStaticPolicy) validateState(e *env, ms *decode.MemoryState) error {
	if len(ms.MachineState) == 0 {
		if len(ms.Entries) != 0 {
			return errors.New("[memorymanager] machine state can not be empty when it has memory assignments")
		}
		return nil
	}
	expected := m.defaultMachineState(e)
	podLevel := e.release.PodLevelEntries && e.gate(GatePodLevelResourceManagers)
	for _, pod := range slices.Sorted(maps.Keys(ms.Entries)) {
		if podLevel && len(ms.PodEntries[pod]) > 0 {
			if err := expected.update(ms.PodEntries[pod], pod, ""); err != nil {
				return err
			}
			continue
		}
		for _, ctr := range slices.Sorted(maps.Keys(ms.Entries[pod])) {
			if err := expected.update(ms.Entries[pod][ctr], pod, ctr); err != nil {
				return err
			}
		}
	}
	if !statesEqual(machineState(ms.MachineState), expected, e.release.GroupedMemoryCompare) {
		return &stateMismatch{details: diffStates(machineState(ms.MachineState), expected)}
	}
	return nil
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
