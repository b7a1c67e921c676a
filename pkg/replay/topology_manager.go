package replay

// The topology manager (topologymanager/): its policies merge the hint providers' NUMA hints
// into one affinity per container (container scope) or pod (pod scope), and Admit refuses a
// pod whose merged hint the policy does not accept.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// Topology manager policies, scopes and options (topologymanager/policy_*.go, scope*.go,
// policy_options.go).
const (
	TopologyPolicyNone           = "none"
	TopologyPolicyBestEffort     = "best-effort"
	TopologyPolicyRestricted     = "restricted"
	TopologyPolicySingleNumaNode = "single-numa-node"

	TopologyScopeContainer = "container"
	TopologyScopePod       = "pod"

	OptPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	OptMaxAllowableNUMANodes  = "max-allowable-numa-nodes"

	defaultMaxAllowableNUMANodes = 8
)

// TopologyHint is a NUMA affinity and whether it is preferred. An affinity of 0 stands for
// the kubelet's nil ("any NUMA node"): no provider or merge ever yields an empty mask.
type TopologyHint struct {
	NUMANodeAffinity BitMask
	Preferred        bool
}

// HintProvider is what the CPU and memory managers offer the topology manager.
type HintProvider interface {
	GetTopologyHints(pod *v1.Pod, container *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, container *v1.Container) error
}

// admissionError is the kubelet's admission.Error: a reason beside the message.
type admissionError interface {
	error
	Type() string
}

type reasonError struct{ reason, message string }

func (e reasonError) Error() string { return e.message }
func (e reasonError) Type() string  { return e.reason }

// Admission reasons the resource managers give.
const (
	ReasonTopologyAffinity    = "TopologyAffinityError"
	ReasonSMTAlignment        = "SMTAlignmentError"
	ReasonUnexpected          = "UnexpectedAdmissionError"
	ReasonEmptyPodSharedPool  = "EmptyPodSharedPoolError"
	topologyAffinityMessage   = "Resources cannot be allocated with Topology locality"
	podLevelAffinityPrefix    = "Pod Scope "
	podLevelContainerScopeMsg = "pod with pod-level resources failed admission with a container-level topology manager"
	podLevelPodScopeMsg       = "pod with pod-level resources failed admission under pod-scope topology manager"
)

var errTopologyAffinity = reasonError{ReasonTopologyAffinity, topologyAffinityMessage}

// AdmitResult is lifecycle.PodAdmitResult.
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string
	// Hangs: the kubelet never answers for this pod; its admission stays stuck (Message says
	// where), and no pod after it is admitted.
	Hangs bool
	// NotReached: a pod before this one hangs, so the kubelet never gets to it.
	NotReached bool
}

// podAdmitResult is admission.GetPodAdmitResult.
func podAdmitResult(err error) AdmitResult {
	if err == nil {
		return AdmitResult{Admit: true}
	}
	if errors.Is(err, ErrKubeletHangs) {
		return AdmitResult{Hangs: true, Message: err.Error()}
	}
	var ae admissionError
	if !errors.As(err, &ae) {
		return AdmitResult{Reason: ReasonUnexpected, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
	}
	return AdmitResult{Reason: ae.Type(), Message: ae.Error()}
}

// TopologyPolicyOptions are the topology manager's options, parsed once (NewPolicyOptions).
type TopologyPolicyOptions struct {
	PreferClosestNUMA     bool
	MaxAllowableNUMANodes int
}

func newTopologyPolicyOptions(e *env) (TopologyPolicyOptions, error) {
	opts := TopologyPolicyOptions{MaxAllowableNUMANodes: defaultMaxAllowableNUMANodes}
	raw := e.cfg.TopologyManagerPolicyOptions
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names) // the kubelet walks a map: with several bad options it names any one
	for _, name := range names {
		if err := e.release.checkTopologyOption(name, e.gate); err != nil {
			return opts, err
		}
		value := raw[name]
		switch name {
		case OptPreferClosestNUMANodes:
			on, err := strconv.ParseBool(value)
			if err != nil {
				return opts, fmt.Errorf("bad value for option %q: %w", name, err)
			}
			opts.PreferClosestNUMA = on
		case OptMaxAllowableNUMANodes:
			n, err := strconv.Atoi(value)
			if err != nil {
				return opts, fmt.Errorf("unable to convert policy option to integer %q: %w", name, err)
			}
			if n < defaultMaxAllowableNUMANodes {
				return opts, fmt.Errorf("the minimum value of %q should not be less than %v", name, defaultMaxAllowableNUMANodes)
			}
			opts.MaxAllowableNUMANodes = n
		default:
			return opts, fmt.Errorf("unsupported topologymanager option: %q (%s)", name, value)
		}
	}
	return opts, nil
}

// numaInfo is topologymanager.NUMAInfo: the nodes and, with prefer-closest-numa-nodes, their
// distances.
type numaInfo struct {
	nodes     []int
	distances map[int][]uint64
}

func newNUMAInfo(m *machine.Machine, opts TopologyPolicyOptions) (*numaInfo, error) {
	n := &numaInfo{distances: map[int][]uint64{}}
	for _, id := range m.NodeIDs() {
		n.nodes = append(n.nodes, id)
		if !opts.PreferClosestNUMA {
			continue
		}
		node, _ := m.Node(id)
		if node.Distances == nil {
			return nil, errors.New("error getting NUMA distances from cadvisor")
		}
		n.distances[id] = node.Distances
	}
	return n, nil
}

func (n *numaInfo) defaultAffinityMask() BitMask {
	m, _ := NewBitMask(n.nodes...)
	return m
}

func (n *numaInfo) narrowest(m1, m2 BitMask) BitMask {
	if m1.IsNarrowerThan(m2) {
		return m1
	}
	return m2
}

func (n *numaInfo) averageDistance(m BitMask) float64 {
	if m.Count() == 0 {
		return 0
	}
	var sum, count float64
	for _, a := range m.GetBits() {
		for _, b := range m.GetBits() {
			if row := n.distances[a]; b < len(row) {
				sum += float64(row[b])
			}
			count++
		}
	}
	return sum / count
}

func (n *numaInfo) closest(m1, m2 BitMask) BitMask {
	if m1.Count() != m2.Count() {
		return n.narrowest(m1, m2)
	}
	d1, d2 := n.averageDistance(m1), n.averageDistance(m2)
	if d1 == d2 {
		if m1 < m2 {
			return m1
		}
		return m2
	}
	if d1 < d2 {
		return m1
	}
	return m2
}

// topologyPolicy is topologymanager.Policy: best-effort, restricted or single-numa-node
// (none has no merge: its scope allocates without hints).
type topologyPolicy interface {
	Name() string
	// Merge is the best hint of the providers' hints, and whether the policy admits it.
	Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool)
}

// bestEffortPolicy admits whatever the merge gives.
type bestEffortPolicy struct {
	numa *numaInfo
	opts TopologyPolicyOptions
}

func (p *bestEffortPolicy) Name() string { return TopologyPolicyBestEffort }

func (p *bestEffortPolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterProvidersHints(providersHints)
	return newHintMerger(p.numa, filtered, p.Name(), p.opts).merge(), true
}

// restrictedPolicy admits a preferred merge only.
type restrictedPolicy struct{ bestEffortPolicy }

func (p *restrictedPolicy) Name() string { return TopologyPolicyRestricted }

func (p *restrictedPolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterProvidersHints(providersHints)
	best := newHintMerger(p.numa, filtered, p.Name(), p.opts).merge()
	return best, best.Preferred
}

// singleNumaNodePolicy admits a preferred single NUMA node only.
type singleNumaNodePolicy struct {
	numa *numaInfo
	opts TopologyPolicyOptions
}

func (p *singleNumaNodePolicy) Name() string { return TopologyPolicySingleNumaNode }

func (p *singleNumaNodePolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterSingleNumaHints(filterProvidersHints(providersHints))
	best := newHintMerger(p.numa, filtered, p.Name(), p.opts).merge()
	if best.NUMANodeAffinity == p.numa.defaultAffinityMask() {
		best = TopologyHint{0, best.Preferred}
	}
	return best, best.Preferred
}

// filterProvidersHints flattens the providers' hints, one list per resource: a provider or
// resource without hints is "any NUMA node, preferred"; an empty list is "no NUMA node fits".
func filterProvidersHints(providersHints []map[string][]TopologyHint) [][]TopologyHint {
	var out [][]TopologyHint
	for _, hints := range providersHints {
		if len(hints) == 0 {
			out = append(out, []TopologyHint{{0, true}})
			continue
		}
		// The kubelet walks the map; the merge does not depend on the order.
		names := make([]string, 0, len(hints))
		for r := range hints {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			switch {
			case hints[r] == nil:
				out = append(out, []TopologyHint{{0, true}})
			case len(hints[r]) == 0:
				out = append(out, []TopologyHint{{0, false}})
			default:
				out = append(out, hints[r])
			}
		}
	}
	return out
}

func mergePermutation(defaultAffinity BitMask, permutation []TopologyHint) TopologyHint {
	preferred := true
	merged := defaultAffinity
	var first BitMask
	for _, h := range permutation {
		if h.NUMANodeAffinity != 0 {
			if first == 0 {
				first = h.NUMANodeAffinity
			}
			merged &= h.NUMANodeAffinity
			if h.NUMANodeAffinity != first {
				preferred = false
			}
		}
		if !h.Preferred {
			preferred = false
		}
	}
	return TopologyHint{merged, preferred}
}

func maxOfMinAffinityCounts(hints [][]TopologyHint) int {
	out := 0
	for _, resource := range hints {
		var narrowest BitMask
		for _, h := range resource {
			if h.NUMANodeAffinity == 0 {
				continue
			}
			if narrowest == 0 || h.NUMANodeAffinity.IsNarrowerThan(narrowest) {
				narrowest = h.NUMANodeAffinity
			}
		}
		if narrowest != 0 && narrowest.Count() > out {
			out = narrowest.Count()
		}
	}
	return out
}

// hintMerger is topologymanager.HintMerger.
type hintMerger struct {
	numa                          *numaInfo
	hints                         [][]TopologyHint
	bestNonPreferredAffinityCount int
	// closest: prefer-closest-numa-nodes decides between equally wide masks (not under
	// single-numa-node).
	closest bool
}

func newHintMerger(numa *numaInfo, hints [][]TopologyHint, policyName string, opts TopologyPolicyOptions) hintMerger {
	return hintMerger{numa: numa, hints: hints, bestNonPreferredAffinityCount: maxOfMinAffinityCounts(hints),
		closest: policyName != TopologyPolicySingleNumaNode && opts.PreferClosestNUMA}
}

func (m hintMerger) compareMasks(current, candidate *TopologyHint) *TopologyHint {
	if candidate.NUMANodeAffinity == current.NUMANodeAffinity {
		return current
	}
	var best BitMask
	if m.closest {
		best = m.numa.closest(current.NUMANodeAffinity, candidate.NUMANodeAffinity)
	} else {
		best = m.numa.narrowest(current.NUMANodeAffinity, candidate.NUMANodeAffinity)
	}
	if best == current.NUMANodeAffinity {
		return current
	}
	return candidate
}

func (m hintMerger) compare(current, candidate *TopologyHint) *TopologyHint {
	best := m.bestNonPreferredAffinityCount
	cur, cand := 0, candidate.NUMANodeAffinity.Count()
	if current != nil {
		cur = current.NUMANodeAffinity.Count()
	}
	switch {
	case cand == 0:
		return current
	case current == nil:
		return candidate
	case !current.Preferred && candidate.Preferred:
		return candidate
	case current.Preferred && !candidate.Preferred:
		return current
	case current.Preferred && candidate.Preferred:
		return m.compareMasks(current, candidate)
	// Both non-preferred: closest to the widest of the narrowest hints wins.
	case cur > best:
		return m.compareMasks(current, candidate)
	case cur == best:
		if cand != best {
			return current
		}
		return m.compareMasks(current, candidate)
	case cand > best:
		return current
	case cand == best:
		return candidate
	case cand > cur:
		return candidate
	case cand < cur:
		return current
	}
	return m.compareMasks(current, candidate)
}

func (m hintMerger) merge() TopologyHint {
	def := m.numa.defaultAffinityMask()
	var best *TopologyHint
	var iterate func(i int, accum []TopologyHint)
	iterate = func(i int, accum []TopologyHint) {
		if i == len(m.hints) {
			merged := mergePermutation(def, accum)
			best = m.compare(best, &merged)
			return
		}
		for j := range m.hints[i] {
			iterate(i+1, append(accum, m.hints[i][j]))
		}
	}
	iterate(0, []TopologyHint{})
	if best == nil {
		return TopologyHint{def, false}
	}
	return *best
}

func filterSingleNumaHints(all [][]TopologyHint) [][]TopologyHint {
	var out [][]TopologyHint
	for _, resource := range all {
		var kept []TopologyHint
		for _, h := range resource {
			if h.Preferred && (h.NUMANodeAffinity == 0 || h.NUMANodeAffinity.Count() == 1) {
				kept = append(kept, h)
			}
		}
		out = append(out, kept)
	}
	return out
}

// TopologyManager is topologymanager.manager: a scope over a policy, the store of affinities
// the CPU and memory managers read, and the pod admit handler.
type TopologyManager struct {
	Policy, Scope string
	policy        topologyPolicy // nil for policy none
	providers     []HintProvider
	hints         map[string]map[string]TopologyHint
}

// newTopologyManager is topologymanager.NewManager.
func newTopologyManager(e *env) (*TopologyManager, error) {
	name, scope := e.cfg.TopologyPolicy(), e.cfg.TopologyScope()
	if name == TopologyPolicyNone {
		return &TopologyManager{Policy: name, Scope: "none", hints: map[string]map[string]TopologyHint{}}, nil
	}
	opts, err := newTopologyPolicyOptions(e)
	if err != nil {
		return nil, err
	}
	numa, err := newNUMAInfo(e.machine, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot discover NUMA topology: %w", err)
	}
	if len(numa.nodes) > opts.MaxAllowableNUMANodes {
		return nil, fmt.Errorf("unsupported on machines with more than %v NUMA Nodes", opts.MaxAllowableNUMANodes)
	}
	var policy topologyPolicy
	switch name {
	case TopologyPolicyBestEffort:
		policy = &bestEffortPolicy{numa: numa, opts: opts}
	case TopologyPolicyRestricted:
		policy = &restrictedPolicy{bestEffortPolicy{numa: numa, opts: opts}}
	case TopologyPolicySingleNumaNode:
		policy = &singleNumaNodePolicy{numa: numa, opts: opts}
	default:
		return nil, fmt.Errorf("unknown policy: \"%s\"", name)
	}
	switch scope {
	case TopologyScopeContainer, TopologyScopePod:
	default:
		return nil, fmt.Errorf("unknown scope: \"%s\"", scope)
	}
	return &TopologyManager{Policy: name, Scope: scope, policy: policy, hints: map[string]map[string]TopologyHint{}}, nil
}

// GetAffinity is the store's answer for a container; the zero hint when none was stored.
func (m *TopologyManager) GetAffinity(podUID, container string) TopologyHint {
	return m.hints[podUID][container]
}

func (m *TopologyManager) setHint(podUID, container string, h TopologyHint) {
	if m.hints[podUID] == nil {
		m.hints[podUID] = map[string]TopologyHint{}
	}
	m.hints[podUID][container] = h
}

func (m *TopologyManager) addHintProvider(p HintProvider) { m.providers = append(m.providers, p) }

func podContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

func (m *TopologyManager) allocateAlignedResources(pod *v1.Pod, c *v1.Container) error {
	for _, p := range m.providers {
		if err := p.Allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

// Admit is the scope's Admit for operation "add".
func (m *TopologyManager) Admit(pod *v1.Pod, podLevel bool) AdmitResult {
	containers := podContainers(pod)
	switch {
	case m.policy == nil:
		for i := range containers {
			if err := m.allocateAlignedResources(pod, &containers[i]); err != nil {
				return podAdmitResult(err)
			}
		}
	case m.Scope == TopologyScopeContainer:
		for i := range containers {
			c := &containers[i]
			var hints []map[string][]TopologyHint
			for _, p := range m.providers {
				hints = append(hints, p.GetTopologyHints(pod, c))
			}
			best, admit := m.policy.Merge(hints)
			if !admit {
				if podLevel {
					return podAdmitResult(reasonError{ReasonTopologyAffinity, podLevelAffinityPrefix + podLevelContainerScopeMsg})
				}
				return podAdmitResult(errTopologyAffinity)
			}
			m.setHint(string(pod.UID), c.Name, best)
			if err := m.allocateAlignedResources(pod, c); err != nil {
				return podAdmitResult(err)
			}
		}
	default:
		var hints []map[string][]TopologyHint
		for _, p := range m.providers {
			hints = append(hints, p.GetPodTopologyHints(pod))
		}
		best, admit := m.policy.Merge(hints)
		if !admit {
			if podLevel {
				return podAdmitResult(reasonError{ReasonTopologyAffinity, podLevelAffinityPrefix + podLevelPodScopeMsg})
			}
			return podAdmitResult(errTopologyAffinity)
		}
		if podLevel {
			for i := range containers {
				m.setHint(string(pod.UID), containers[i].Name, best)
			}
			for _, p := range m.providers {
				if pa, ok := p.(podAllocator); ok {
					if err := pa.AllocatePod(pod); err != nil {
						return podAdmitResult(err)
					}
				}
			}
			return podAdmitResult(nil)
		}
		for i := range containers {
			m.setHint(string(pod.UID), containers[i].Name, best)
			if err := m.allocateAlignedResources(pod, &containers[i]); err != nil {
				return podAdmitResult(err)
			}
		}
	}
	return podAdmitResult(nil)
}

// podAllocator is a provider that allocates a pod with pod-level resources at once.
type podAllocator interface {
	AllocatePod(pod *v1.Pod) error
}
