package decode

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The device manager's restore (readCheckpoint) never fails once the checkpoint loaded (but
// for a panic of some releases' generated code, devRestore.restore): its
// podDevices.fromCheckpointData unmarshals each entry's AllocResp and, when that fails, logs
// "Can't unmarshal allocResp" and skips the entry; of the entries it keeps, a later one for the
// same pod, container and resource silently replaces an earlier one. The kubelet starts, but
// forgets those containers' devices: they count as free and may be allocated to another
// container. The registered devices and the device IDs are taken as they are (a V1 file's flat
// IDs, read by 1.20.14+, are put on NUMA node 0). The file is therefore valid, and the report
// names every skipped entry (Report.Dropped).

// A DroppedEntry is an entry of the file that the judged kubelet's restore skips.
type DroppedEntry struct {
	// Index is the entry's position in the file's podDeviceEntries.
	Index         int    `json:"index"`
	PodUID        string `json:"podUID"`
	ContainerName string `json:"containerName"`
	ResourceName  string `json:"resourceName"`
	// Error is the kubelet's error for it, as it logs it after "Can't unmarshal allocResp".
	Error string `json:"error,omitempty"`
	// ReplacedBy, when Error is empty, is the later entry for the same pod, container and
	// resource that the kubelet keeps instead (it logs nothing).
	ReplacedBy *int `json:"replacedBy,omitempty"`
}

// A restoreDropper is a restore check that skips the entries it cannot use instead of failing:
// one pass gives both its refusal, if any, and the entries skipped.
type restoreDropper interface {
	restore(model any, k Kubelet) ([]DroppedEntry, error)
}

// devRestore is readCheckpoint after the checksum, by era of the device plugin API's code.
type devRestore struct{ AllocResp allocRespRule }

func (d devRestore) check(model any, k Kubelet) error {
	_, err := d.restore(model, k)
	return err
}

var devRestorePanics = stops("the device manager's restore panics (podDevices.fromCheckpointData), and the kubelet with it")

// restore: nothing after the checksum fails the device manager's restore, but an AllocResp on
// which the generated code panics (allocRespPanic): nothing recovers it, and the kubelet
// crashes. Otherwise it skips the entries it cannot unmarshal and those a later one replaces.
func (d devRestore) restore(model any, _ Kubelet) ([]DroppedEntry, error) {
	st, ok := model.(*DeviceState)
	if !ok {
		return nil, nil
	}
	var out []DroppedEntry
	// podDevices.insert keys the kept entries by pod, container and resource: a later entry
	// replaces an earlier one.
	type key struct{ pod, container, resource string }
	kept := map[key]int{}
	for i, e := range st.PodDeviceEntries {
		drop := DroppedEntry{Index: i, PodUID: e.PodUID, ContainerName: e.ContainerName, ResourceName: e.ResourceName}
		if err := d.AllocResp.unmarshal(e.AllocResp); err != nil {
			var p allocRespPanic
			if errors.As(err, &p) {
				return nil, &restoreError{text: p.Error(), refusal: &devRestorePanics}
			}
			drop.Error = err.Error()
			out = append(out, drop)
			continue
		}
		k := key{e.PodUID, e.ContainerName, e.ResourceName}
		if prev, ok := kept[k]; ok {
			by := i
			p := st.PodDeviceEntries[prev]
			out = append(out, DroppedEntry{Index: prev, PodUID: p.PodUID, ContainerName: p.ContainerName, ResourceName: p.ResourceName, ReplacedBy: &by})
		}
		kept[k] = i
	}
	slices.SortFunc(out, func(a, b DroppedEntry) int { return a.Index - b.Index })
	return out, nil
}

// droppedNote says what the kubelet does with the skipped entries, for the report's notes.
func droppedNote(reader Kubelet, dropped []DroppedEntry, entries int) string {
	var failed, replaced []DroppedEntry
	for _, d := range dropped {
		if d.ReplacedBy != nil {
			replaced = append(replaced, d)
		} else {
			failed = append(failed, d)
		}
	}
	var parts []string
	if len(failed) > 0 {
		f := failed[0]
		s := fmt.Sprintf("kubelet %s's restore skips %d of %d device entries: it cannot unmarshal their allocResp "+
			"(it logs \"Can't unmarshal allocResp\" and starts without them); entry %d (pod %s, container %s, %s): %s",
			reader, len(failed), entries, f.Index, f.PodUID, f.ContainerName, f.ResourceName, f.Error)
		if len(failed) > 1 {
			s += fmt.Sprintf(", and %d more (see dropped)", len(failed)-1)
		}
		parts = append(parts, s)
	}
	if len(replaced) > 0 {
		r := replaced[0]
		s := fmt.Sprintf("kubelet %s keeps only the last entry for a pod, container and resource: entry %d (pod %s, container %s, %s) is replaced by entry %d",
			reader, r.Index, r.PodUID, r.ContainerName, r.ResourceName, *r.ReplacedBy)
		if len(replaced) > 1 {
			s += fmt.Sprintf(", and %d more (see dropped)", len(replaced)-1)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ") + ". Those entries' devices count as free: the kubelet may allocate them to another container"
}
