package replay

// The CPU manager (cpumanager/cpu_manager.go, policy_none.go, policy_static.go,
// policy_options.go): NewManager, Start (restore + validateState), and the static policy's
// topology hints and allocation.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The CPU manager's policy names.
const (
	CPUPolicyNone   = "none"
	CPUPolicyStatic = "static"
)

// The static policy's options (policy_options.go).
const (
	OptFullPCPUsOnly             = "full-pcpus-only"
	OptDistributeCPUsAcrossNUMA  = "distribute-cpus-across-numa"
	OptAlignBySocket             = "align-by-socket"
	OptDistributeCPUsAcrossCores = "distribute-cpus-across-cores"
	OptStrictCPUReservation      = "strict-cpu-reservation"
	OptPreferAlignByUncoreCache  = "prefer-align-cpus-by-uncorecache"
)

// StaticPolicyOptions are the static policy's options, parsed once (NewStaticPolicyOptions).
type StaticPolicyOptions struct {
	FullPhysicalCPUsOnly      bool
	DistributeCPUsAcrossNUMA  bool
	AlignBySocket             bool
	DistributeCPUsAcrossCores bool
	StrictCPUReservation      bool
	PreferAlignByUncoreCache  bool
}

// field is where each option lands.
func (o *StaticPolicyOptions) field(name string) *bool {
	return map[string]*bool{
		OptFullPCPUsOnly: &o.FullPhysicalCPUsOnly, OptDistributeCPUsAcrossNUMA: &o.DistributeCPUsAcrossNUMA,
		OptAlignBySocket: &o.AlignBySocket, OptDistributeCPUsAcrossCores: &o.DistributeCPUsAcrossCores,
		OptStrictCPUReservation: &o.StrictCPUReservation, OptPreferAlignByUncoreCache: &o.PreferAlignByUncoreCache,
	}[name]
}

// newStaticPolicyOptions checks each option against the release's levels and gates (in name
// order: the kubelet walks a map, so with several bad options it names any one of them),
// then the pairs the release refuses together, then ValidateStaticPolicyOptions.
func newStaticPolicyOptions(e *env, topo *CPUTopology, tm *TopologyManager) (StaticPolicyOptions, error) {
	var opts StaticPolicyOptions
	raw := e.cfg.CPUManagerPolicyOptions
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		level, known := e.release.CPUOptions[name]
		switch {
		case !known:
			return opts, fmt.Errorf("unknown CPU Manager Policy option: %q", name)
		case level == alpha && !e.gate(GateCPUAlphaOptions):
			return opts, fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", name)
		case level == beta && !e.gate(GateCPUBetaOptions):
			return opts, fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", name)
		}
		on, err := strconv.ParseBool(raw[name])
		if err != nil {
			return opts, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		*opts.field(name) = on
	}
	for _, pair := range e.release.ExclusiveOptions {
		if *opts.field(pair[0]) && *opts.field(pair[1]) {
			return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", pair[0], pair[1])
		}
	}
	if opts.AlignBySocket {
		if tm.Policy == TopologyPolicySingleNumaNode {
			//lint:ignore ST1005 the kubelet's own text, typo included
			return opts, fmt.Errorf("Topolgy manager %s policy is incompatible with CPUManager %s policy option", TopologyPolicySingleNumaNode, OptAlignBySocket)
		}
		if topo.NumSockets > topo.NumNUMANodes {
			//lint:ignore ST1005 the kubelet's own text
			return opts, errors.New("Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
		}
	}
	if !e.release.StrictReservation {
		opts.StrictCPUReservation = false // the option exists but nothing reads it yet
	}
	return opts, nil
}

// cpuState is the CPU manager's state: the checkpoint as restored, then as allocations change it.
type cpuState struct {
	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet
	podEntries  map[string]cpuset.CPUSet
}

func (s *cpuState) get(pod, ctr string) (cpuset.CPUSet, bool) {
	set, ok := s.assignments[pod][ctr]
	return set, ok
}

func (s *cpuState) set(pod, ctr string, set cpuset.CPUSet) {
	if s.assignments[pod] == nil {
		s.assignments[pod] = map[string]cpuset.CPUSet{}
	}
	s.assignments[pod][ctr] = set
}

func (s *cpuState) delete(pod, ctr string) {
	delete(s.assignments[pod], ctr)
	if len(s.assignments[pod]) == 0 {
		delete(s.assignments, pod)
	}
}

// CPUManager is cpumanager.manager: the state and the policy that changes it.
type CPUManager struct {
	Policy string
	topo   *CPUTopology
	state  *cpuState
	policy cpuPolicy
}

// cpuPolicy is cpumanager.Policy: none or static.
type cpuPolicy interface {
	// validateState is the policy's Start (a fresh state gets its default set here).
	validateState(st *cpuState) error
	GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, c *v1.Container) error
	AllocatePod(pod *v1.Pod) error
	removeContainer(pod, ctr string)
	allocatableCPUs() cpuset.CPUSet
	availableCPUs() cpuset.CPUSet
	// exclusive is whether the policy pins containers (static) or leaves the cpuset alone.
	pins() bool
}

// nonePolicy is policy_none.go: no hints, no allocation, no cpuset.
type nonePolicy struct{}

func (nonePolicy) validateState(*cpuState) error                                     { return nil }
func (nonePolicy) GetTopologyHints(*v1.Pod, *v1.Container) map[string][]TopologyHint { return nil }
func (nonePolicy) GetPodTopologyHints(*v1.Pod) map[string][]TopologyHint             { return nil }
func (nonePolicy) Allocate(*v1.Pod, *v1.Container) error                             { return nil }
func (nonePolicy) AllocatePod(*v1.Pod) error                                         { return nil }
func (nonePolicy) removeContainer(string, string)                                    {}
func (nonePolicy) allocatableCPUs() cpuset.CPUSet                                    { return cpuset.New() }
func (nonePolicy) availableCPUs() cpuset.CPUSet                                      { return cpuset.New() }
func (nonePolicy) pins() bool                                                        { return false }

// staticPolicy is policy_static.go: exclusive CPUs for Guaranteed containers with integral
// requests, picked by topology from the shared pool less the reserved CPUs.
type staticPolicy struct {
	topo                 *CPUTopology
	state                *cpuState
	opts                 StaticPolicyOptions
	reserved             cpuset.CPUSet
	reservedPhysicalCPUs cpuset.CPUSet
	cpuGroupSize         int
	affinity             *TopologyManager
	cpusToReuse          map[string]cpuset.CPUSet
	release              *Release
	gates                podGates
}

func (p *staticPolicy) pins() bool { return true }

// newCPUManager is cpumanager.NewManager: topology, policy, options, reserved CPUs.
func newCPUManager(e *env, tm *TopologyManager) (*CPUManager, error) {
	topo := e.topo
	if topo.NumCPUs == 0 {
		return nil, errors.New("could not detect number of cpus")
	}
	m := &CPUManager{Policy: e.cfg.CPUPolicy(), topo: topo}
	switch m.Policy {
	case CPUPolicyNone:
		if opts := e.cfg.CPUManagerPolicyOptions; len(opts) > 0 {
			return nil, fmt.Errorf("new none policy error: None policy: received unsupported options=%v", opts)
		}
		m.policy = nonePolicy{}
		return m, nil
	case CPUPolicyStatic:
		q, ok := e.reservation["cpu"]
		if !ok {
			return nil, errors.New("[cpumanager] unable to determine reserved CPU resources for static policy")
		}
		if q.IsZero() {
			return nil, errors.New("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
		}
		n := int(math.Ceil(float64(q.MilliValue()) / 1000))
		p, err := newStaticPolicy(e, topo, tm, n)
		if err != nil {
			return nil, fmt.Errorf("new static policy error: %w", err)
		}
		m.policy = p
		return m, nil
	}
	return nil, fmt.Errorf("unknown policy: \"%s\"", m.Policy)
}

// newStaticPolicy is NewStaticPolicy: options, then the reserved CPUs (reservedSystemCPUs, or
// the first n CPUs by topology).
func newStaticPolicy(e *env, topo *CPUTopology, tm *TopologyManager, n int) (*staticPolicy, error) {
	opts, err := newStaticPolicyOptions(e, topo, tm)
	if err != nil {
		return nil, err
	}
	p := &staticPolicy{topo: topo, opts: opts, cpuGroupSize: topo.CPUsPerCore(), affinity: tm, cpusToReuse: map[string]cpuset.CPUSet{},
		release: e.release, gates: e.podGates}
	reserved := e.reservedSystemCPUs
	if reserved.Size() == 0 {
		reserved, _ = p.takeByTopology(topo.CPUs(), n)
	}
	if reserved.Size() != n {
		return nil, fmt.Errorf("[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, n)
	}
	physical := cpuset.New()
	for _, cpu := range reserved.UnsortedList() {
		info, ok := topo.CPUDetails[cpu]
		if !ok {
			if e.release.ReservedPhysicalCPUs {
				return nil, fmt.Errorf("[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: %d", cpu)
			}
			continue
		}
		physical = physical.Union(topo.CPUDetails.CPUsInCores(info.CoreID))
	}
	p.reserved, p.reservedPhysicalCPUs = reserved, physical
	return p, nil
}

// start is the manager's Start: restore the checkpoint (state.NewCheckpointState), then the
// policy's validateState, which fills a fresh state's default set.
func (m *CPUManager) start(e *env, rep *decode.Report) error {
	st, err := m.restore(e, rep)
	if err != nil {
		return err
	}
	m.state = st
	return m.policy.validateState(st)
}

func (m *CPUManager) restore(e *env, rep *decode.Report) (*cpuState, error) {
	st := &cpuState{assignments: map[string]map[string]cpuset.CPUSet{}, podEntries: map[string]cpuset.CPUSet{}}
	if rep == nil {
		return st, nil // no checkpoint: the kubelet writes a fresh one
	}
	if rep.Verdict != decode.Valid {
		return nil, errors.New(rep.Error)
	}
	cs, ok := rep.Decoded.CPU, rep.Decoded.CPU != nil
	if !ok {
		return nil, fmt.Errorf("%s decoded to %T, not a CPU manager state", rep.File, rep.Decoded.Any())
	}
	wrap := func(err error) error {
		return fmt.Errorf("could not restore state from checkpoint: %v, please drain this node and delete the CPU manager checkpoint file %q before restarting Kubelet",
			err, path.Join(e.rootDir, string(decode.KindCPU)))
	}
	if cs.PolicyName != m.Policy {
		return nil, wrap(fmt.Errorf("configured policy %q differs from state checkpoint policy %q", m.Policy, cs.PolicyName))
	}
	var err error
	if st.defaultSet, err = ParseCPUSet(cs.DefaultCPUSet); err != nil {
		return nil, wrap(fmt.Errorf("default CPU set: %v: %s", err, buildsEveryCPU))
	}
	for _, pod := range slices.Sorted(maps.Keys(cs.Entries)) {
		for _, ctr := range slices.Sorted(maps.Keys(cs.Entries[pod])) {
			s, err := ParseCPUSet(cs.Entries[pod][ctr])
			if err != nil {
				return nil, wrap(fmt.Errorf("container %q in pod %q: %v: %s", ctr, pod, err, buildsEveryCPU))
			}
			st.set(pod, ctr, s)
		}
	}
	if e.release.PodLevelEntries && e.gate(GatePodLevelResourceManagers) {
		for pod, s := range cs.PodEntries {
			if set, err := ParseCPUSet(s); err == nil {
				st.podEntries[pod] = set
			}
		}
	}
	return st, nil
}

// validateState is the static policy's validateState.
func (p *staticPolicy) validateState(st *cpuState) error {
	p.state = st
	all := p.topo.CPUs()
	if p.opts.StrictCPUReservation {
		all = all.Difference(p.reserved)
	}
	def := st.defaultSet
	if def.IsEmpty() {
		if len(st.assignments) != 0 {
			return errors.New("default cpuset cannot be empty")
		}
		st.defaultSet = all // a fresh state
		return nil
	}
	if p.opts.StrictCPUReservation {
		if in := p.reserved.Intersection(def); !in.IsEmpty() {
			return fmt.Errorf("some of strictly reserved cpus: %q are present in defaultCpuSet: %q", in.String(), def.String())
		}
	} else if !p.reserved.Intersection(def).Equals(p.reserved) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", p.reserved.String(), def.String())
	}
	for _, pod := range slices.Sorted(maps.Keys(st.assignments)) {
		for _, ctr := range slices.Sorted(maps.Keys(st.assignments[pod])) {
			if s := st.assignments[pod][ctr]; !def.Intersection(s).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", pod, ctr, s.String(), def.String())
			}
		}
	}
	var sets []cpuset.CPUSet
	for _, ctrs := range st.assignments {
		for _, s := range ctrs {
			sets = append(sets, s)
		}
	}
	for _, s := range st.podEntries {
		sets = append(sets, s)
	}
	if known := def.Union(sets...); !known.Equals(all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all.String(), known.String())
	}
	return nil
}

// AllocatableCPUs is GetAllocatableCPUs: every CPU but the reserved ones (static); empty for none.
func (m *CPUManager) AllocatableCPUs() cpuset.CPUSet { return m.policy.allocatableCPUs() }

// AvailableCPUs is GetAvailableCPUs: what exclusive allocations can take now (static).
func (m *CPUManager) AvailableCPUs() cpuset.CPUSet { return m.policy.availableCPUs() }

func (p *staticPolicy) allocatableCPUs() cpuset.CPUSet { return p.topo.CPUs().Difference(p.reserved) }

// availableCPUs is the default (shared) set less the reserved CPUs.
func (p *staticPolicy) availableCPUs() cpuset.CPUSet {
	return p.state.defaultSet.Difference(p.reserved)
}

// The manager hands the topology manager's calls to its policy.
func (m *CPUManager) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	return m.policy.GetTopologyHints(pod, c)
}
func (m *CPUManager) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	return m.policy.GetPodTopologyHints(pod)
}
func (m *CPUManager) Allocate(pod *v1.Pod, c *v1.Container) error { return m.policy.Allocate(pod, c) }
func (m *CPUManager) AllocatePod(pod *v1.Pod) error               { return m.policy.AllocatePod(pod) }

// CPUAffinity is GetCPUAffinity: the container's own CPUs, else the shared pool; empty for
// policy none (the kubelet sets no cpuset).
func (m *CPUManager) CPUAffinity(podUID, container string) (set cpuset.CPUSet, exclusive bool) {
	if !m.policy.pins() {
		return cpuset.New(), false
	}
	if s, ok := m.state.get(podUID, container); ok {
		return s, true
	}
	return m.state.defaultSet, false
}

// removeStaleState drops the CPUs of containers no active pod has (the kubelet's
// removeStaleState before each hint and allocation).
func (m *CPUManager) removeStaleState(active map[string]map[string]bool) {
	for _, pod := range slices.Sorted(maps.Keys(m.state.assignments)) {
		for _, ctr := range slices.Sorted(maps.Keys(m.state.assignments[pod])) {
			if !active[pod][ctr] {
				m.policy.removeContainer(pod, ctr)
			}
		}
	}
}

// removeContainer is the static policy's RemoveContainer: the CPUs go back to the shared pool
// unless a sibling still holds them (a pod-level set goes back with the pod's last container).
func (p *staticPolicy) removeContainer(pod, ctr string) {
	toRelease, ok := p.state.get(pod, ctr)
	if !ok {
		return
	}
	p.state.delete(pod, ctr)
	if podSet, isPodLevel := p.state.podEntries[pod]; isPodLevel && p.gates.levelManagers {
		if len(p.state.assignments[pod]) == 0 {
			p.state.defaultSet = p.state.defaultSet.Union(podSet)
			delete(p.state.podEntries, pod)
		}
		return
	}
	inUse := cpuset.New()
	for _, s := range p.state.assignments[pod] {
		inUse = inUse.Union(s)
	}
	p.state.defaultSet = p.state.defaultSet.Union(toRelease.Difference(inUse))
}

// ParseCPUSet parses a CPU list from a node's files or config as k8s.io/utils/cpuset does, but
// never allocates a hostile "0-2000000000". In the restore, the judged kubelet's own rules were
// already replayed by decode (only Valid reports are restored), so what fails here is only
// such a set, which the kubelet would try to build.
func ParseCPUSet(s string) (cpuset.CPUSet, error) { return machine.ParseCPUList(s) }

const buildsEveryCPU = "the kubelet would build every one of them while restoring (it runs out of memory or hangs)"
