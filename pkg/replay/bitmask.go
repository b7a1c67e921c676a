package replay

import (
	"fmt"
	"math/bits"
	"strconv"
)

// BitMask is a set of NUMA nodes (topologymanager/bitmask), ids 0-63.
type BitMask uint64

// NewBitMask is bitmask.NewBitMask.
func NewBitMask(ids ...int) (BitMask, error) {
	var m BitMask
	for _, i := range ids {
		if i < 0 || i >= 64 {
			return 0, fmt.Errorf("bit number must be in range 0-63")
		}
		m |= 1 << uint(i)
	}
	return m, nil
}

func (m BitMask) IsSet(bit int) bool { return bit >= 0 && bit < 64 && m&(1<<uint(bit)) != 0 }
func (m BitMask) Count() int         { return bits.OnesCount64(uint64(m)) }

// IsNarrowerThan: fewer nodes, or as many and a lower value.
func (m BitMask) IsNarrowerThan(o BitMask) bool {
	if m.Count() == o.Count() {
		return m < o
	}
	return m.Count() < o.Count()
}

func (m BitMask) GetBits() []int {
	var out []int
	for i := 0; i < 64; i++ {
		if m.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// String is the kubelet's (binary, in groups of two digits); it keys the memory manager's
// reusable init-container memory.
func (m BitMask) String() string {
	const grouping = 2
	for shift := 64 - grouping; shift > 0; shift -= grouping {
		if uint64(m) > (1 << uint(shift)) {
			return fmt.Sprintf("%0"+strconv.Itoa(shift+grouping)+"b", uint64(m))
		}
	}
	return fmt.Sprintf("%0"+strconv.Itoa(grouping)+"b", uint64(m))
}

// iterateBitMasks calls f with every non-empty subset of ids, smallest first.
func iterateBitMasks(ids []int, f func(BitMask)) {
	var iterate func(ids, accum []int, size int)
	iterate = func(ids, accum []int, size int) {
		if len(accum) == size {
			m, _ := NewBitMask(accum...)
			f(m)
			return
		}
		for i := range ids {
			iterate(ids[i+1:], append(accum, ids[i]), size)
		}
	}
	for i := 1; i <= len(ids); i++ {
		iterate(ids, []int{}, i)
	}
}
