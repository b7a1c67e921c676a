package replay

// The memory manager (memorymanager/memory_manager.go): NewManager, the reserved memory per
// NUMA node, Start, and the hint provider calls it hands to its policy.

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
	// gc is the manager's removeStaleState, run first by each call of the topology manager's
	// (nil: none).
	gc func()
}

func (m *MemoryManager) collect() {
	if m.gc != nil {
		m.gc()
	}
}

// The manager hands the topology manager's calls to its policy.
func (m *MemoryManager) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	m.collect()
	return m.policy.GetTopologyHints(pod, c)
}

func (m *MemoryManager) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	m.collect()
	return m.policy.GetPodTopologyHints(pod)
}

func (m *MemoryManager) Allocate(pod *v1.Pod, c *v1.Container) error {
	m.collect()
	return m.policy.Allocate(pod, c)
}

func (m *MemoryManager) AllocatePod(pod *v1.Pod) error {
	m.collect()
	return m.policy.AllocatePod(pod)
}

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
			sidecarAware: e.release.has(SidecarAware), violationCheck: e.release.has(MemoryAffinityViolationCheck),
			skipsNoRequest:               e.release.has(MemorySkipsNoRequest),
			keepsPodMemory:               e.release.has(PodMemoryKeptOnReadmit),
			initContainersReusableMemory: map[string]map[string]map[string]uint64{}}}, nil
	case name == MemoryPolicyBestEffort && e.release.has(BestEffortMemory):
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

// MemoryNUMANodes is GetMemoryNUMANodes: the NUMA nodes of the container's blocks, sorted.
func (m *MemoryManager) MemoryNUMANodes(podUID, container string) []int {
	set := map[int]bool{}
	for _, b := range m.MemoryBlocks(podUID, container) {
		for _, id := range b.NUMAAffinity {
			set[id] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}
