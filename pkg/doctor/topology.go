package doctor

import (
	"sort"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// cpuInfo is one CPU as the CPU manager's topology.Discover records it.
type cpuInfo struct {
	Core, Socket, NUMA int
	// Uncore is the L3 cache id; without one, the socket (as topology.Discover falls back).
	Uncore int
}

// cpuTopology is the CPU manager's CPUTopology built from a machine the way cadvisor and
// topology.Discover do: a core is the threads sharing (NUMA node, socket, core id), and its id
// is its lowest thread.
type cpuTopology struct {
	NumCPUs, NumSockets, NumCores, NumNUMANodes int
	Details                                     map[int]cpuInfo
}

func discover(m *machine.Machine) *cpuTopology {
	type key struct{ numa, socket, core int }
	cores := map[key][]int{}
	uncore := map[key]int{}
	for _, c := range m.CPUs {
		k := key{c.NUMA, c.Socket, c.Core}
		cores[k] = append(cores[k], c.ID)
		if c.UncoreCache != nil {
			uncore[k] = *c.UncoreCache
		} else if _, ok := uncore[k]; !ok {
			uncore[k] = c.Socket
		}
	}
	t := &cpuTopology{NumCPUs: len(m.CPUs), NumSockets: m.Sockets(), NumCores: len(cores), Details: map[int]cpuInfo{}}
	numas := map[int]bool{}
	for k, threads := range cores {
		id := threads[0]
		for _, th := range threads {
			id = min(id, th)
		}
		for _, th := range threads {
			t.Details[th] = cpuInfo{Core: id, Socket: k.socket, NUMA: k.numa, Uncore: uncore[k]}
		}
		numas[k.numa] = true
	}
	t.NumNUMANodes = len(numas)
	return t
}

func (t *cpuTopology) CPUs() cpuset.CPUSet {
	ids := make([]int, 0, len(t.Details))
	for id := range t.Details {
		ids = append(ids, id)
	}
	return cpuset.New(ids...)
}

func (t *cpuTopology) CPUsPerCore() int {
	if t.NumCores == 0 {
		return 0
	}
	return t.NumCPUs / t.NumCores
}

func (t *cpuTopology) CPUsPerSocket() int {
	if t.NumSockets == 0 {
		return 0
	}
	return t.NumCPUs / t.NumSockets
}

// details is a CPUDetails: a subset of the topology's CPUs.
type details map[int]cpuInfo

func (d details) keepOnly(s cpuset.CPUSet) details {
	out := details{}
	for id, info := range d {
		if s.Contains(id) {
			out[id] = info
		}
	}
	return out
}

func (d details) cpus() cpuset.CPUSet {
	ids := make([]int, 0, len(d))
	for id := range d {
		ids = append(ids, id)
	}
	return cpuset.New(ids...)
}

// collect returns the ids selected by of over the CPUs that match keep.
func (d details) collect(keep func(cpuInfo) bool, of func(int, cpuInfo) int) []int {
	set := map[int]bool{}
	for id, info := range d {
		if keep(info) {
			set[of(id, info)] = true
		}
	}
	out := make([]int, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

func all(cpuInfo) bool              { return true }
func cpuID(id int, _ cpuInfo) int   { return id }
func coreOf(_ int, i cpuInfo) int   { return i.Core }
func socketOf(_ int, i cpuInfo) int { return i.Socket }
func numaOf(_ int, i cpuInfo) int   { return i.NUMA }
func uncoreOf(_ int, i cpuInfo) int { return i.Uncore }

func (d details) cpusIn(field func(int, cpuInfo) int, ids ...int) cpuset.CPUSet {
	want := map[int]bool{}
	for _, id := range ids {
		want[id] = true
	}
	return cpuset.New(d.collect(func(i cpuInfo) bool { return want[field(0, i)] }, cpuID)...)
}

// accumulator is the CPU manager's cpuAccumulator, for what start needs: choosing the reserved
// CPUs from a fresh machine (takeByTopologyNUMAPacked).
type accumulator struct {
	topo    *cpuTopology
	details details
	needed  int
	result  cpuset.CPUSet
	spread  bool // CPUSortingStrategySpread (distribute-cpus-across-cores)
	// numaFirst: NUMA nodes are the bigger unit (sockets >= NUMA nodes).
	numaFirst bool
}

func newAccumulator(t *cpuTopology, available cpuset.CPUSet, n int, spread bool) *accumulator {
	return &accumulator{topo: t, details: details(t.Details).keepOnly(available), needed: n, result: cpuset.New(),
		spread: spread, numaFirst: t.NumSockets >= t.NumNUMANodes}
}

// count is how many CPUs each value of field holds.
func (d details) count(field func(int, cpuInfo) int) map[int]int {
	out := map[int]int{}
	for id, info := range d {
		out[field(id, info)]++
	}
	return out
}

// sortIDs orders ids by how many available CPUs each holds, then by id (cpuAccumulator.sort).
func (a *accumulator) sortIDs(ids []int, field func(int, cpuInfo) int) []int {
	size := a.details.count(field)
	sort.SliceStable(ids, func(i, j int) bool {
		if size[ids[i]] != size[ids[j]] {
			return size[ids[i]] < size[ids[j]]
		}
		return ids[i] < ids[j]
	})
	return ids
}

func (a *accumulator) within(field func(int, cpuInfo) int, id int, of func(int, cpuInfo) int) []int {
	return a.details.collect(func(i cpuInfo) bool { return field(0, i) == id }, of)
}

func (a *accumulator) sortedNUMANodes() []int {
	if a.numaFirst {
		return a.sortIDs(a.details.collect(all, numaOf), numaOf)
	}
	var out []int
	for _, s := range a.sortedSockets() {
		out = append(out, a.sortIDs(a.within(socketOf, s, numaOf), numaOf)...)
	}
	return out
}

func (a *accumulator) sortedSockets() []int {
	if !a.numaFirst {
		return a.sortIDs(a.details.collect(all, socketOf), socketOf)
	}
	var out []int
	for _, n := range a.sortedNUMANodes() {
		out = append(out, a.sortIDs(a.within(numaOf, n, socketOf), socketOf)...)
	}
	return out
}

func (a *accumulator) sortedCores() []int {
	var out []int
	if a.numaFirst {
		for _, s := range a.sortedSockets() {
			out = append(out, a.sortIDs(a.within(socketOf, s, coreOf), coreOf)...)
		}
		return out
	}
	for _, n := range a.sortedNUMANodes() {
		out = append(out, a.sortIDs(a.within(numaOf, n, coreOf), coreOf)...)
	}
	return out
}

func (a *accumulator) sortedCPUs() []int {
	var out []int
	if a.spread {
		for _, s := range a.sortedSockets() {
			out = append(out, a.within(socketOf, s, cpuID)...)
		}
		return out
	}
	for _, c := range a.sortedCores() {
		out = append(out, a.within(coreOf, c, cpuID)...)
	}
	return out
}

func (a *accumulator) take(s cpuset.CPUSet) {
	a.result = a.result.Union(s)
	a.details = a.details.keepOnly(a.details.cpus().Difference(a.result))
	a.needed -= s.Size()
}

// takeFull takes every free unit (NUMA node, socket, core) that still fits, in order. A unit
// is free when all its CPUs are available; want(id) is how many CPUs that is.
func (a *accumulator) takeFull(ids []int, field func(int, cpuInfo) int, want func(id int, total map[int]int) int) {
	all := details(a.topo.Details)
	total := all.count(field)
	avail := a.details.count(field)
	for _, id := range ids {
		if avail[id] != want(id, total) {
			continue
		}
		if a.needed < total[id] {
			continue
		}
		a.take(all.cpusIn(field, id))
		avail = a.details.count(field)
	}
}

func (a *accumulator) takeFullNUMANodes() {
	a.takeFull(a.sortedNUMANodes(), numaOf, func(id int, total map[int]int) int { return total[id] })
}

func (a *accumulator) takeFullSockets() {
	a.takeFull(a.sortedSockets(), socketOf, func(int, map[int]int) int { return a.topo.CPUsPerSocket() })
}

func (a *accumulator) takeFullCores() {
	a.takeFull(a.sortedCores(), coreOf, func(int, map[int]int) int { return a.topo.CPUsPerCore() })
}

func (a *accumulator) satisfied() bool { return a.needed < 1 }

// sortedUncores lists the uncore caches NUMA node by NUMA node, fewest available CPUs first.
func (a *accumulator) sortedUncores() []int {
	var out []int
	for _, n := range a.sortedNUMANodes() {
		out = append(out, a.sortIDs(a.within(numaOf, n, uncoreOf), uncoreOf)...)
	}
	return out
}

// takeUncoreCache is prefer-align-cpus-by-uncorecache: whole caches while they fit, else the
// first cores of one cache when they are exactly enough.
func (a *accumulator) takeUncoreCache() {
	all := details(a.topo.Details)
	total := all.count(uncoreOf)
	perUncore := 0
	if len(total) > 0 {
		perUncore = a.topo.NumCPUs / len(total)
	}
	for _, u := range a.sortedUncores() {
		if a.needed >= perUncore {
			a.takeFull(a.sortedUncores(), uncoreOf, func(id int, total map[int]int) int { return total[id] })
		}
		if a.satisfied() {
			return
		}
		a.takePartialUncore(u)
		if a.satisfied() {
			return
		}
	}
}

func (a *accumulator) takePartialUncore(u int) {
	perCore := a.topo.CPUsPerCore()
	if perCore == 0 {
		return
	}
	cores := a.within(uncoreOf, u, coreOf)
	if need := (a.needed + perCore - 1) / perCore; len(cores) > need {
		cores = cores[:need]
	}
	free := a.details.cpusIn(coreOf, cores...)
	if a.needed%2 != 0 && perCore > 1 {
		if list := free.List(); len(list) > a.needed {
			free = cpuset.New(list[:len(list)-1]...)
		}
	}
	if free.Size() == a.needed {
		a.take(free)
	}
}

// takeByTopology is takeByTopologyNUMAPacked; on failure it returns the empty set, as the
// kubelet does (NewStaticPolicy then reports the size mismatch).
func takeByTopology(t *cpuTopology, available cpuset.CPUSet, n int, spread, preferUncore bool) cpuset.CPUSet {
	a := newAccumulator(t, available, n, spread)
	if a.satisfied() {
		return a.result
	}
	if a.needed > a.details.cpus().Size() {
		return cpuset.New()
	}
	steps := []func(){a.takeFullNUMANodes, a.takeFullSockets}
	if !a.numaFirst {
		steps = []func(){a.takeFullSockets, a.takeFullNUMANodes}
	}
	if preferUncore {
		steps = append(steps, a.takeUncoreCache)
	}
	if !spread {
		steps = append(steps, a.takeFullCores)
	}
	for _, step := range steps {
		step()
		if a.satisfied() {
			return a.result
		}
	}
	for _, cpu := range a.sortedCPUs() {
		a.take(cpuset.New(cpu))
		if a.satisfied() {
			return a.result
		}
	}
	return cpuset.New()
}
