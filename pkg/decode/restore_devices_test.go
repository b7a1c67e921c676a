package decode

import (
	"fmt"
	"strings"
	"testing"
)

// wireType6 is an allocResp no kubelet can unmarshal: field 9 with the reserved wire type 6.
var wireType6 = []byte{9<<3 | 6}

// Dropped lists the skipped entries in file order, whichever way each was dropped: an entry
// replaced by a later one is found only when that later one is read, after the failures between.
func TestDroppedEntriesInFileOrder(t *testing.T) {
	entry := func(container string, allocResp []byte) DeviceEntry {
		return DeviceEntry{PodUID: "p", ContainerName: container, ResourceName: "nvidia.com/gpu", AllocResp: allocResp}
	}
	st := &DeviceState{PodDeviceEntries: []DeviceEntry{
		entry("c0", nil),
		entry("c1", wireType6),
		entry("c2", nil),
		entry("c0", nil), // replaces 0
		entry("c3", wireType6),
		entry("c2", nil), // replaces 2
	}}
	for _, label := range []string{"v1.21.14", HomeKubelet} {
		var got []string
		dropped, err := restoreOf(KindDevices, mustParseKubelet(label), st)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		for _, d := range dropped {
			if d.ReplacedBy != nil {
				got = append(got, fmt.Sprintf("%d replaced by %d", d.Index, *d.ReplacedBy))
			} else {
				got = append(got, fmt.Sprintf("%d failed", d.Index))
			}
		}
		want := "0 replaced by 3, 1 failed, 2 replaced by 5, 4 failed"
		if strings.Join(got, ", ") != want {
			t.Errorf("%s: dropped %s, want %s", label, strings.Join(got, ", "), want)
		}
	}
}

// The note names the first entry of each kind and counts the others: none for one, "1 more"
// for two, "2 more" for three.
func TestDroppedNoteCounts(t *testing.T) {
	failed := func(i int) DroppedEntry {
		return DroppedEntry{Index: i, PodUID: "p", ContainerName: fmt.Sprintf("c%d", i), ResourceName: "r", Error: fmt.Sprintf("error %d", i)}
	}
	replaced := func(i, by int) DroppedEntry {
		return DroppedEntry{Index: i, PodUID: "p", ContainerName: fmt.Sprintf("c%d", i), ResourceName: "r", ReplacedBy: &by}
	}
	k := mustParseKubelet(HomeKubelet)
	for _, tc := range []struct {
		name    string
		dropped []DroppedEntry
		want    []string
	}{
		{"one failure", []DroppedEntry{failed(2)},
			[]string{"skips 1 of 9 device entries", "entry 2 (pod p, container c2, r): error 2. Those entries"}},
		{"two failures", []DroppedEntry{failed(2), failed(4)},
			[]string{"skips 2 of 9 device entries", "entry 2 (pod p, container c2, r): error 2, and 1 more (see dropped). Those"}},
		{"three failures", []DroppedEntry{failed(1), failed(2), failed(4)},
			[]string{"skips 3 of 9 device entries", "entry 1 (pod p, container c1, r): error 1, and 2 more (see dropped). Those"}},
		{"one replaced", []DroppedEntry{replaced(0, 3)},
			[]string{"keeps only the last entry", "entry 0 (pod p, container c0, r) is replaced by entry 3. Those"}},
		{"two replaced", []DroppedEntry{replaced(0, 3), replaced(1, 5)},
			[]string{"entry 0 (pod p, container c0, r) is replaced by entry 3, and 1 more (see dropped). Those"}},
		{"one of each", []DroppedEntry{replaced(0, 3), failed(2)},
			[]string{"entry 2 (pod p, container c2, r): error 2; kubelet " + k.String() + " keeps only the last entry", "is replaced by entry 3. Those"}},
	} {
		note := droppedNote(k, tc.dropped, 9)
		for _, w := range tc.want {
			if !strings.Contains(note, w) {
				t.Errorf("%s: note %q lacks %q", tc.name, note, w)
			}
		}
	}
}
