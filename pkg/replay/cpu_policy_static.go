package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// The static CPU policy (cpumanager/policy_static.go): NewStaticPolicy, its Start
// (validateState), and the admission side the topology manager calls: GetTopologyHints,
// GetPodTopologyHints, Allocate and AllocatePod.

// staticPolicy is policy_static.go: exclusive CPUs for Guaranteed containers with integral
// requests, picked by topology from the shared pool less the reserved CPUs.
type staticPolicy struct {
	topo                 *CPUTopology
	state                *cpuState
	opts                 StaticPolicyOptions
	reserved             cpuset.CPUSet
	reservedPhysicalCPUs cpuset.CPUSet
	// allocatable is every CPU less the reserved ones: fixed once reserved is.
	allocatable  cpuset.CPUSet
	cpuGroupSize int
	affinity     *TopologyManager
	cpusToReuse  map[string]cpuset.CPUSet
	release      *releaseRules
	gates        podGates
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
		reserved = p.reservedByTopology(n)
	}
	if reserved.Size() != n {
		return nil, fmt.Errorf("[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, n)
	}
	physical := cpuset.New()
	for _, cpu := range reserved.UnsortedList() {
		info, ok := topo.CPUDetails[cpu]
		if !ok {
			if e.release.has(ReservedPhysicalCPUs) {
				return nil, fmt.Errorf("[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: %d", cpu)
			}
			continue
		}
		physical = physical.Union(topo.CPUDetails.CPUsInCores(info.CoreID))
	}
	p.reserved, p.reservedPhysicalCPUs = reserved, physical
	p.allocatable = topo.CPUs().Difference(reserved)
	return p, nil
}

func (p *staticPolicy) pins() bool { return true }

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

func (p *staticPolicy) allocatableCPUs() cpuset.CPUSet { return p.allocatable }

// availableCPUs is the default (shared) set less the reserved CPUs.
func (p *staticPolicy) availableCPUs() cpuset.CPUSet {
	return p.state.defaultSet.Difference(p.reserved)
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

// SMTAlignmentError is the static policy's refusal under full-pcpus-only.
type SMTAlignmentError struct {
	RequestedCPUs, CpusPerCore, AvailablePhysicalCPUs int
	CausedByPhysicalCPUs                              bool
	// byCause: the release picks the text by cause (else by AvailablePhysicalCPUs > 0).
	byCause bool
}

func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs && (e.byCause || e.AvailablePhysicalCPUs > 0) {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CpusPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CpusPerCore)
}

func (e SMTAlignmentError) Type() string { return ReasonSMTAlignment }

// guaranteedCPUs is the integral CPU request of a container of a Guaranteed pod, else 0.
func (p *staticPolicy) guaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if p.gates.podQOS(pod) != v1.PodQOSGuaranteed {
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if p.gates.podLevel(pod) && !isContainerEquivalentQOSGuaranteed(c) {
		return 0
	}
	if q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// podGuaranteedCPUs is the pod's CPU budget: the larger of the biggest init container (with
// the sidecars started before it) and the long-running containers together.
func (p *staticPolicy) podGuaranteedCPUs(pod *v1.Pod) int {
	if p.gates.podLevel(pod) {
		if p.gates.podQOS(pod) != v1.PodQOSGuaranteed {
			return 0
		}
		if q, ok := pod.Spec.Resources.Requests[v1.ResourceCPU]; ok && q.Value()*1000 == q.MilliValue() {
			return int(q.Value())
		}
		return 0
	}
	byInit, byRestartable := 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			continue
		}
		n := p.guaranteedCPUs(pod, c)
		if p.release.has(SidecarAware) && IsRestartableInitContainer(c) {
			byRestartable += n
		} else if byRestartable+n > byInit {
			byInit = byRestartable + n
		}
	}
	byApp := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			continue
		}
		byApp += p.guaranteedCPUs(pod, c)
	}
	return max(byInit, byApp+byRestartable)
}

// takeByTopology picks CPUs as the options say: distributed over NUMA nodes, or packed.
// hintNUMAs is the NUMA node count of the topology manager's hint (0: none), which the
// distributed picker spreads over at least where the release says so (DistributedHintNUMAs).
func (p *staticPolicy) takeByTopology(available cpuset.CPUSet, n, hintNUMAs int) (cpuset.CPUSet, error) {
	strategy := CPUSortingStrategyPacked
	if p.opts.DistributeCPUsAcrossCores {
		strategy = CPUSortingStrategySpread
	}
	if p.opts.DistributeCPUsAcrossNUMA {
		group := 1
		if p.opts.FullPhysicalCPUsOnly {
			group = p.cpuGroupSize
		}
		return takeByTopologyNUMADistributed(p.topo, available, n, group, strategy, distributedRules{
			alignBySocket:      p.opts.AlignBySocket && p.release.has(DistributedAlignsBySocket),
			remainderInGroups:  p.release.has(DistributedRemainderInGroups),
			copiesCombinations: p.release.has(CombinationsCopied),
			minNUMAsFromHint:   hintNUMAs * boolInt(p.release.has(DistributedHintNUMAs)),
			packed:             packedRules{ownSize: p.release.has(FreeUnitsByOwnSize)},
		})
	}
	return takeByTopologyNUMAPacked(p.topo, available, n, strategy, p.opts.PreferAlignByUncoreCache, packedRules{
		uncoreFloor:     !p.release.has(UncorePartialRoundsUp),
		spreadByCore:    p.release.has(SpreadRoundRobinCores),
		uncoreFullFirst: p.release.has(UncoreFullFirst),
		ownSize:         p.release.has(FreeUnitsByOwnSize),
	})
}

// GetTopologyHints is the static policy's container hints (nil for policy none).
func (p *staticPolicy) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	requested := p.guaranteedCPUs(pod, c)
	if requested == 0 || p.gates.skips(pod) {
		return nil
	}
	if allocated, ok := p.state.get(string(pod.UID), c.Name); ok {
		if allocated.Size() != requested {
			return map[string][]TopologyHint{string(v1.ResourceCPU): {}}
		}
		return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(allocated, cpuset.New(), requested)}
	}
	return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(p.availableCPUs(), p.cpusToReuse[string(pod.UID)], requested)}
}

// GetPodTopologyHints is the static policy's pod hints (pod scope).
func (p *staticPolicy) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	requested := p.podGuaranteedCPUs(pod)
	if requested == 0 || p.gates.skips(pod) {
		return nil
	}
	stale := cpuset.New()
	if allocated, ok := p.state.podEntries[string(pod.UID)]; ok && !allocated.IsEmpty() && p.gates.podLevel(pod) && p.release.has(PodCPUsKeptOnReadmit) {
		if p.podAllocationStaleness(pod, allocated) == notStale {
			if allocated.Size() != requested {
				return map[string][]TopologyHint{string(v1.ResourceCPU): {}}
			}
			return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(allocated, cpuset.New(), requested)}
		}
		stale = allocated // AllocatePod releases it first
	}
	if p.gates.podLevel(pod) {
		if err := p.validatePodScopeResources(pod); err != nil {
			return map[string][]TopologyHint{string(v1.ResourceCPU): {}}
		}
	}
	if !stale.IsEmpty() {
		available := p.state.defaultSet.Union(stale).Difference(p.reserved)
		return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(available, p.cpusToReuse[string(pod.UID)], requested)}
	}
	assigned := cpuset.New()
	for _, c := range podContainers(pod) {
		byContainer := p.guaranteedCPUs(pod, &c)
		if allocated, ok := p.state.get(string(pod.UID), c.Name); ok {
			if allocated.Size() != byContainer {
				return map[string][]TopologyHint{string(v1.ResourceCPU): {}}
			}
			assigned = assigned.Union(allocated)
		}
	}
	if assigned.Size() == requested {
		return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(assigned, cpuset.New(), requested)}
	}
	reusable := p.cpusToReuse[string(pod.UID)].Union(assigned)
	return map[string][]TopologyHint{string(v1.ResourceCPU): p.generateCPUTopologyHints(p.availableCPUs(), reusable, requested)}
}

// generateCPUTopologyHints lists every NUMA mask with enough CPUs; the narrowest that could
// ever hold the request are preferred (align-by-socket: those within the fewest sockets).
func (p *staticPolicy) generateCPUTopologyHints(available, reusable cpuset.CPUSet, request int) []TopologyHint {
	d := p.topo.CPUDetails
	// Counted once per NUMA node (the kubelet recounts them for every mask; same sums).
	perNUMA, availablePerNUMA, reusableNUMA := map[int]int{}, map[int]int{}, map[int]int{}
	for _, info := range d {
		perNUMA[info.NUMANodeID]++
	}
	// An unknown CPU counts as on node 0, as the kubelet's zero value does.
	for _, c := range available.UnsortedList() {
		availablePerNUMA[d[c].NUMANodeID]++
	}
	for _, c := range reusable.UnsortedList() {
		reusableNUMA[d[c].NUMANodeID]++
	}
	minAffinitySize := len(perNUMA)
	hints := []TopologyHint{}
	iterateBitMasks(d.NUMANodes().List(), func(mask BitMask) {
		inMask, matching := 0, 0
		for _, id := range mask.GetBits() {
			inMask += perNUMA[id]
			matching += availablePerNUMA[id]
		}
		if inMask >= request && mask.Count() < minAffinitySize {
			minAffinitySize = mask.Count()
		}
		for id, n := range reusableNUMA {
			if !mask.IsSet(id) {
				return
			}
			matching += n
		}
		if matching < request {
			return
		}
		hints = append(hints, TopologyHint{NUMANodeAffinity: mask})
	})
	var socketsOf map[int][]int
	if p.opts.AlignBySocket {
		socketsOf = d.socketsByNUMA()
	}
	for i := range hints {
		if p.opts.AlignBySocket && p.isHintSocketAligned(hints[i], minAffinitySize, socketsOf) {
			hints[i].Preferred = true
			continue
		}
		if hints[i].NUMANodeAffinity.Count() == minAffinitySize {
			hints[i].Preferred = true
		}
	}
	return hints
}

// isHintSocketAligned: the hint's NUMA nodes span as few sockets as the smallest affinity
// needs. socketsOf is the topology's CPUDetails.socketsByNUMA(), built once for every hint
// (SocketsInNUMANodes(bits).Size() for each mask was a fifth of an admission on 8 NUMA nodes).
func (p *staticPolicy) isHintSocketAligned(h TopologyHint, minAffinitySize int, socketsOf map[int][]int) bool {
	perSocket := p.topo.NumNUMANodes / p.topo.NumSockets
	if perSocket == 0 {
		return false
	}
	minSockets := (minAffinitySize + perSocket - 1) / perSocket
	sockets := map[int]bool{}
	for _, numa := range h.NUMANodeAffinity.GetBits() {
		for _, s := range socketsOf[numa] {
			sockets[s] = true
		}
	}
	return len(sockets) == minSockets
}

func (p *staticPolicy) getAlignedCPUs(affinity BitMask, allocatable cpuset.CPUSet) cpuset.CPUSet {
	d := p.topo.CPUDetails
	aligned := cpuset.New()
	if p.opts.AlignBySocket {
		for _, s := range d.SocketsInNUMANodes(affinity.GetBits()...).UnsortedList() {
			aligned = aligned.Union(allocatable.Intersection(d.CPUsInSockets(s)))
		}
		return aligned
	}
	for _, n := range affinity.GetBits() {
		aligned = aligned.Union(allocatable.Intersection(d.CPUsInNUMANodes(n)))
	}
	return aligned
}

// enforceSMTAlignment is full-pcpus-only: whole cores, and enough free ones.
func (p *staticPolicy) enforceSMTAlignment(numCPUs int) error {
	if !p.opts.FullPhysicalCPUsOnly {
		return nil
	}
	if p.cpuGroupSize == 0 || numCPUs%p.cpuGroupSize != 0 {
		return SMTAlignmentError{RequestedCPUs: numCPUs, CpusPerCore: p.cpuGroupSize, byCause: p.release.has(SMTErrorByCause)}
	}
	if !p.release.has(SMTPhysicalCheck) {
		return nil
	}
	if free := p.state.defaultSet.Difference(p.reservedPhysicalCPUs).Size(); numCPUs > free {
		return SMTAlignmentError{RequestedCPUs: numCPUs, CpusPerCore: p.cpuGroupSize, AvailablePhysicalCPUs: free, CausedByPhysicalCPUs: true,
			byCause: p.release.has(SMTErrorByCause)}
	}
	return nil
}

// allocateCPUs takes the CPUs of the hint's NUMA nodes first, then any others.
func (p *staticPolicy) allocateCPUs(numCPUs int, affinity BitMask, reusable cpuset.CPUSet) (cpuset.CPUSet, error) {
	allocatable := p.availableCPUs().Union(reusable)
	result := cpuset.New()
	if affinity != 0 {
		aligned := p.getAlignedCPUs(affinity, allocatable)
		taken, err := p.takeByTopology(aligned, min(numCPUs, aligned.Size()), affinity.Count())
		if err != nil {
			return cpuset.New(), err
		}
		result = result.Union(taken)
	}
	rest, err := p.takeByTopology(allocatable.Difference(result), numCPUs-result.Size(), 0)
	if err != nil {
		return cpuset.New(), err
	}
	result = result.Union(rest)
	p.state.defaultSet = p.state.defaultSet.Difference(result)
	return result, nil
}

// updateCPUsToReuse: an init container's CPUs are reused by the containers after it (not a
// sidecar's: it keeps running).
func (p *staticPolicy) updateCPUsToReuse(pod *v1.Pod, c *v1.Container, set cpuset.CPUSet) {
	uid := string(pod.UID)
	for other := range p.cpusToReuse {
		if other != uid {
			delete(p.cpusToReuse, other)
		}
	}
	if _, ok := p.cpusToReuse[uid]; !ok {
		p.cpusToReuse[uid] = cpuset.New()
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if c.Name == ic.Name {
			if p.release.has(SidecarAware) && IsRestartableInitContainer(ic) {
				break
			}
			p.cpusToReuse[uid] = p.cpusToReuse[uid].Union(set)
			return
		}
	}
	p.cpusToReuse[uid] = p.cpusToReuse[uid].Difference(set)
}

// Allocate is the static policy's Allocate for one container.
func (p *staticPolicy) Allocate(pod *v1.Pod, c *v1.Container) error {
	numCPUs := p.guaranteedCPUs(pod, c)
	if numCPUs == 0 || p.gates.skips(pod) {
		return nil
	}
	uid := string(pod.UID)
	if p.release.has(SMTCheckBeforeReuse) {
		if err := p.enforceSMTAlignment(numCPUs); err != nil {
			return err
		}
	}
	if set, ok := p.state.get(uid, c.Name); ok {
		p.updateCPUsToReuse(pod, c, set)
		return nil
	}
	if !p.release.has(SMTCheckBeforeReuse) {
		if err := p.enforceSMTAlignment(numCPUs); err != nil {
			return err
		}
	}
	hint := p.affinity.GetAffinity(uid, c.Name)
	set, err := p.allocateCPUs(numCPUs, hint.NUMANodeAffinity, p.cpusToReuse[uid])
	if err != nil {
		return err
	}
	p.state.set(uid, c.Name, set)
	p.updateCPUsToReuse(pod, c, set)
	return nil
}

// validatePodScopeResources: a pod with pod-level CPUs must leave some for its shared containers.
func (p *staticPolicy) validatePodScopeResources(pod *v1.Pod) error {
	total := p.podGuaranteedCPUs(pod)
	shared, exclusive := false, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := p.guaranteedCPUs(pod, c)
		switch {
		case !IsRestartableInitContainer(c):
			if n == 0 && exclusive >= total {
				return errors.New("pod rejected, pod has shared init containers but no cpus available for them")
			}
		case n == 0:
			shared = true
		default:
			exclusive += n
		}
	}
	for i := range pod.Spec.Containers {
		if n := p.guaranteedCPUs(pod, &pod.Spec.Containers[i]); n == 0 {
			shared = true
		} else {
			exclusive += n
		}
	}
	if shared && exclusive >= total {
		return errors.New("pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no cpus for shared containers")
	}
	return nil
}

// AllocatePod is the static policy's AllocatePod (pod-level resources, pod scope): one CPU set
// for the pod, carved into the exclusive containers' sets; the rest is the pod's shared pool.
func (p *staticPolicy) AllocatePod(pod *v1.Pod) error {
	uid := string(pod.UID)
	total := p.podGuaranteedCPUs(pod)
	if total == 0 {
		return nil
	}
	if podSet, ok := p.state.podEntries[uid]; ok && !podSet.IsEmpty() && p.release.has(PodCPUsKeptOnReadmit) {
		switch p.podAllocationStaleness(pod, podSet) {
		case notStale:
			return p.restorePodAllocation(pod, podSet)
		case staleOverlap:
			delete(p.state.podEntries, uid) // its CPUs are in the shared pool already
		default:
			p.releasePodAllocation(uid, podSet)
		}
	}
	if err := p.validatePodScopeResources(pod); err != nil {
		return reasonError{ReasonEmptyPodSharedPool, err.Error()}
	}
	if err := p.enforceSMTAlignment(total); err != nil {
		return err
	}
	containers := podContainers(pod)
	hint := p.affinity.GetAffinity(uid, containers[0].Name)
	podSet, err := p.allocateCPUs(total, hint.NUMANodeAffinity, cpuset.New())
	if err != nil {
		return err
	}
	p.state.podEntries[uid] = podSet
	exclusive, shared, _, err := p.partitionPodCPUs(pod, podSet, nil, hint.NUMANodeAffinity.Count())
	if err != nil {
		return err
	}
	p.assignPodContainers(uid, containers, exclusive, shared)
	return nil
}

// assignPodContainers records each container's part of a pod's CPU set: its exclusive set, or
// the pod's shared pool.
func (p *staticPolicy) assignPodContainers(uid string, containers []v1.Container, exclusive map[string]cpuset.CPUSet, shared cpuset.CPUSet) {
	for _, c := range containers {
		if set, ok := exclusive[c.Name]; ok {
			p.state.set(uid, c.Name, set)
		} else {
			p.state.set(uid, c.Name, shared)
		}
	}
}

// partitionPodCPUs carves a pod's CPU set into its containers' (init containers first, a
// sidecar's CPUs kept from those after it): the exclusive sets, the pod's shared pool, and how
// many containers were not in restored (assignments kept from the state, PodCPUsKeptOnReadmit).
func (p *staticPolicy) partitionPodCPUs(pod *v1.Pod, podSet cpuset.CPUSet, restored map[string]cpuset.CPUSet, hintNUMAs int) (map[string]cpuset.CPUSet, cpuset.CPUSet, int, error) {
	exclusive := map[string]cpuset.CPUSet{}
	sidecars := cpuset.New()
	missing := 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		kept, isKept := restored[c.Name]
		if !isKept {
			missing++
		}
		if n := p.guaranteedCPUs(pod, c); n > 0 {
			set := kept
			if !isKept {
				var err error
				if set, err = p.takeByTopology(podSet.Difference(sidecars), n, hintNUMAs); err != nil {
					return nil, cpuset.New(), 0, err
				}
			}
			exclusive[c.Name] = set
			if IsRestartableInitContainer(c) {
				sidecars = sidecars.Union(set)
			}
		} else if !IsRestartableInitContainer(c) {
			exclusive[c.Name] = podSet.Difference(sidecars)
			if isKept {
				exclusive[c.Name] = kept
			}
		}
	}
	shared := podSet.Difference(sidecars)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		kept, isKept := restored[c.Name]
		if !isKept {
			missing++
		}
		if n := p.guaranteedCPUs(pod, c); n > 0 {
			set := kept
			if !isKept {
				var err error
				if set, err = p.takeByTopology(shared, n, hintNUMAs); err != nil {
					return nil, cpuset.New(), 0, err
				}
			}
			exclusive[c.Name] = set
			shared = shared.Difference(set)
		}
	}
	return exclusive, shared, missing, nil
}

// The staleness of a pod-level CPU set found in the state at (re-)admission
// (podAllocationStaleness, 1.38).
const (
	notStale     = iota
	staleOverlap // it overlaps the shared pool: an interrupted release
	staleNonPrefix
)

func (p *staticPolicy) podAllocationStaleness(pod *v1.Pod, podSet cpuset.CPUSet) int {
	if !podSet.Intersection(p.state.defaultSet).IsEmpty() {
		return staleOverlap
	}
	// The container assignments must cover a prefix of the pod's containers, and only them.
	assigned := p.state.assignments[string(pod.UID)]
	matched, gap := 0, false
	for _, c := range podContainers(pod) {
		if _, ok := assigned[c.Name]; !ok {
			gap = true
			continue
		}
		if gap {
			return staleNonPrefix
		}
		matched++
	}
	if matched != len(assigned) {
		return staleNonPrefix
	}
	return notStale
}

// restorePodAllocation keeps a re-admitted pod's CPU set and the assignments the state holds,
// and carves the missing ones from it; when they cannot be, the pod releases everything.
func (p *staticPolicy) restorePodAllocation(pod *v1.Pod, podSet cpuset.CPUSet) error {
	uid := string(pod.UID)
	restored := maps.Clone(p.state.assignments[uid])
	if restored == nil {
		restored = map[string]cpuset.CPUSet{} // nil would mean "allocate every container"
	}
	containers := podContainers(pod)
	hint := p.affinity.GetAffinity(uid, containers[0].Name)
	exclusive, shared, missing, err := p.partitionPodCPUs(pod, podSet, restored, hint.NUMANodeAffinity.Count())
	if err != nil {
		p.releasePodAllocation(uid, podSet)
		return err
	}
	if missing == 0 {
		return nil
	}
	p.assignPodContainers(uid, containers, exclusive, shared)
	return nil
}

// releasePodAllocation gives a pod's whole CPU set back to the shared pool.
func (p *staticPolicy) releasePodAllocation(uid string, podSet cpuset.CPUSet) {
	for ctr := range p.state.assignments[uid] {
		p.state.delete(uid, ctr)
	}
	p.state.defaultSet = p.state.defaultSet.Union(podSet)
	delete(p.state.podEntries, uid)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
