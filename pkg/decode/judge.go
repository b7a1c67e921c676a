package decode

import (
	"slices"
	"sort"
	"strings"
)

// One node runs one kubelet, so its files are judged together by one kubelet. When nothing says
// which (offline, no --kubelet-version, no version recorded by collect), it is the newest
// release that could have written the files together, derived from the era table's Writes.

// A FileFormat is one file of a node and the format Decode detected in it.
type FileFormat struct {
	File   string
	Kind   Kind
	Format string
}

// A WritingRelease is the kubelet chosen to judge a node's files, and how the files sit with it.
type WritingRelease struct {
	Kubelet Kubelet
	// Writes are the files that kubelet writes in the format they have.
	Writes []FileFormat
	// Apart are the files it does not write: when there are any, no release writes all the files
	// together, so some were left by an older (or newer) kubelet and never rewritten since.
	Apart []FileFormat
}

// ChooseWritingRelease picks the release (from the releases the era table knows, then its
// pre-releases) that writes the most of
// files in their detected formats: all of them when one can, the newest on a tie, with the
// feature gates at their defaults unless a format needs one on. Files whose format the era
// table does not know are left out. It reports false when no file has a known format.
func ChooseWritingRelease(files []FileFormat) (WritingRelease, bool) {
	type known struct {
		f      FileFormat
		writes []span
	}
	var ks []known
	gates := map[string]bool{}
	for _, f := range files {
		w := writersOf(f.Kind, f.Format)
		if len(w) == 0 {
			continue
		}
		ks = append(ks, known{f, w})
		for _, s := range w {
			if s.gate != "" {
				gates[s.gate] = true
			}
		}
	}
	if len(ks) == 0 {
		return WritingRelease{}, false
	}
	names := make([]string, 0, len(gates))
	for g := range gates {
		names = append(names, g)
	}
	sort.Strings(names)
	var best WritingRelease
	bestCount := -1
	// Newest release first, defaults before gates turned on: only a strictly better count wins.
	// Pre-releases come last, so one judges only files that no release writes as many of (a
	// node whose files only a 1.38 beta writes).
	candidates := slices.Clone(releases)
	slices.Reverse(candidates)
	newestFirst := slices.Clone(preReleases)
	slices.Reverse(newestFirst)
	candidates = append(candidates, newestFirst...)
	for _, v := range candidates {
		for mask := 0; mask < 1<<len(names); mask++ {
			k := Kubelet{Version: v, Gates: map[string]bool{}}
			for j, g := range names {
				if mask&(1<<j) != 0 {
					k.Gates[g] = true
				}
			}
			count := 0
			for _, kf := range ks {
				if anySpanHas(kf.writes, k) {
					count++
				}
			}
			if count > bestCount {
				best, bestCount = WritingRelease{Kubelet: k}, count
			}
		}
	}
	for _, kf := range ks {
		if anySpanHas(kf.writes, best.Kubelet) {
			best.Writes = append(best.Writes, kf.f)
		} else {
			best.Apart = append(best.Apart, kf.f)
		}
	}
	return best, true
}

// WrittenBy says which kubelets write a format of a file ("1.11-1.19", "1.37+"); empty for a
// format the era table does not know.
func WrittenBy(kind Kind, format string) string {
	return spansProse(writersOf(kind, format))
}

// ReadBy says from which kubelet to which one a restore decodes a file of that format into its
// own layout ("1.11-1.30"), gates aside; patch releases in between may not (dev-v1 files are read
// by 1.20.14+, not 1.20.0). The checksum prose of verify -o json has the detail.
func ReadBy(kind Kind, format string) string {
	var r gatedRange
	open, any := false, false
	for _, e := range erasOf(kind) {
		if e.ID != format {
			continue
		}
		for _, rd := range e.Reads {
			if rd.By.since == nil {
				continue // never in Reads: every read names its first release
			}
			if !any || rd.By.since.LessThan(r.since) {
				r.since = rd.By.since
			}
			if rd.By.until == nil {
				open = true
			} else if r.until == nil || r.until.LessThan(rd.By.until) {
				r.until = rd.By.until
			}
			any = true
		}
	}
	if !any {
		return ""
	}
	if open {
		r.until = nil
	}
	return r.rangeText()
}

// writersOf is the union of Writes of the kind's rows with that ID (dra_health_state has one ID
// over several layouts), and of the newer rows that only add a field: a file of theirs without
// it is byte-identical to this era's (a 1.37 kubelet writes a dra-v2b file when no driver skips
// node operations).
func writersOf(kind Kind, format string) []span {
	var out []span
	rows := erasOf(kind)
	for i, e := range rows {
		if e.ID != format {
			continue
		}
		out = append(out, e.Writes...)
		for j := i - 1; j >= 0 && rows[j].Adds != "" && rows[j].ID != format; j-- {
			if !rows[j].AlwaysMarked {
				out = append(out, rows[j].Writes...)
			}
		}
	}
	return out
}

func anySpanHas(spans []span, k Kubelet) bool {
	for _, s := range spans {
		if s.has(k) {
			return true
		}
	}
	return false
}

// spansProse writes spans as the checksum prose does: "1.18-1.35, 1.36 without
// PodLevelResourceManagers".
func spansProse(spans []span) string {
	if len(spans) == 0 {
		return ""
	}
	sorted := append([]span(nil), spans...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].since.LessThan(sorted[j].since) })
	var set versionSet
	for _, s := range sorted {
		if s.gate == "" || !s.gateOn {
			set.add(s.since, s.until, false)
		}
		if s.gate == "" || s.gateOn {
			set.add(s.since, s.until, true)
		}
	}
	return set.String()
}

// minorOf is "1.36" for v1.36.4: how a sentence names a release line.
func minorOf(k Kubelet) string {
	if k.Version == nil {
		return ""
	}
	return minorText(k.Version.WithPatch(0))
}

// joinFiles lists file paths: "a, b and c".
func joinFiles(fs []FileFormat) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.File
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Why says in a clause why the judge was chosen, for a header line.
func (j WritingRelease) Why() string {
	switch {
	case len(j.Apart) == 0 && len(j.Writes) == 1:
		return "the newest release that writes this file in its format"
	case len(j.Apart) == 0:
		return "the newest release that writes all these files in their formats"
	}
	return "the newest release that writes " + joinFiles(j.Writes) + " in their formats (no release writes all the files together)"
}
