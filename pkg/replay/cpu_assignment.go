package replay

// The CPU manager's CPU picker (cpumanager/cpu_assignment.go), ported function by function:
// takeByTopologyNUMAPacked and takeByTopologyNUMADistributed over a cpuAccumulator.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"k8s.io/utils/cpuset"
)

// CPUSortingStrategy is how leftover CPUs are ordered: packed (by core) or spread (by socket,
// distribute-cpus-across-cores).
type CPUSortingStrategy string

const (
	CPUSortingStrategyPacked CPUSortingStrategy = "packed"
	CPUSortingStrategySpread CPUSortingStrategy = "spread"
)

type cpuAccumulator struct {
	topo          *CPUTopology
	details       CPUDetails
	numCPUsNeeded int
	result        cpuset.CPUSet
	// numaFirst: NUMA nodes are the bigger unit (sockets >= NUMA nodes), else sockets.
	numaFirst bool
	spread    bool
	// spreadByCore: spread takes the CPUs of each socket one core at a time, round robin over
	// its cores (release row SpreadRoundRobinCores); before, in CPU id order.
	spreadByCore bool
	// uncoreFullFirst: prefer-align-cpus-by-uncorecache takes every free uncore cache it still
	// needs whole first, each by its own size, then a partial one (release row UncoreFullFirst).
	uncoreFullFirst bool
	// uncoreFloor: a partial uncore cache takes needed/perCore cores, without trimming an odd
	// request (1.32-1.33; releases.go UncorePartialRoundsUp).
	uncoreFloor bool
	// ownSize: a socket or core is free when all its own CPUs are (release row
	// FreeUnitsByOwnSize); before, when it has the machine's average count of them.
	ownSize bool
}

func newCPUAccumulator(topo *CPUTopology, available cpuset.CPUSet, numCPUs int, strategy CPUSortingStrategy) *cpuAccumulator {
	return &cpuAccumulator{topo: topo, details: topo.CPUDetails.KeepOnly(available), numCPUsNeeded: numCPUs,
		result: cpuset.New(), numaFirst: topo.NumSockets >= topo.NumNUMANodes, spread: strategy == CPUSortingStrategySpread}
}

// sort orders ids by how many available CPUs each holds, then by id.
func (a *cpuAccumulator) sort(ids []int, unitOf func(int, CPUInfo) int) []int {
	// Every unit's size counted once, in one pass (the kubelet recounts in every comparison;
	// same order).
	size := a.details.counts(unitOf)
	sort.Slice(ids, func(i, j int) bool {
		si, sj := size[ids[i]], size[ids[j]]
		if si != sj {
			return si < sj
		}
		return ids[i] < ids[j]
	})
	return ids
}

func (a *cpuAccumulator) sortAvailableNUMANodes() []int {
	if a.numaFirst {
		return a.sort(a.details.NUMANodes().UnsortedList(), numaOf)
	}
	var out []int
	for _, s := range a.sortAvailableSockets() {
		out = append(out, a.sort(a.details.NUMANodesInSockets(s).UnsortedList(), numaOf)...)
	}
	return out
}

func (a *cpuAccumulator) sortAvailableSockets() []int {
	if !a.numaFirst {
		return a.sort(a.details.Sockets().UnsortedList(), socketOf)
	}
	var out []int
	for _, n := range a.sortAvailableNUMANodes() {
		out = append(out, a.sort(a.details.SocketsInNUMANodes(n).UnsortedList(), socketOf)...)
	}
	return out
}

func (a *cpuAccumulator) sortAvailableCores() []int {
	var out []int
	if a.numaFirst {
		for _, s := range a.sortAvailableSockets() {
			out = append(out, a.sort(a.details.CoresInSockets(s).UnsortedList(), coreOf)...)
		}
		return out
	}
	for _, n := range a.sortAvailableNUMANodes() {
		out = append(out, a.sort(a.details.CoresInNUMANodes(n).UnsortedList(), coreOf)...)
	}
	return out
}

func (a *cpuAccumulator) sortAvailableUncoreCaches() []int {
	var out []int
	for _, n := range a.sortAvailableNUMANodes() {
		out = append(out, a.sort(a.details.UncoreInNUMANodes(n).UnsortedList(), uncoreOf)...)
	}
	return out
}

// freeCPUs is the available CPUs in the strategy's order: core by core (packed) or socket by
// socket (spread).
func (a *cpuAccumulator) freeCPUs() []int {
	var out []int
	if a.spread {
		for _, s := range a.sortAvailableSockets() {
			if !a.spreadByCore {
				out = append(out, a.details.CPUsInSockets(s).List()...)
				continue
			}
			// The cores by free CPUs, then the i-th CPU of each in turn (sortAvailableCPUsSpread).
			var perCore [][]int
			for _, c := range a.sort(a.details.CoresInSockets(s).UnsortedList(), coreOf) {
				perCore = append(perCore, a.details.CPUsInCores(c).List())
			}
			for i := 0; ; i++ {
				more := false
				for _, cpus := range perCore {
					if i < len(cpus) {
						out, more = append(out, cpus[i]), true
					}
				}
				if !more {
					break
				}
			}
		}
		return out
	}
	for _, c := range a.sortAvailableCores() {
		out = append(out, a.details.CPUsInCores(c).List()...)
	}
	return out
}

func (a *cpuAccumulator) take(cpus cpuset.CPUSet) {
	a.result = a.result.Union(cpus)
	a.details = a.details.without(a.result)
	a.numCPUsNeeded -= cpus.Size()
}

// takeFull takes, in order, every unit that is entirely free and still fits.
func (a *cpuAccumulator) takeFull(ids []int, free func(id int) bool, cpusIn func(ids ...int) cpuset.CPUSet) {
	for _, id := range ids {
		if !free(id) {
			continue
		}
		cpus := cpusIn(id)
		if !a.needsAtLeast(cpus.Size()) {
			continue
		}
		a.take(cpus)
	}
}

func (a *cpuAccumulator) takeFullNUMANodes() {
	all := a.topo.CPUDetails
	a.takeFull(a.sortAvailableNUMANodes(), func(id int) bool {
		return a.details.countIn(numaOf, id) == all.countIn(numaOf, id)
	}, all.CPUsInNUMANodes)
}

func (a *cpuAccumulator) takeFullSockets() {
	a.takeFull(a.sortAvailableSockets(), func(id int) bool {
		if a.ownSize {
			return a.details.countIn(socketOf, id) == a.topo.CPUDetails.countIn(socketOf, id)
		}
		return a.details.countIn(socketOf, id) == a.topo.CPUsPerSocket()
	}, a.topo.CPUDetails.CPUsInSockets)
}

func (a *cpuAccumulator) takeFullUncore() {
	all := a.topo.CPUDetails
	a.takeFull(a.sortAvailableUncoreCaches(), func(id int) bool {
		return a.details.countIn(uncoreOf, id) == all.countIn(uncoreOf, id)
	}, all.CPUsInUncoreCaches)
}

func (a *cpuAccumulator) takeFullCores() {
	a.takeFull(a.sortAvailableCores(), func(id int) bool {
		if a.ownSize {
			return a.details.countIn(coreOf, id) == a.topo.CPUDetails.countIn(coreOf, id)
		}
		return a.details.countIn(coreOf, id) == a.topo.CPUsPerCore()
	}, a.topo.CPUDetails.CPUsInCores)
}

// takePartialUncore takes the first cores of one uncore cache when they are exactly enough.
func (a *cpuAccumulator) takePartialUncore(uncoreID int) {
	perCore := a.topo.CPUsPerCore()
	if perCore == 0 {
		return // the kubelet divides by zero here; no machine with online CPUs has 0 per core
	}
	numCoresNeeded := (a.numCPUsNeeded + perCore - 1) / perCore
	if a.uncoreFloor {
		numCoresNeeded = a.numCPUsNeeded / perCore
	}
	freeCores := a.details.CoresNeededInUncoreCache(numCoresNeeded, uncoreID)
	freeCPUs := a.details.CPUsInCores(freeCores.UnsortedList()...)
	if !a.uncoreFloor && a.numCPUsNeeded%2 != 0 && perCore > 1 {
		list := freeCPUs.List()
		if len(list) > a.numCPUsNeeded {
			list = list[:freeCPUs.Size()-1]
		}
		freeCPUs = cpuset.New(list...)
	}
	if a.numCPUsNeeded == freeCPUs.Size() {
		a.take(freeCPUs)
	}
}

func (a *cpuAccumulator) takeUncoreCache() {
	if a.uncoreFullFirst {
		// Every free uncore cache the request still covers (by its own size), then partial ones,
		// over the order sorted once.
		uncores := a.sortAvailableUncoreCaches()
		all := a.topo.CPUDetails
		for _, uncore := range uncores {
			a.takeFull([]int{uncore}, func(id int) bool {
				return a.details.countIn(uncoreOf, id) == all.countIn(uncoreOf, id)
			}, all.CPUsInUncoreCaches)
			if a.isSatisfied() {
				return
			}
		}
		for _, uncore := range uncores {
			a.takePartialUncore(uncore)
			if a.isSatisfied() {
				return
			}
		}
		return
	}
	perUncore := a.topo.CPUsPerUncore()
	for _, uncore := range a.sortAvailableUncoreCaches() {
		if a.needsAtLeast(perUncore) {
			a.takeFullUncore()
		}
		if a.isSatisfied() {
			return
		}
		a.takePartialUncore(uncore)
		if a.isSatisfied() {
			return
		}
	}
}

func (a *cpuAccumulator) takeRemainingCPUs() {
	for _, cpu := range a.freeCPUs() {
		a.take(cpuset.New(cpu))
		if a.isSatisfied() {
			return
		}
	}
}

func (a *cpuAccumulator) needsAtLeast(n int) bool { return a.numCPUsNeeded >= n }
func (a *cpuAccumulator) isSatisfied() bool       { return a.numCPUsNeeded < 1 }
func (a *cpuAccumulator) isFailed() bool          { return a.numCPUsNeeded > a.details.CPUs().Size() }

func (a *cpuAccumulator) rangeNUMANodesNeededToSatisfy(cpuGroupSize, minFromHint int) (minNumNUMAs, maxNumNUMAs int) {
	numNUMANodes := a.topo.CPUDetails.NUMANodes().Size()
	numNUMANodesAvailable := a.details.NUMANodes().Size()
	numCPUs := a.topo.CPUDetails.CPUs().Size()
	numCPUGroups := (numCPUs-1)/cpuGroupSize + 1
	numCPUGroupsPerNUMANode := (numCPUGroups-1)/numNUMANodes + 1
	numCPUGroupsNeeded := (a.numCPUsNeeded-1)/cpuGroupSize + 1
	minNumNUMAs = (numCPUGroupsNeeded-1)/numCPUGroupsPerNUMANode + 1
	maxNumNUMAs = min(numCPUGroupsNeeded, numNUMANodesAvailable)
	if minFromHint > minNumNUMAs && minFromHint <= maxNumNUMAs {
		minNumNUMAs = minFromHint
	}
	return
}

func notEnoughCPUs(requested, available int) error {
	return fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", requested, available)
}

// TakeByTopologyNUMAPacked is the kubelet's takeByTopologyNUMAPacked: whole NUMA nodes and
// sockets, then uncore caches (prefer-align-cpus-by-uncorecache), whole cores (unless
// spread), then single CPUs.
func TakeByTopologyNUMAPacked(topo *CPUTopology, available cpuset.CPUSet, numCPUs int, strategy CPUSortingStrategy, preferAlignByUncoreCache bool) (cpuset.CPUSet, error) {
	return takeByTopologyNUMAPacked(topo, available, numCPUs, strategy, preferAlignByUncoreCache, packedRules{})
}

// packedRules are the release rows takeByTopologyNUMAPacked follows (see cpuAccumulator).
type packedRules struct{ uncoreFloor, spreadByCore, uncoreFullFirst, ownSize bool }

func takeByTopologyNUMAPacked(topo *CPUTopology, available cpuset.CPUSet, numCPUs int, strategy CPUSortingStrategy, preferAlignByUncoreCache bool, rules packedRules) (cpuset.CPUSet, error) {
	acc := newCPUAccumulator(topo, available, numCPUs, strategy)
	acc.uncoreFloor, acc.spreadByCore, acc.uncoreFullFirst, acc.ownSize = rules.uncoreFloor, rules.spreadByCore, rules.uncoreFullFirst, rules.ownSize
	if acc.isSatisfied() {
		return acc.result, nil
	}
	if acc.isFailed() {
		return cpuset.New(), notEnoughCPUs(numCPUs, available.Size())
	}
	steps := []func(){acc.takeFullNUMANodes, acc.takeFullSockets}
	if !acc.numaFirst {
		steps = []func(){acc.takeFullSockets, acc.takeFullNUMANodes}
	}
	if preferAlignByUncoreCache {
		steps = append(steps, acc.takeUncoreCache)
	}
	if strategy != CPUSortingStrategySpread {
		steps = append(steps, acc.takeFullCores)
	}
	steps = append(steps, acc.takeRemainingCPUs)
	for _, step := range steps {
		step()
		if acc.isSatisfied() {
			return acc.result, nil
		}
	}
	return cpuset.New(), fmt.Errorf("failed to allocate cpus")
}

func iterateCombinations(n []int, k int, copies bool, f func([]int) bool) {
	if k < 1 {
		return
	}
	var helper func(k, start int, accum []int) bool
	helper = func(k, start int, accum []int) bool {
		if k == 0 {
			if copies {
				return f(slices.Clone(accum))
			}
			return f(accum)
		}
		for i := start; i <= len(n)-k; i++ {
			if !helper(k-1, i+1, append(accum, n[i])) {
				return false
			}
		}
		return true
	}
	helper(k, 0, []int{})
}

// ErrKubeletHangs: the real kubelet never returns from this step; it loops forever.
var ErrKubeletHangs = errors.New("the kubelet never returns: its CPU manager loops forever in takeByTopologyNUMADistributed")

// anyGroupLeft: some NUMA node of nodes still holds a whole group of CPUs.
func anyGroupLeft(nodes []int, groupSize int, count func(numa int) int) bool {
	return slices.ContainsFunc(nodes, func(numa int) bool { return count(numa) >= groupSize })
}

// standardDeviation rounds like the kubelet's (to 3 decimals, mean too).
func standardDeviation(xs []int) float64 {
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	m := math.Round(sum/float64(len(xs))*1000) / 1000
	var sq float64
	for _, x := range xs {
		sq += (float64(x) - m) * (float64(x) - m)
	}
	return math.Round(math.Sqrt(sq/float64(len(xs)))*1000) / 1000
}

// TakeByTopologyNUMADistributed is the kubelet's takeByTopologyNUMADistributed
// (distribute-cpus-across-numa): spread the CPUs evenly over the fewest NUMA nodes that hold
// them, in groups of cpuGroupSize, choosing the combination that leaves the nodes most
// balanced (align-by-socket prefers one socket).
func TakeByTopologyNUMADistributed(topo *CPUTopology, available cpuset.CPUSet, numCPUs, cpuGroupSize int, strategy CPUSortingStrategy, alignBySocket bool) (cpuset.CPUSet, error) {
	return takeByTopologyNUMADistributed(topo, available, numCPUs, cpuGroupSize, strategy, distributedRules{alignBySocket: alignBySocket})
}

// distributedRules are the release rows takeByTopologyNUMADistributed follows.
type distributedRules struct {
	// alignBySocket: align-by-socket, where the release honours it (DistributedAlignsBySocket).
	alignBySocket bool
	// remainderInGroups: a subset of NUMA nodes takes the remainder only when it holds it in
	// whole groups (DistributedRemainderInGroups), so the loop handing it out always ends.
	remainderInGroups bool
	// copiesCombinations: each combination is a copy (CombinationsCopied); before, the kept
	// best combination shares its array with those tried after it.
	copiesCombinations bool
	// minNUMAsFromHint: spread over at least this many NUMA nodes where that is feasible (the
	// topology manager's hint, DistributedHintNUMAs); 0: the fewest that hold the CPUs.
	minNUMAsFromHint int
	// packed: the rows of the packed picker it calls.
	packed packedRules
}

func takeByTopologyNUMADistributed(topo *CPUTopology, available cpuset.CPUSet, numCPUs, cpuGroupSize int, strategy CPUSortingStrategy, rules distributedRules) (cpuset.CPUSet, error) {
	alignBySocket, remainderInGroups := rules.alignBySocket, rules.remainderInGroups
	if numCPUs%cpuGroupSize != 0 {
		return takeByTopologyNUMAPacked(topo, available, numCPUs, strategy, false, rules.packed)
	}
	acc := newCPUAccumulator(topo, available, numCPUs, strategy)
	if acc.isSatisfied() {
		return acc.result, nil
	}
	if acc.isFailed() {
		return cpuset.New(), notEnoughCPUs(numCPUs, available.Size())
	}
	numas := acc.sortAvailableNUMANodes()
	minNUMAs, maxNUMAs := acc.rangeNUMANodesNeededToSatisfy(cpuGroupSize, rules.minNUMAsFromHint)
	free := func(numa int) int { return acc.details.countIn(numaOf, numa) }
	hangs := false
	for k := minNUMAs; k <= maxNUMAs; k++ {
		bestBalance := math.MaxFloat64
		var bestRemainder, bestCombo []int
		bestBalanceInOneSocket := false
		iterateCombinations(numas, k, rules.copiesCombinations, func(combo []int) bool {
			if bestBalance == 0 && (!alignBySocket || bestBalanceInOneSocket) {
				return false
			}
			if acc.details.CPUsInNUMANodes(combo...).Size() < numCPUs {
				return true
			}
			groups := 0
			for _, numa := range combo {
				groups += free(numa) / cpuGroupSize
			}
			if groups*cpuGroupSize < numCPUs {
				return true
			}
			distribution := (numCPUs / len(combo) / cpuGroupSize) * cpuGroupSize
			if alignBySocket {
				for _, numa := range combo {
					distribution = min(distribution, free(numa)/cpuGroupSize*cpuGroupSize)
				}
			}
			for _, numa := range combo {
				if free(numa) < distribution {
					return true
				}
			}
			after := make(map[int]int, len(numas))
			for _, numa := range numas {
				after[numa] = free(numa)
			}
			for _, numa := range combo {
				after[numa] -= distribution
			}
			remainder := numCPUs - distribution*len(combo)
			var remainderCombo []int
			for _, numa := range combo {
				if after[numa] >= cpuGroupSize {
					remainderCombo = append(remainderCombo, numa)
				}
			}
			bestLocalBalance := math.MaxFloat64
			var bestLocalRemainder []int
			if remainder == 0 {
				bestLocalBalance = standardDeviation(slices.Collect(maps.Values(after)))
			}
			for k := len(remainderCombo); remainder > 0 && k >= 1 && !hangs; k-- {
				iterateCombinations(remainderCombo, k, rules.copiesCombinations, func(subset []int) bool {
					left := remainder
					avail := maps.Clone(after)
					total := 0
					for _, numa := range subset {
						if remainderInGroups {
							total += avail[numa] / cpuGroupSize * cpuGroupSize
						} else {
							total += avail[numa]
						}
					}
					if total < left {
						return true
					}
					for left > 0 {
						// The CPUs left suffice but not in whole groups: the kubelet's loop
						// never ends here (kubernetes/kubernetes#140730, after 1.37).
						if !anyGroupLeft(subset, cpuGroupSize, func(numa int) int { return avail[numa] }) {
							hangs = true
							return false
						}
						for _, numa := range subset {
							if left == 0 {
								break
							}
							if avail[numa] < cpuGroupSize {
								continue
							}
							avail[numa] -= cpuGroupSize
							left -= cpuGroupSize
						}
					}
					if balance := standardDeviation(slices.Collect(maps.Values(avail))); balance < bestLocalBalance {
						bestLocalBalance = balance
						bestLocalRemainder = subset
					}
					return true
				})
			}
			if hangs {
				return false
			}
			inSameSocket := alignBySocket && topo.CPUDetails.AreNUMANodesInSameSocket(combo)
			isBetter := bestLocalBalance < bestBalance
			if alignBySocket && inSameSocket != bestBalanceInOneSocket {
				isBetter = inSameSocket
			}
			if isBetter {
				bestBalance, bestRemainder, bestCombo = bestLocalBalance, bestLocalRemainder, combo
				if alignBySocket {
					bestBalanceInOneSocket = inSameSocket
				}
			}
			return true
		})
		if hangs {
			return cpuset.New(), ErrKubeletHangs
		}
		if bestCombo == nil {
			continue
		}
		distribution := (numCPUs / len(bestCombo) / cpuGroupSize) * cpuGroupSize
		for _, numa := range bestCombo {
			distribution = min(distribution, free(numa)/cpuGroupSize*cpuGroupSize)
		}
		for _, numa := range bestCombo {
			cpus, _ := takeByTopologyNUMAPacked(acc.topo, acc.details.CPUsInNUMANodes(numa), distribution, strategy, false, rules.packed)
			acc.take(cpus)
		}
		remainder := numCPUs - distribution*len(bestCombo)
		for remainder > 0 {
			// As above: with no group left in the remainder nodes the kubelet's loop never ends.
			if !anyGroupLeft(bestRemainder, cpuGroupSize, free) {
				return cpuset.New(), ErrKubeletHangs
			}
			for _, numa := range bestRemainder {
				if remainder == 0 {
					break
				}
				if free(numa) < cpuGroupSize {
					continue
				}
				cpus, _ := takeByTopologyNUMAPacked(acc.topo, acc.details.CPUsInNUMANodes(numa), cpuGroupSize, strategy, false, rules.packed)
				acc.take(cpus)
				remainder -= cpuGroupSize
			}
		}
		if acc.numCPUsNeeded > 0 {
			return cpuset.New(), fmt.Errorf("accounting error, not enough CPUs allocated, remaining: %v", acc.numCPUsNeeded)
		}
		if acc.numCPUsNeeded < 0 {
			return cpuset.New(), fmt.Errorf("accounting error, too many CPUs allocated, remaining: %v", acc.numCPUsNeeded)
		}
		return acc.result, nil
	}
	return takeByTopologyNUMAPacked(topo, available, numCPUs, strategy, false, rules.packed)
}
