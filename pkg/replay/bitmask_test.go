package replay

import (
	"reflect"
	"strings"
	"testing"
)

// The cases of the kubelet's own topologymanager/bitmask tests (v1.37.1), plus the edges of
// the 0-63 range: a NUMA id the machine reports at 63 or 64 must behave as in the kubelet.
// String pads to an even width only above the power of two (4 is "100", 8 is "1000"), as the
// kubelet's `>` does; the memory manager keys reusable memory by it.
func TestBitMaskAsKubelet(t *testing.T) {
	mask := func(ids ...int) BitMask {
		t.Helper()
		m, err := NewBitMask(ids...)
		if err != nil {
			t.Fatalf("NewBitMask(%v): %v", ids, err)
		}
		return m
	}
	for _, ids := range [][]int{{-1}, {64}, {0, 64}} {
		if _, err := NewBitMask(ids...); err == nil {
			t.Errorf("NewBitMask(%v): no error, the kubelet says bit number must be in range 0-63", ids)
		}
	}
	for _, tc := range []struct {
		ids  []int
		want string
	}{{[]int{0}, "01"}, {[]int{1}, "10"}, {[]int{0, 1}, "11"}, {nil, "00"}, {[]int{2}, "100"}, {[]int{3}, "1000"}, {[]int{0, 2}, "0101"}, {[]int{1, 2}, "0110"}, {[]int{0, 1, 2, 4}, "010111"}, {[]int{63}, "1" + strings.Repeat("0", 63)}} {
		if got := mask(tc.ids...).String(); got != tc.want {
			t.Errorf("String of %v = %s, want %s", tc.ids, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ids []int
		bit int
		set bool
	}{{nil, 0, false}, {[]int{0}, 0, true}, {[]int{0, 1}, 1, true}, {[]int{0, 1}, 64, false}, {[]int{63}, 63, true}, {[]int{0}, -1, false}} {
		if got := mask(tc.ids...).IsSet(tc.bit); got != tc.set {
			t.Errorf("%v.IsSet(%d) = %v, want %v", tc.ids, tc.bit, got, tc.set)
		}
	}
	for _, tc := range []struct{ ids, want []int }{{nil, nil}, {[]int{0}, []int{0}}, {[]int{0, 1}, []int{0, 1}}, {[]int{5, 63}, []int{5, 63}}} {
		if got := mask(tc.ids...).GetBits(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v.GetBits() = %v, want %v", tc.ids, got, tc.want)
		}
	}
	for _, tc := range []struct {
		first, second []int
		narrower      bool
	}{
		{[]int{0}, []int{0, 1}, true}, {[]int{0, 1}, []int{0}, false},
		{[]int{0}, []int{1}, true}, {[]int{1}, []int{0}, false},
		{[]int{0}, []int{0}, false}, {[]int{0, 3}, []int{1, 2}, false},
	} {
		if got := mask(tc.first...).IsNarrowerThan(mask(tc.second...)); got != tc.narrower {
			t.Errorf("%v.IsNarrowerThan(%v) = %v, want %v", tc.first, tc.second, got, tc.narrower)
		}
	}
	// IterateBitMasks: 2^n - 1 masks, the smaller ones first.
	for _, n := range []int{1, 2, 4, 8} {
		var ids []int
		for i := range n {
			ids = append(ids, i)
		}
		var got []BitMask
		iterateBitMasks(ids, func(m BitMask) { got = append(got, m) })
		if len(got) != 1<<n-1 {
			t.Errorf("%d bits: %d masks, want %d", n, len(got), 1<<n-1)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Count() < got[i-1].Count() {
				t.Errorf("%d bits: mask %s after %s", n, got[i], got[i-1])
				break
			}
		}
	}
	if got := func() (out []BitMask) {
		iterateBitMasks([]int{0, 1, 2}, func(m BitMask) { out = append(out, m) })
		return out
	}(); !reflect.DeepEqual(got, []BitMask{1, 2, 4, 3, 5, 6, 7}) {
		t.Errorf("iterateBitMasks(0,1,2) = %v, want 1 2 4 3 5 6 7", got)
	}
}
