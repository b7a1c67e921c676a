package doctor

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The CPU manager's policy names.
const (
	cpuPolicyNone   = "none"
	cpuPolicyStatic = "static"
)

// cpuManager is what cpumanager.NewManager built: the policy and, for static, its reserved CPUs.
type cpuManager struct {
	policy   string
	reserved cpuset.CPUSet
	strict   bool // strict-cpu-reservation honoured
	numCPUs  int  // numReservedCPUs
	spread   bool // distribute-cpus-across-cores
}

// newCPUManager is cpumanager.NewManager: topology, policy, options, reserved CPUs.
func newCPUManager(e *env) (*cpuManager, error) {
	if e.topo.NumCPUs == 0 {
		return nil, errors.New("could not detect number of cpus")
	}
	name := e.cfg.cpuPolicy()
	switch name {
	case cpuPolicyNone:
		if opts := e.cfg.CPUManagerPolicyOptions; len(opts) > 0 {
			return nil, fmt.Errorf("new none policy error: None policy: received unsupported options=%v", opts)
		}
		return &cpuManager{policy: name}, nil
	case cpuPolicyStatic:
		q, ok := e.reservation["cpu"]
		if !ok {
			return nil, errors.New("[cpumanager] unable to determine reserved CPU resources for static policy")
		}
		if q.IsZero() {
			return nil, errors.New("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
		}
		n := int(math.Ceil(float64(q.MilliValue()) / 1000))
		m, err := newStaticPolicy(e, n)
		if err != nil {
			return nil, fmt.Errorf("new static policy error: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown policy: \"%s\"", name)
}

// staticOptions is NewStaticPolicyOptions' result.
type staticOptions map[string]bool

// newStaticOptions checks each option (in name order: the kubelet walks a map, so with several
// bad options it names any one of them), then the pairs the era refuses together.
func newStaticOptions(e *env) (staticOptions, error) {
	names := make([]string, 0, len(e.cfg.CPUManagerPolicyOptions))
	for n := range e.cfg.CPUManagerPolicyOptions {
		names = append(names, n)
	}
	sort.Strings(names)
	opts := staticOptions{}
	for _, name := range names {
		level, known := e.era.CPUOptions[name]
		switch {
		case !known:
			return nil, fmt.Errorf("unknown CPU Manager Policy option: %q", name)
		case level == alpha && !e.gate(gateCPUAlphaOptions):
			return nil, fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", name)
		case level == beta && !e.gate(gateCPUBetaOptions):
			return nil, fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", name)
		}
		on, err := strconv.ParseBool(e.cfg.CPUManagerPolicyOptions[name])
		if err != nil {
			return nil, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		opts[name] = on
	}
	for _, pair := range e.era.ExclusiveOptions {
		if opts[pair[0]] && opts[pair[1]] {
			return nil, fmt.Errorf("static policy options %s and %s can not be used at the same time", pair[0], pair[1])
		}
	}
	// ValidateStaticPolicyOptions.
	if opts[optAlignBySocket] {
		if e.cfg.topologyPolicy() == "single-numa-node" {
			//lint:ignore ST1005 the kubelet's own text, typo included
			return nil, fmt.Errorf("Topolgy manager %s policy is incompatible with CPUManager %s policy option", "single-numa-node", optAlignBySocket)
		}
		if e.topo.NumSockets > e.topo.NumNUMANodes {
			//lint:ignore ST1005 the kubelet's own text
			return nil, errors.New("Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
		}
	}
	return opts, nil
}

// newStaticPolicy is NewStaticPolicy: options, then the reserved CPUs (reservedSystemCPUs, or
// the first n CPUs by topology).
func newStaticPolicy(e *env, n int) (*cpuManager, error) {
	opts, err := newStaticOptions(e)
	if err != nil {
		return nil, err
	}
	m := &cpuManager{policy: cpuPolicyStatic, numCPUs: n, spread: opts[optDistributeCPUsAcrossCores],
		strict: e.era.StrictReservation && opts[optStrictCPUReservation]}
	reserved := e.reservedSystemCPUs
	if reserved.Size() == 0 {
		reserved = takeByTopology(e.topo, e.topo.CPUs(), n, m.spread, opts[optPreferAlignByUncoreCache])
	}
	if reserved.Size() != n {
		return nil, fmt.Errorf("[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, n)
	}
	if e.era.ReservedPhysicalCPUs {
		for _, cpu := range reserved.List() {
			if _, ok := e.topo.Details[cpu]; !ok {
				return nil, fmt.Errorf("[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: %d", cpu)
			}
		}
	}
	m.reserved = reserved
	return m, nil
}

// cpuState is the restored cpu_manager_state.
type cpuState struct {
	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet
	podEntries  map[string]cpuset.CPUSet
}

// start is the manager's Start: restore the checkpoint (state.NewCheckpointState), then the
// policy's validateState.
func (m *cpuManager) start(e *env, rep *decode.Report) error {
	if m.policy == "fake" {
		return nil
	}
	st, err := m.restore(e, rep)
	if err != nil {
		return err
	}
	if m.policy != cpuPolicyStatic {
		return nil
	}
	return m.validateState(e, st)
}

func (m *cpuManager) restore(e *env, rep *decode.Report) (*cpuState, error) {
	st := &cpuState{assignments: map[string]map[string]cpuset.CPUSet{}}
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
	if cs.PolicyName != m.policy {
		return nil, wrap(fmt.Errorf("configured policy %q differs from state checkpoint policy %q", m.policy, cs.PolicyName))
	}
	var err error
	if st.defaultSet, err = parseCPUSet(cs.DefaultCPUSet); err != nil {
		return nil, wrap(fmt.Errorf("default CPU set: %v: %s", err, buildsEveryCPU))
	}
	for _, pod := range slices.Sorted(maps.Keys(cs.Entries)) {
		st.assignments[pod] = map[string]cpuset.CPUSet{}
		for _, ctr := range slices.Sorted(maps.Keys(cs.Entries[pod])) {
			s, err := parseCPUSet(cs.Entries[pod][ctr])
			if err != nil {
				return nil, wrap(fmt.Errorf("container %q in pod %q: %v: %s", ctr, pod, err, buildsEveryCPU))
			}
			st.assignments[pod][ctr] = s
		}
	}
	if e.era.PodLevelEntries && e.gate(gatePodLevelResources) {
		st.podEntries = map[string]cpuset.CPUSet{}
		for pod, s := range cs.PodEntries {
			if set, err := parseCPUSet(s); err == nil {
				st.podEntries[pod] = set
			}
		}
	}
	return st, nil
}

// validateState is the static policy's validateState.
func (m *cpuManager) validateState(e *env, st *cpuState) error {
	all := e.topo.CPUs()
	if m.strict {
		all = all.Difference(m.reserved)
	}
	def := st.defaultSet
	if def.IsEmpty() {
		if len(st.assignments) != 0 {
			return errors.New("default cpuset cannot be empty")
		}
		return nil // a fresh state: the policy fills the default set
	}
	if m.strict {
		if in := m.reserved.Intersection(def); !in.IsEmpty() {
			return fmt.Errorf("some of strictly reserved cpus: %q are present in defaultCpuSet: %q", in.String(), def.String())
		}
	} else if !m.reserved.Intersection(def).Equals(m.reserved) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", m.reserved.String(), def.String())
	}
	for _, pod := range slices.Sorted(maps.Keys(st.assignments)) {
		for _, ctr := range slices.Sorted(maps.Keys(st.assignments[pod])) {
			if s := st.assignments[pod][ctr]; !def.Intersection(s).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", pod, ctr, s.String(), def.String())
			}
		}
	}
	ids := def.List()
	for _, ctrs := range st.assignments {
		for _, s := range ctrs {
			ids = append(ids, s.UnsortedList()...)
		}
	}
	for _, s := range st.podEntries {
		ids = append(ids, s.UnsortedList()...)
	}
	known := cpuset.New(ids...)
	if !known.Equals(all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all.String(), known.String())
	}
	return nil
}

// parseCPUSet parses a CPU list from a node's files or config as k8s.io/utils/cpuset does, but
// never allocates a hostile "0-2000000000". In the restore, the judged kubelet's own rules were
// already replayed by decode (Diagnose restores Valid reports only), so what fails here is
// only such a set, which the kubelet would try to build.
func parseCPUSet(s string) (cpuset.CPUSet, error) { return machine.ParseCPUList(s) }

const buildsEveryCPU = "the kubelet would build every one of them while restoring (it runs out of memory or hangs)"
