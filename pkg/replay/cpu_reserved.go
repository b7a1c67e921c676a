package replay

import (
	"encoding/binary"
	"slices"
	"sync"

	"k8s.io/utils/cpuset"
)

// The CPUs the static policy reserves when no reservedSystemCPUs is given are takeByTopology
// over the whole machine: a pure function of the topology, the count, the options and the
// release's rules, which every node of a pool shares while their checkpoints differ. Computed
// once per pool, not once per start: it was a quarter of a start's time
// (BenchmarkPublishedFleetNode/own-start), the largest piece of a fleet read's.
type reservedKey struct {
	topo    string // topologyKey: the CPUs' ids and places
	n       int
	opts    StaticPolicyOptions
	release *releaseRules
}

type reservedMemo struct {
	mu   sync.Mutex
	sets map[reservedKey]cpuset.CPUSet
}

// maxReservedKept bounds the memo: far more machine shapes, counts and options than a fleet has;
// past it each start computes its own.
const maxReservedKept = 256

var reservedKept = reservedMemo{sets: map[reservedKey]cpuset.CPUSet{}}

// reservedByTopology is takeByTopology(all CPUs, n) for p, from the memo when a start with the
// same inputs computed it already. A cpuset.CPUSet is never modified, so one is shared.
func (p *staticPolicy) reservedByTopology(n int) cpuset.CPUSet {
	key := reservedKey{topo: p.topo.key(), n: n, opts: p.opts, release: p.release}
	reservedKept.mu.Lock()
	set, ok := reservedKept.sets[key]
	reservedKept.mu.Unlock()
	if ok {
		return set
	}
	set, _ = p.takeByTopology(p.topo.CPUs(), n, 0)
	reservedKept.mu.Lock()
	if len(reservedKept.sets) < maxReservedKept {
		reservedKept.sets[key] = set
	}
	reservedKept.mu.Unlock()
	return set
}

// key identifies the topology's content: its counts, then each CPU's id, core, socket, NUMA
// node and uncore cache, in id order.
func (t *CPUTopology) key() string {
	ids := make([]int, 0, len(t.CPUDetails))
	for id := range t.CPUDetails {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, 0, (5+len(ids)*5)*binary.MaxVarintLen32)
	for _, v := range [...]int{t.NumCPUs, t.NumCores, t.NumUncoreCache, t.NumSockets, t.NumNUMANodes} {
		b = binary.AppendVarint(b, int64(v))
	}
	for _, id := range ids {
		info := t.CPUDetails[id]
		for _, v := range [...]int{id, info.CoreID, info.SocketID, info.NUMANodeID, info.UncoreCacheID} {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	return string(b)
}
