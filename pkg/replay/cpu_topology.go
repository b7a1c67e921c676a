package replay

import (
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// CPUInfo is one CPU as the CPU manager's topology.Discover records it.
type CPUInfo struct {
	NUMANodeID, SocketID, CoreID int
	// UncoreCacheID is the L3 cache id; without one, the socket (as topology.Discover falls back).
	UncoreCacheID int
}

// CPUDetails maps a CPU id to its place (cpumanager/topology.CPUDetails).
type CPUDetails map[int]CPUInfo

// CPUTopology is the CPU manager's CPUTopology.
type CPUTopology struct {
	NumCPUs, NumCores, NumUncoreCache, NumSockets, NumNUMANodes int
	CPUDetails                                                  CPUDetails
	// cpus is CPUDetails.CPUs(), kept by Discover (every admission asks for it); empty: not
	// kept, counted each time.
	cpus cpuset.CPUSet
}

// Discover builds the CPUTopology from a machine the way cadvisor and topology.Discover do: a
// core is the threads sharing (NUMA node, socket, core id), and its id is its lowest thread.
func Discover(m *machine.Machine) *CPUTopology {
	type key struct{ numa, socket, core int }
	cores := map[key][]int{}
	uncore := map[key]int{}
	for _, c := range m.CPUs {
		k := key{c.NUMA, c.Socket, c.Core}
		cores[k] = append(cores[k], c.ID)
		if c.UncoreCache != nil {
			if _, ok := uncore[k]; !ok {
				uncore[k] = *c.UncoreCache
			}
		} else if _, ok := uncore[k]; !ok {
			uncore[k] = c.Socket
		}
	}
	d := CPUDetails{}
	for k, threads := range cores {
		id := threads[0]
		for _, th := range threads {
			id = min(id, th)
		}
		for _, th := range threads {
			d[th] = CPUInfo{CoreID: id, SocketID: k.socket, NUMANodeID: k.numa, UncoreCacheID: uncore[k]}
		}
	}
	return &CPUTopology{NumCPUs: len(m.CPUs), NumSockets: m.Sockets(), NumCores: len(cores),
		NumNUMANodes: d.NUMANodes().Size(), NumUncoreCache: d.UncoreCaches().Size(), CPUDetails: d, cpus: d.CPUs()}
}

func (t *CPUTopology) CPUsPerCore() int {
	if t.NumCores == 0 {
		return 0
	}
	return t.NumCPUs / t.NumCores
}

func (t *CPUTopology) CPUsPerSocket() int {
	if t.NumSockets == 0 {
		return 0
	}
	return t.NumCPUs / t.NumSockets
}

func (t *CPUTopology) CPUsPerUncore() int {
	if t.NumUncoreCache == 0 {
		return 0
	}
	return t.NumCPUs / t.NumUncoreCache
}

// CPUs is every CPU of the topology.
func (t *CPUTopology) CPUs() cpuset.CPUSet {
	if t.cpus.Size() > 0 {
		return t.cpus
	}
	return t.CPUDetails.CPUs()
}

// KeepOnly is the details of the CPUs in s.
func (d CPUDetails) KeepOnly(s cpuset.CPUSet) CPUDetails {
	return d.filter(func(id int) bool { return s.Contains(id) })
}

// without is the details of d's CPUs not in s: KeepOnly(d.CPUs().Difference(s)).
func (d CPUDetails) without(s cpuset.CPUSet) CPUDetails {
	return d.filter(func(id int) bool { return !s.Contains(id) })
}

// filter is the details of d's CPUs that keep holds for.
func (d CPUDetails) filter(keep func(id int) bool) CPUDetails {
	out := CPUDetails{}
	for id, info := range d {
		if keep(id) {
			out[id] = info
		}
	}
	return out
}

// collect is the set of of(cpu) over the CPUs for which keep holds.
func (d CPUDetails) collect(keep func(CPUInfo) bool, of func(int, CPUInfo) int) cpuset.CPUSet {
	ids := make([]int, 0, len(d))
	for id, info := range d {
		if keep(info) {
			ids = append(ids, of(id, info))
		}
	}
	return cpuset.New(ids...)
}

// counts is how many of d's CPUs each unit (unitOf's value: a core, socket, NUMA node or uncore
// cache) holds.
func (d CPUDetails) counts(unitOf func(int, CPUInfo) int) map[int]int {
	n := map[int]int{}
	for id, info := range d {
		n[unitOf(id, info)]++
	}
	return n
}

// socketsByNUMA is, per NUMA node, the sockets its CPUs are on: SocketsInNUMANodes(n) for
// each n at once.
func (d CPUDetails) socketsByNUMA() map[int][]int {
	seen := map[[2]int]bool{}
	out := map[int][]int{}
	for _, info := range d {
		if k := [2]int{info.NUMANodeID, info.SocketID}; !seen[k] {
			seen[k] = true
			out[info.NUMANodeID] = append(out[info.NUMANodeID], info.SocketID)
		}
	}
	return out
}

// countIn is how many of d's CPUs unit holds: CPUsInCores(unit).Size() and its kin, without
// building the set.
func (d CPUDetails) countIn(unitOf func(int, CPUInfo) int, unit int) int {
	n := 0
	for id, info := range d {
		if unitOf(id, info) == unit {
			n++
		}
	}
	return n
}

func anyCPU(CPUInfo) bool           { return true }
func cpuID(id int, _ CPUInfo) int   { return id }
func coreOf(_ int, i CPUInfo) int   { return i.CoreID }
func socketOf(_ int, i CPUInfo) int { return i.SocketID }
func numaOf(_ int, i CPUInfo) int   { return i.NUMANodeID }
func uncoreOf(_ int, i CPUInfo) int { return i.UncoreCacheID }
func in(field func(int, CPUInfo) int, ids []int) func(CPUInfo) bool {
	return func(i CPUInfo) bool {
		v := field(0, i)
		for _, id := range ids {
			if v == id {
				return true
			}
		}
		return false
	}
}

func (d CPUDetails) CPUs() cpuset.CPUSet         { return d.collect(anyCPU, cpuID) }
func (d CPUDetails) NUMANodes() cpuset.CPUSet    { return d.collect(anyCPU, numaOf) }
func (d CPUDetails) Sockets() cpuset.CPUSet      { return d.collect(anyCPU, socketOf) }
func (d CPUDetails) Cores() cpuset.CPUSet        { return d.collect(anyCPU, coreOf) }
func (d CPUDetails) UncoreCaches() cpuset.CPUSet { return d.collect(anyCPU, uncoreOf) }

func (d CPUDetails) CPUsInNUMANodes(ids ...int) cpuset.CPUSet {
	return d.collect(in(numaOf, ids), cpuID)
}
func (d CPUDetails) CPUsInSockets(ids ...int) cpuset.CPUSet {
	return d.collect(in(socketOf, ids), cpuID)
}
func (d CPUDetails) CPUsInCores(ids ...int) cpuset.CPUSet { return d.collect(in(coreOf, ids), cpuID) }
func (d CPUDetails) CPUsInUncoreCaches(ids ...int) cpuset.CPUSet {
	return d.collect(in(uncoreOf, ids), cpuID)
}
func (d CPUDetails) NUMANodesInSockets(ids ...int) cpuset.CPUSet {
	return d.collect(in(socketOf, ids), numaOf)
}
func (d CPUDetails) SocketsInNUMANodes(ids ...int) cpuset.CPUSet {
	return d.collect(in(numaOf, ids), socketOf)
}
func (d CPUDetails) CoresInNUMANodes(ids ...int) cpuset.CPUSet {
	return d.collect(in(numaOf, ids), coreOf)
}
func (d CPUDetails) CoresInSockets(ids ...int) cpuset.CPUSet {
	return d.collect(in(socketOf, ids), coreOf)
}
func (d CPUDetails) UncoreInNUMANodes(ids ...int) cpuset.CPUSet {
	return d.collect(in(numaOf, ids), uncoreOf)
}

// CoresNeededInUncoreCache is the first n cores (by id) of the uncore caches ids.
func (d CPUDetails) CoresNeededInUncoreCache(n int, ids ...int) cpuset.CPUSet {
	cores := d.collect(in(uncoreOf, ids), coreOf)
	if cores.Size() <= n {
		return cores
	}
	return cpuset.New(cores.List()[:n]...)
}

// AreNUMANodesInSameSocket: every node exists and they share one socket.
func (d CPUDetails) AreNUMANodesInSameSocket(nodes []int) bool {
	all := d.NUMANodes()
	for _, id := range nodes {
		if !all.Contains(id) {
			return false
		}
	}
	return d.SocketsInNUMANodes(nodes...).Size() <= 1
}
