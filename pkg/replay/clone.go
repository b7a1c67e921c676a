package replay

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// A kubelet started once serves many admissions: the scheduler's filter replays each pod on
// the same published state, and admit --from-published replays every node of a fleet. Starting
// (topology discovery, the reserved CPUs, the checkpoints restored and validated) is half of a
// node's cost there, so the start is kept and each admission runs on a deep copy of it.

// Clone is a deep copy of the node: every manager's state (CPU assignments and default set,
// memory tables and blocks, devices held, the topology manager's stored affinities, the active
// pods) is the copy's own, so admitting pods on either never changes the other. What no
// admission changes (the machine, the config, the release's rules, the topology policies,
// the device plugins' inputs) is shared. Clone only reads n: copies may be taken concurrently
// as long as nothing admits on n meanwhile.
func (n *Node) Clone() *Node {
	c := &Node{env: n.env, stuckOn: n.stuckOn, sourcesNotReady: n.sourcesNotReady, active: cloneNested(n.active)}
	if n.foundCPUs != nil {
		found := *n.foundCPUs // a CPUSet is immutable: sharing its elements is safe
		c.foundCPUs = &found
	}
	if n.foundMemory != nil {
		c.foundMemory = cloneNested(n.foundMemory)
	}
	c.Topology = n.Topology.clone()
	if n.CPU != nil {
		c.CPU = n.CPU.clone(c.Topology)
	}
	if n.Memory != nil {
		c.Memory = n.Memory.clone(c.Topology)
	}
	if n.Devices != nil {
		c.Devices = n.Devices.clone(c.Topology)
	}
	// The providers in the original's order, each the copy's own manager.
	for _, p := range n.Topology.scope.providers() {
		switch p {
		case HintProvider(n.CPU):
			c.Topology.AddHintProvider(c.CPU)
		case HintProvider(n.Memory):
			c.Topology.AddHintProvider(c.Memory)
		case HintProvider(n.Devices):
			c.Topology.AddHintProvider(c.Devices)
		default:
			panic(fmt.Sprintf("replay: Clone: hint provider %T not known", p))
		}
	}
	c.wire()
	return c
}

// wire binds the managers' callbacks to n: each manager's removeStaleState (run first by each
// of the topology manager's calls; what the pod found is the node then) and the device
// manager's view of the active pods and of the sources' readiness.
func (n *Node) wire() {
	if n.CPU != nil {
		n.CPU.gc = func() {
			if n.foundCPUs != nil {
				return
			}
			if !n.sourcesNotReady {
				n.CPU.removeStaleState(n.active)
			}
			free := n.freeCPUs()
			n.foundCPUs = &free
		}
	}
	if n.Memory != nil {
		n.Memory.gc = func() {
			if n.foundMemory != nil {
				return
			}
			if !n.sourcesNotReady {
				n.Memory.removeStaleState(n.active)
			}
			n.foundMemory = n.freeMemory()
		}
	}
	if n.Devices != nil {
		n.Devices.active = func() map[string]map[string]bool { return n.active }
		n.Devices.sourcesReady = func() bool { return !n.sourcesNotReady }
	}
}

// cloneNested copies a map of maps, both levels (never nil; the values are copied as values).
func cloneNested[K1, K2 comparable, V any](m map[K1]map[K2]V) map[K1]map[K2]V {
	out := make(map[K1]map[K2]V, len(m))
	for k, inner := range m {
		out[k] = maps.Clone(inner)
	}
	return out
}

// providers are the scope's hint providers, in the order they were added.
func (s *scope) providers() []HintProvider { return s.hintProviders }

// clone is the manager with its own store of affinities and no hint provider yet (Clone adds
// the copy's own).
func (m *TopologyManager) clone() *TopologyManager {
	var sc topologyScope
	switch s := m.scope.(type) {
	case *noneScope:
		c := *s
		c.scope = s.scope.clone()
		sc = &c
	case *containerScope:
		c := *s
		c.scope = s.scope.clone()
		sc = &c
	case *podScope:
		c := *s
		c.scope = s.scope.clone()
		sc = &c
	default:
		panic(fmt.Sprintf("replay: Clone: topology scope %T not known", m.scope))
	}
	return &TopologyManager{scope: sc}
}

func (s scope) clone() scope {
	return scope{name: s.name, podTopologyHints: cloneNested(s.podTopologyHints), policy: s.policy}
}

// clone is the manager over a copy of its state, its policy asking tm for affinities; gc is
// bound by wire.
func (m *CPUManager) clone(tm *TopologyManager) *CPUManager {
	c := &CPUManager{Policy: m.Policy, topo: m.topo, policy: m.policy}
	if m.state != nil {
		c.state = m.state.clone()
	}
	if p, ok := m.policy.(*staticPolicy); ok {
		cp := *p
		cp.affinity = tm
		cp.cpusToReuse = maps.Clone(p.cpusToReuse) // CPUSets are immutable values
		switch p.state {
		case nil:
		case m.state:
			cp.state = c.state // the manager and its policy share one state, as in the kubelet
		default:
			cp.state = p.state.clone()
		}
		c.policy = &cp
	}
	return c
}

func (s *cpuState) clone() *cpuState {
	c := &cpuState{defaultSet: s.defaultSet, assignments: cloneNested(s.assignments), podEntries: maps.Clone(s.podEntries)}
	if c.podEntries == nil {
		c.podEntries = map[string]cpuset.CPUSet{}
	}
	return c
}

func (m *MemoryManager) clone(tm *TopologyManager) *MemoryManager {
	c := &MemoryManager{Policy: m.Policy, policy: m.policy}
	if p := m.static(); p != nil {
		c.policy = p.clone(tm)
	}
	return c
}

// clone copies the tables and blocks, which allocations change in place; systemReserved is
// read only.
func (p *memoryStaticPolicy) clone(tm *TopologyManager) *memoryStaticPolicy {
	c := *p
	c.affinity = tm
	if p.machineState != nil {
		c.machineState = make(machineState, len(p.machineState))
		for id, n := range p.machineState {
			if n == nil {
				c.machineState[id] = nil
				continue
			}
			nn := &decode.NUMANodeMemory{NumberOfAssignments: n.NumberOfAssignments, Cells: append([]int(nil), n.Cells...)}
			if n.MemoryMap != nil {
				nn.MemoryMap = make(map[string]*decode.MemoryTable, len(n.MemoryMap))
				for name, t := range n.MemoryMap {
					if t == nil {
						nn.MemoryMap[name] = nil
						continue
					}
					tt := *t
					nn.MemoryMap[name] = &tt
				}
			}
			c.machineState[id] = nn
		}
	}
	if p.assignments != nil {
		c.assignments = make(map[string]map[string][]decode.MemoryBlock, len(p.assignments))
		for pod, ctrs := range p.assignments {
			c.assignments[pod] = make(map[string][]decode.MemoryBlock, len(ctrs))
			for ctr, b := range ctrs {
				c.assignments[pod][ctr] = cloneBlocks(b)
			}
		}
	}
	if p.podEntries != nil {
		c.podEntries = make(map[string][]decode.MemoryBlock, len(p.podEntries))
		for pod, b := range p.podEntries {
			c.podEntries[pod] = cloneBlocks(b)
		}
	}
	if p.initContainersReusableMemory != nil {
		c.initContainersReusableMemory = make(map[string]map[string]map[string]uint64, len(p.initContainersReusableMemory))
		for pod, byMask := range p.initContainersReusableMemory {
			c.initContainersReusableMemory[pod] = cloneNested(byMask)
		}
	}
	return &c
}

// clone copies what allocations and registrations change; the plugins' inputs (plugins,
// without, runtime) are read only. active and sourcesReady are bound by wire.
func (m *DeviceManager) clone(tm *TopologyManager) *DeviceManager {
	c := *m
	c.affinity = tm
	c.active, c.sourcesReady = nil, nil
	c.allDevices = cloneNested(m.allDevices) // a Device's Topology is never changed
	c.healthy, c.unhealthy, c.allocated = cloneSets(m.healthy), cloneSets(m.unhealthy), cloneSets(m.allocated)
	c.podDevices = make(podDevices, len(m.podDevices))
	for pod, ctrs := range m.podDevices {
		c.podDevices[pod] = make(map[string]map[string]map[int64][]string, len(ctrs))
		for ctr, resources := range ctrs {
			c.podDevices[pod][ctr] = make(map[string]map[int64][]string, len(resources))
			for r, perNUMA := range resources {
				pn := make(map[int64][]string, len(perNUMA))
				for numa, ids := range perNUMA {
					pn[numa] = append([]string(nil), ids...)
				}
				c.podDevices[pod][ctr][r] = pn
			}
		}
	}
	c.endpoints = maps.Clone(m.endpoints)
	c.devicesToReuse = make(map[string]map[string]sets.Set[string], len(m.devicesToReuse))
	for pod, byResource := range m.devicesToReuse {
		c.devicesToReuse[pod] = cloneSets(byResource)
	}
	c.picks = make(map[string]map[string]map[string]DevicePick, len(m.picks))
	for pod, ctrs := range m.picks {
		c.picks[pod] = cloneNested(ctrs)
	}
	c.notJudged = maps.Clone(m.notJudged)
	return &c
}

func cloneSets(in map[string]sets.Set[string]) map[string]sets.Set[string] {
	out := make(map[string]sets.Set[string], len(in))
	for k, s := range in {
		out[k] = s.Clone()
	}
	return out
}

// Started is a kubelet started once, before any admission, kept to admit pods on as often as
// asked: each Node it gives is a copy of the start (Clone), never the start itself, so the
// start stays as the kubelet made it and copies may be taken concurrently.
type Started struct {
	// Prediction is the start's.
	Prediction Prediction
	node       *Node // nil when the kubelet does not start
}

// StartOnce is Start kept for many admissions. The active pods are left out of it and given
// to each Node (which checkpoint owners the kubelet counts active is only read when a pod is
// admitted), so one start serves every active set. A restart's re-admissions are not kept:
// they change the node as they go.
func StartOnce(in StartInput) (*Started, error) {
	if in.Restart != nil {
		return nil, fmt.Errorf("replay: StartOnce: a restart's start is not kept")
	}
	in.Active = nil
	n, p, err := start(in, false)
	if err != nil {
		return nil, err
	}
	return &Started{Prediction: p, node: n}, nil
}

// Node is a copy of the started kubelet whose active pods are active (StartInput.Active), or
// nil when it does not start.
func (s *Started) Node(active map[string]bool) *Node {
	if s.node == nil {
		return nil
	}
	n := s.node.Clone()
	n.markCheckpointOwnersActive(active)
	return n
}
