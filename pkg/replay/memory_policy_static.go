package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	v1 "k8s.io/api/core/v1"
)

// The memory manager's Static policy (memorymanager/policy_static.go): its Start (restore and
// validateState), and the admission side: GetTopologyHints, GetPodTopologyHints, Allocate,
// AllocatePod, RemoveContainer.

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
	// sidecarAware, violationCheck and skipsNoRequest are the release's rows (releases.go);
	// keepsPodMemory is PodMemoryKeptOnReadmit.
	sidecarAware, violationCheck, skipsNoRequest, keepsPodMemory bool
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
	if e.release.has(PodLevelEntries) && m.gates.levelManagers {
		for pod, blocks := range ms.PodEntries {
			m.podEntries[pod] = cloneBlocks(blocks)
		}
	}
}

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
	podLevel := e.release.has(PodLevelEntries) && e.gate(decode.GatePodLevelResourceManagers)
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
	if !statesEqual(machineState(ms.MachineState), expected, e.release.has(GroupedMemoryCompare)) {
		return &stateMismatch{details: diffStates(machineState(ms.MachineState), expected)}
	}
	return nil
}

func cloneBlocks(b []decode.MemoryBlock) []decode.MemoryBlock {
	out := make([]decode.MemoryBlock, len(b))
	for i, x := range b {
		out[i] = decode.MemoryBlock{NUMAAffinity: append([]int(nil), x.NUMAAffinity...), Type: x.Type, Size: x.Size}
	}
	return out
}

func (p *memoryStaticPolicy) blocks(pod, ctr string) []decode.MemoryBlock {
	return p.assignments[pod][ctr]
}

func (p *memoryStaticPolicy) setBlocks(pod, ctr string, b []decode.MemoryBlock) {
	if p.assignments[pod] == nil {
		p.assignments[pod] = map[string][]decode.MemoryBlock{}
	}
	p.assignments[pod][ctr] = b
}

// MemoryBlocks is the container's memory assignment, nil when the manager pins nothing.
func (p *memoryStaticPolicy) MemoryBlocks(podUID, container string) []decode.MemoryBlock {
	return p.blocks(podUID, container)
}

// containerRequests is getContainerRequestedResources: memory and hugepages, in bytes.
func (p *memoryStaticPolicy) containerRequests(pod *v1.Pod, c *v1.Container) (map[string]uint64, error) {
	out := map[string]uint64{}
	if p.gates.podLevel(pod) && !isContainerEquivalentQOSGuaranteed(c) {
		return out, nil
	}
	for name, q := range c.Resources.Requests {
		if name != v1.ResourceMemory && !IsHugePages(string(name)) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok {
			return nil, errors.New("[memorymanager] failed to represent quantity as int64")
		}
		out[string(name)] = uint64(v)
	}
	return out, nil
}

// podRequests is getPodRequestedResources: the larger of the biggest init container (with the
// sidecars before it) and the long-running containers together, per resource.
func (p *memoryStaticPolicy) podRequests(pod *v1.Pod) (map[string]uint64, error) {
	if p.gates.podLevel(pod) {
		out := map[string]uint64{}
		for name, q := range pod.Spec.Resources.Requests {
			if name != v1.ResourceMemory && !IsHugePages(string(name)) {
				continue
			}
			v, ok := q.AsInt64()
			if !ok {
				return nil, errors.New("[memorymanager] failed to represent quantity as int64")
			}
			if v > 0 {
				out[string(name)] = uint64(v)
			}
		}
		return out, nil
	}
	byInit, byRestartable := map[string]uint64{}, map[string]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reqs, err := p.containerRequests(pod, c)
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			if p.sidecarAware && IsRestartableInitContainer(c) {
				byRestartable[name] += q
			} else if byRestartable[name]+q > byInit[name] {
				byInit[name] = byRestartable[name] + q
			}
		}
	}
	byApp := map[string]uint64{}
	for i := range pod.Spec.Containers {
		reqs, err := p.containerRequests(pod, &pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			byApp[name] += q
		}
	}
	out := map[string]uint64{}
	for name := range byApp {
		out[name] = max(byApp[name]+byRestartable[name], byInit[name])
	}
	return out, nil
}

// GetTopologyHints is the Static policy's container hints.
func (p *memoryStaticPolicy) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	if p.gates.podQOS(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	reqs, err := p.containerRequests(pod, c)
	if err != nil || len(reqs) == 0 || p.gates.skips(pod) {
		return nil
	}
	if blocks := p.blocks(string(pod.UID), c.Name); blocks != nil {
		return regenerateHints(blocks, reqs)
	}
	return p.calculateHints(pod, reqs)
}

// GetPodTopologyHints is the Static policy's pod hints (pod scope).
func (p *memoryStaticPolicy) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	if p.gates.podQOS(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	reqs, err := p.podRequests(pod)
	if err != nil || p.gates.skips(pod) {
		return nil
	}
	// Exclusive memory taking the whole pod-level budget: empty hints, so the topology
	// manager refuses the pod before AllocatePod says why.
	if p.gates.podLevel(pod) && p.validatePodScopeResources(pod) != nil {
		hints := map[string][]TopologyHint{}
		for name := range reqs {
			hints[name] = []TopologyHint{}
		}
		return hints
	}
	if len(reqs) == 0 {
		return nil
	}
	if p.keepsPodMemory && p.gates.podLevel(pod) {
		if blocks, ok := p.podEntries[string(pod.UID)]; ok {
			return regenerateHints(blocks, reqs)
		}
	}
	for _, c := range podContainers(pod) {
		if blocks := p.blocks(string(pod.UID), c.Name); blocks != nil {
			return regenerateHints(blocks, reqs)
		}
	}
	return p.calculateHints(pod, reqs)
}

// regenerateHints: a container already holding its memory gets its own affinity back.
func regenerateHints(blocks []decode.MemoryBlock, reqs map[string]uint64) map[string][]TopologyHint {
	hints := map[string][]TopologyHint{}
	for name := range reqs {
		hints[name] = []TopologyHint{}
	}
	if len(blocks) != len(reqs) {
		return nil
	}
	for _, b := range blocks {
		if q, ok := reqs[b.Type]; !ok || q != b.Size {
			return nil
		}
		mask, err := NewBitMask(b.NUMAAffinity...)
		if err != nil {
			return nil
		}
		hints[b.Type] = append(hints[b.Type], TopologyHint{mask, true})
	}
	return hints
}

func (p *memoryStaticPolicy) nodeIDs() []int { return slices.Sorted(maps.Keys(p.machineState)) }

// table is the node's table for a resource; an empty one where the node lacks it (the
// kubelet's nil dereference, which it never reaches for resources the machine has).
func (p *memoryStaticPolicy) table(node int, name string) *decode.MemoryTable {
	if n := p.machineState[node]; n != nil {
		if t := n.MemoryMap[name]; t != nil {
			return t
		}
	}
	return &decode.MemoryTable{}
}

// calculateHints lists the NUMA masks whose memory can hold the request; a single node
// already grouped with others, or a node in another group, is no candidate.
func (p *memoryStaticPolicy) calculateHints(pod *v1.Pod, reqs map[string]uint64) map[string][]TopologyHint {
	nodes := p.nodeIDs()
	minAffinitySize := len(nodes)
	hints := map[string][]TopologyHint{}
	iterateBitMasks(nodes, func(mask BitMask) {
		bits := mask.GetBits()
		single := len(bits) == 1
		free, allocatable := map[string]uint64{}, map[string]uint64{}
		for _, id := range bits {
			for name := range reqs {
				free[name] += p.table(id, name).Free
				allocatable[name] += p.table(id, name).Allocatable
			}
		}
		for name, q := range reqs {
			if allocatable[name] < q {
				return
			}
		}
		if mask.Count() < minAffinitySize {
			minAffinitySize = mask.Count()
		}
		if single && len(p.machineState[bits[0]].Cells) > 1 {
			return
		}
		for _, id := range bits {
			if !single && p.machineState[id].NumberOfAssignments > 0 {
				if len(p.machineState[id].Cells) == 1 || !sameCells(p.machineState[id].Cells, bits) {
					return
				}
			}
		}
		for name, q := range reqs {
			if free[name]+p.podReusableMemory(pod, mask, name) < q {
				return
			}
		}
		for name := range reqs {
			hints[name] = append(hints[name], TopologyHint{NUMANodeAffinity: mask})
		}
	})
	for name := range reqs {
		for i := range hints[name] {
			hints[name][i].Preferred = hints[name][i].NUMANodeAffinity.Count() == minAffinitySize
		}
	}
	return hints
}

func (p *memoryStaticPolicy) podReusableMemory(pod *v1.Pod, mask BitMask, name string) uint64 {
	return p.initContainersReusableMemory[string(pod.UID)][mask.String()][name]
}

func findBestHint(hints []TopologyHint) TopologyHint {
	var best TopologyHint
	for _, h := range hints {
		switch {
		case best.NUMANodeAffinity == 0:
			best = h
		case h.Preferred && !best.Preferred:
			best = h
		case h.Preferred == best.Preferred && h.NUMANodeAffinity.IsNarrowerThan(best.NUMANodeAffinity):
			best = h
		}
	}
	return best
}

func (p *memoryStaticPolicy) satisfies(mask BitMask, reqs map[string]uint64) bool {
	free := map[string]uint64{}
	for _, id := range mask.GetBits() {
		for name := range reqs {
			free[name] += p.table(id, name).Free
		}
	}
	for name, q := range reqs {
		if free[name] < q {
			return false
		}
	}
	return true
}

// isHintInGroup: every node of hint is in group.
func isHintInGroup(hint, group []int) bool {
	for _, id := range hint {
		if !slices.Contains(group, id) {
			return false
		}
	}
	return true
}

func (p *memoryStaticPolicy) violatesNUMAAllocations(mask BitMask) bool {
	bits := mask.GetBits()
	for _, id := range bits {
		n := p.machineState[id]
		if n == nil || n.NumberOfAssignments == 0 || len(bits) == 1 {
			continue
		}
		if len(n.Cells) == 1 || !sameCells(n.Cells, bits) {
			return true
		}
	}
	return false
}

// Allocate is the Static policy's Allocate for one container.
func (p *memoryStaticPolicy) Allocate(pod *v1.Pod, c *v1.Container) error {
	if p.gates.podQOS(pod) != v1.PodQOSGuaranteed || p.gates.skips(pod) {
		return nil
	}
	reqs, err := p.containerRequests(pod, c)
	if err != nil {
		return err
	}
	if len(reqs) == 0 && p.skipsNoRequest {
		return nil
	}
	uid := string(pod.UID)
	if blocks := p.blocks(uid, c.Name); blocks != nil {
		p.updatePodReusableMemory(pod, c, blocks)
		return nil
	}
	best, err := p.chooseHint(pod, p.affinity.GetAffinity(uid, c.Name), reqs)
	if err != nil {
		return err
	}
	bits := best.NUMANodeAffinity.GetBits()
	var blocks []decode.MemoryBlock
	// The kubelet walks a map; blocks are kept sorted by type, as the vectors list them.
	for _, name := range slices.Sorted(maps.Keys(reqs)) {
		size := reqs[name]
		blocks = append(blocks, decode.MemoryBlock{NUMAAffinity: bits, Size: size, Type: name})
		if reusable := p.podReusableMemory(pod, best.NUMANodeAffinity, name); reusable >= size {
			size = 0
		} else {
			size -= reusable
		}
		p.updateMachineState(bits, name, size)
	}
	p.updatePodReusableMemory(pod, c, blocks)
	p.setBlocks(uid, c.Name, blocks)
	p.updateInitContainersMemoryBlocks(pod, c, blocks)
	return nil
}

// chooseHint is the affinity an allocation uses: the topology manager's, else the default
// hint; extended to more NUMA nodes when those lack the memory; refused when it would mix NUMA
// groups (releases with that check).
func (p *memoryStaticPolicy) chooseHint(pod *v1.Pod, hint TopologyHint, reqs map[string]uint64) (TopologyHint, error) {
	best := hint
	if hint.NUMANodeAffinity == 0 {
		hints := p.calculateHints(pod, reqs)
		if len(hints) < 1 {
			return best, errors.New("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		def := findBestHint(hints[string(v1.ResourceMemory)])
		if !def.Preferred && best.Preferred {
			return best, errors.New("[memorymanager] failed to find the default preferred hint")
		}
		best = def
	}
	if !p.satisfies(best.NUMANodeAffinity, reqs) {
		var filtered []TopologyHint
		for _, h := range p.calculateHints(pod, reqs)[string(v1.ResourceMemory)] {
			if isHintInGroup(best.NUMANodeAffinity.GetBits(), h.NUMANodeAffinity.GetBits()) {
				filtered = append(filtered, h)
			}
		}
		if len(filtered) < 1 {
			return best, errors.New("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		extended := findBestHint(filtered)
		if !extended.Preferred && best.Preferred {
			return best, errors.New("[memorymanager] failed to find the extended preferred hint")
		}
		best = extended
	}
	if p.violationCheck && p.violatesNUMAAllocations(best.NUMANodeAffinity) {
		return best, errors.New("[memorymanager] preferred hint violates NUMA node allocation")
	}
	return best, nil
}

// validatePodScopeResources: a pod with pod-level memory must leave some for its shared
// containers.
func (p *memoryStaticPolicy) validatePodScopeResources(pod *v1.Pod) error {
	total, err := p.podRequests(pod)
	if err != nil {
		return err
	}
	shared, exclusive := false, map[string]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reqs, err := p.containerRequests(pod, c)
		if err != nil {
			return err
		}
		switch {
		case !IsRestartableInitContainer(c):
			if len(reqs) == 0 {
				for _, name := range slices.Sorted(maps.Keys(total)) {
					if exclusive[name] >= total[name] {
						return fmt.Errorf("pod rejected, pod has shared init containers but no %s available for them", name)
					}
				}
			}
		case len(reqs) == 0:
			shared = true
		default:
			for name, q := range reqs {
				exclusive[name] += q
			}
		}
	}
	for i := range pod.Spec.Containers {
		reqs, err := p.containerRequests(pod, &pod.Spec.Containers[i])
		if err != nil {
			return err
		}
		if len(reqs) == 0 {
			shared = true
		}
		for name, q := range reqs {
			exclusive[name] += q
		}
	}
	if shared {
		for _, name := range slices.Sorted(maps.Keys(total)) {
			if exclusive[name] >= total[name] {
				return fmt.Errorf("pod rejected, sum of exclusive container %s requests equals pod budget, leaving no memory for shared containers", name)
			}
		}
	}
	return nil
}

// AllocatePod is the Static policy's AllocatePod (pod-level resources, pod scope): the pod's
// memory at once; exclusive containers get their own blocks, the others the pod's shared pool.
func (p *memoryStaticPolicy) AllocatePod(pod *v1.Pod) error {
	if p.gates.podQOS(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	uid := string(pod.UID)
	if _, ok := p.podEntries[uid]; ok && p.keepsPodMemory {
		return nil // re-admitted: it keeps the memory it holds
	}
	total, err := p.podRequests(pod)
	if err != nil {
		return nil // the kubelet logs it and allocates nothing
	}
	if err := p.validatePodScopeResources(pod); err != nil {
		return reasonError{ReasonEmptyPodSharedPool, err.Error()}
	}
	containers := podContainers(pod)
	best, err := p.chooseHint(pod, p.affinity.GetAffinity(uid, containers[0].Name), total)
	if err != nil {
		return err
	}
	bits := best.NUMANodeAffinity.GetBits()
	blocksOf := func(reqs map[string]uint64) []decode.MemoryBlock {
		out := []decode.MemoryBlock{}
		for _, name := range slices.Sorted(maps.Keys(reqs)) {
			if reqs[name] > 0 {
				out = append(out, decode.MemoryBlock{NUMAAffinity: bits, Size: reqs[name], Type: name})
			}
		}
		return out
	}
	exclusive := map[string][]decode.MemoryBlock{}
	sidecars := map[string]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reqs, err := p.containerRequests(pod, c)
		if err != nil {
			return err
		}
		if len(reqs) == 0 {
			if IsRestartableInitContainer(c) {
				continue
			}
			runnable := map[string]uint64{}
			for name, t := range total {
				runnable[name] = t - sidecars[name]
			}
			exclusive[c.Name] = blocksOf(runnable)
			continue
		}
		exclusive[c.Name] = blocksOf(reqs)
		if IsRestartableInitContainer(c) {
			for name, q := range reqs {
				sidecars[name] += q
			}
		}
	}
	pool := map[string]uint64{}
	for name, t := range total {
		pool[name] = t - sidecars[name]
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		reqs, err := p.containerRequests(pod, c)
		if err != nil {
			return err
		}
		if len(reqs) == 0 {
			continue
		}
		exclusive[c.Name] = blocksOf(reqs)
		for name, q := range reqs {
			if q > 0 {
				pool[name] -= q
			}
		}
	}
	podBlocks := []decode.MemoryBlock{}
	for _, name := range slices.Sorted(maps.Keys(total)) {
		podBlocks = append(podBlocks, decode.MemoryBlock{NUMAAffinity: bits, Size: total[name], Type: name})
	}
	p.podEntries[uid] = podBlocks
	for _, name := range slices.Sorted(maps.Keys(total)) {
		p.updateMachineState(bits, name, total[name])
	}
	shared := blocksOf(pool)
	for _, c := range containers {
		if b, ok := exclusive[c.Name]; ok {
			p.setBlocks(uid, c.Name, b)
		} else {
			p.setBlocks(uid, c.Name, shared)
		}
	}
	return nil
}

func (p *memoryStaticPolicy) updateMachineState(bits []int, name string, size uint64) {
	for _, id := range bits {
		n := p.machineState[id]
		n.NumberOfAssignments++
		n.Cells = bits
		size = reserve(p.table(id, name), size)
	}
}

func (p *memoryStaticPolicy) isRegularInitContainer(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return !p.sidecarAware || !IsRestartableInitContainer(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

func maskString(ids []int) string {
	mask, _ := NewBitMask(ids...)
	return mask.String()
}

func (p *memoryStaticPolicy) updatePodReusableMemory(pod *v1.Pod, c *v1.Container, blocks []decode.MemoryBlock) {
	uid := string(pod.UID)
	for other := range p.initContainersReusableMemory {
		if other != uid {
			delete(p.initContainersReusableMemory, other)
		}
	}
	if p.isRegularInitContainer(pod, c) {
		if p.initContainersReusableMemory[uid] == nil {
			p.initContainersReusableMemory[uid] = map[string]map[string]uint64{}
		}
		for _, b := range blocks {
			key := maskString(b.NUMAAffinity)
			if p.initContainersReusableMemory[uid][key] == nil {
				p.initContainersReusableMemory[uid][key] = map[string]uint64{}
			}
			if b.Size > p.initContainersReusableMemory[uid][key][b.Type] {
				p.initContainersReusableMemory[uid][key][b.Type] = b.Size
			}
		}
		return
	}
	for _, b := range blocks {
		key := maskString(b.NUMAAffinity)
		reusable := p.initContainersReusableMemory[uid][key][b.Type]
		if reusable == 0 {
			continue
		}
		if b.Size >= reusable {
			p.initContainersReusableMemory[uid][key][b.Type] = 0
		} else {
			p.initContainersReusableMemory[uid][key][b.Type] -= b.Size
		}
	}
}

// updateInitContainersMemoryBlocks shrinks the blocks of the init containers before this one
// by what this one reuses.
func (p *memoryStaticPolicy) updateInitContainersMemoryBlocks(pod *v1.Pod, c *v1.Container, blocks []decode.MemoryBlock) {
	uid := string(pod.UID)
	for _, cb := range blocks {
		size := cb.Size
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.Name == c.Name || size == 0 {
				break
			}
			if p.sidecarAware && IsRestartableInitContainer(ic) {
				continue
			}
			icBlocks := p.blocks(uid, ic.Name)
			if len(icBlocks) == 0 {
				continue
			}
			for j := range icBlocks {
				b := &icBlocks[j]
				if b.Size == 0 || b.Type != cb.Type || maskString(b.NUMAAffinity) != maskString(cb.NUMAAffinity) {
					continue
				}
				if b.Size > size {
					b.Size -= size
					size = 0
				} else {
					size -= b.Size
					b.Size = 0
				}
			}
			p.setBlocks(uid, ic.Name, icBlocks)
		}
	}
}

// removeStaleState frees the memory of containers no active pod has.
func (p *memoryStaticPolicy) removeStaleState(active map[string]map[string]bool) {
	for _, pod := range slices.Sorted(maps.Keys(p.assignments)) {
		for _, ctr := range slices.Sorted(maps.Keys(p.assignments[pod])) {
			if !active[pod][ctr] {
				p.removeContainer(pod, ctr)
			}
		}
	}
}

// removeContainer is the Static policy's RemoveContainer.
func (p *memoryStaticPolicy) removeContainer(pod, ctr string) {
	if podBlocks, ok := p.podEntries[pod]; ok && p.gates.levelManagers {
		delete(p.assignments[pod], ctr)
		if len(p.assignments[pod]) == 0 {
			delete(p.assignments, pod)
			p.releaseMemory(podBlocks)
			delete(p.podEntries, pod)
		}
		return
	}
	blocks := p.blocks(pod, ctr)
	if blocks == nil {
		return
	}
	delete(p.assignments[pod], ctr)
	if len(p.assignments[pod]) == 0 {
		delete(p.assignments, pod)
	}
	p.releaseMemory(blocks)
}

func (p *memoryStaticPolicy) releaseMemory(blocks []decode.MemoryBlock) {
	for _, b := range blocks {
		size := b.Size
		for _, id := range b.NUMAAffinity {
			n := p.machineState[id]
			if n == nil {
				continue
			}
			n.NumberOfAssignments--
			if n.NumberOfAssignments == 0 {
				n.Cells = []int{id}
			}
			if size == 0 {
				continue
			}
			t := p.table(id, b.Type)
			if t.Reserved == 0 {
				continue
			}
			if t.Reserved < size {
				size -= t.Reserved
				t.Free += t.Reserved
				t.Reserved = 0
				continue
			}
			t.Free += size
			t.Reserved -= size
			size = 0
		}
	}
}
