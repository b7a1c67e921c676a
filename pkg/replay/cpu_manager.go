package replay

// The CPU manager (cpumanager/cpu_manager.go): NewManager, Start (restore the checkpoint,
// then the policy's validateState), and the hint provider calls it hands to its policy.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"

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

// CPUManager is cpumanager.manager: the state and the policy that changes it.
type CPUManager struct {
	Policy string
	topo   *CPUTopology
	state  *cpuState
	policy cpuPolicy
	// gc is the manager's removeStaleState, run first by each call of the topology manager's
	// (hints, Allocate, AllocatePod), as the kubelet's manager does (nil: none).
	gc func()
}

func (m *CPUManager) collect() {
	if m.gc != nil {
		m.gc()
	}
}

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
	if e.release.has(PodLevelEntries) && e.gate(decode.GatePodLevelResourceManagers) {
		for pod, s := range cs.PodEntries {
			if set, err := ParseCPUSet(s); err == nil {
				st.podEntries[pod] = set
			}
		}
	}
	return st, nil
}

// AllocatableCPUs is GetAllocatableCPUs: every CPU but the reserved ones (static); empty for none.
func (m *CPUManager) AllocatableCPUs() cpuset.CPUSet { return m.policy.allocatableCPUs() }

// AvailableCPUs is GetAvailableCPUs: what exclusive allocations can take now (static).
func (m *CPUManager) AvailableCPUs() cpuset.CPUSet { return m.policy.availableCPUs() }

// The manager hands the topology manager's calls to its policy.
func (m *CPUManager) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	m.collect()
	return m.policy.GetTopologyHints(pod, c)
}

func (m *CPUManager) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	m.collect()
	return m.policy.GetPodTopologyHints(pod)
}

func (m *CPUManager) Allocate(pod *v1.Pod, c *v1.Container) error {
	m.collect()
	return m.policy.Allocate(pod, c)
}

func (m *CPUManager) AllocatePod(pod *v1.Pod) error {
	m.collect()
	return m.policy.AllocatePod(pod)
}

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

// ParseCPUSet parses a CPU list from a node's files or config as k8s.io/utils/cpuset does, but
// never allocates a hostile "0-2000000000". In the restore, the judged kubelet's own rules were
// already replayed by decode (only Valid reports are restored), so what fails here is only
// such a set, which the kubelet would try to build.
func ParseCPUSet(s string) (cpuset.CPUSet, error) { return machine.ParseCPUList(s) }

const buildsEveryCPU = "the kubelet would build every one of them while restoring (it runs out of memory or hangs)"
