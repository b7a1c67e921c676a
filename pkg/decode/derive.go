package decode

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// What the era table implies, computed once when the package loads: the eras of each file, each
// era's home reader, and who checks each of its checksums.

type eraIndex struct {
	byKind map[Kind][]*era
	home   map[*era]*Kubelet
	prose  map[*era][]string // per Sums entry
}

var index = buildIndex()

func buildIndex() *eraIndex {
	ix := &eraIndex{byKind: map[Kind][]*era{}, home: map[*era]*Kubelet{}, prose: map[*era][]string{}}
	for _, e := range eras {
		for _, k := range e.Kinds {
			ix.byKind[k] = append(ix.byKind[k], e)
		}
	}
	for _, e := range eras {
		ix.home[e] = homeOf(ix, e)
		for _, s := range e.Sums {
			ix.prose[e] = append(ix.prose[e], readersProse(ix, e, s))
		}
	}
	return ix
}

func erasOf(kind Kind) []*era { return index.byKind[kind] }

// attemptsOf is kubelet k's restore path for a file: one attempt per era whose layout it
// decodes into, newest first (a read marked First goes before the others).
func attemptsOf(ix *eraIndex, kind Kind, k Kubelet) []attempt {
	var out []attempt
	for _, e := range ix.byKind[kind] {
		r := e.readBy(k)
		if r == nil {
			continue
		}
		a := attempt{Layout: e.Layout, Rules: r.Rules, Note: r.Note, Authoritative: r.Authoritative,
			Quiet: r.Quiet, Keeps: r.Keeps, Names: r.Names}
		if a.Rules == nil && len(e.Sums) > 0 {
			a.Rules = []*checksumRule{e.Sums[0].Rule}
		}
		if r.First {
			out = append([]attempt{a}, out...)
		} else {
			out = append(out, a)
		}
	}
	return out
}

// readBy returns the read of e by k (nil if k does not decode the file into e's layout).
func (e *era) readBy(k Kubelet) *read {
	for i := range e.Reads {
		if e.Reads[i].By.has(k) {
			return &e.Reads[i]
		}
	}
	return nil
}

// wrapOf is how kubelet k words a failure to restore the file.
func wrapOf(kind Kind, k Kubelet) string {
	for _, w := range files[kind].Wrap {
		if w.By.has(k) {
			return w.Text
		}
	}
	return wrapNone
}

// refusedOf is what kubelet k does once it refuses the file.
func refusedOf(kind Kind, k Kubelet) *Refusal {
	for _, r := range files[kind].Refused {
		if r.By.has(k) {
			return &r.Refusal
		}
	}
	return nil
}

// homeOf is the kubelet that judges a file of era e when none is given: the newest release
// writing e whose restore checks e's own rule first (1.36 with the gate off writes V2 files but
// first tries a name no release wrote, so the V2 home is 1.35). Gates a writer needs are on.
func homeOf(ix *eraIndex, e *era) *Kubelet {
	// Releases first; a pre-release homes only an era no release writes.
	candidates := append(slices.Clone(releases), preReleases...)
	for i := len(candidates) - 1; i >= 0; i-- {
		if i >= len(releases) && homeFromReleases(e) {
			continue
		}
		for _, w := range e.Writes {
			k := Kubelet{Version: candidates[i], Gates: map[string]bool{}}
			if w.gate != "" {
				k.Gates[w.gate] = w.gateOn
			}
			if !w.has(k) {
				continue
			}
			r := e.readBy(k)
			if r == nil {
				continue
			}
			// A gate set off stays in Gates: String names only the gates that are on.
			if len(e.Sums) == 0 || r.Rules == nil || r.Rules[0] == e.Sums[0].Rule {
				return &k
			}
		}
	}
	panic("era " + e.ID + ": no release in the releases list writes it and reads it back")
}

// homeFromReleases: some release writes e.
func homeFromReleases(e *era) bool {
	for _, v := range releases {
		for _, w := range e.Writes {
			if w.containsVersion(v) {
				return true
			}
		}
	}
	return false
}

func parseReleases(labels ...string) []*version.Version {
	out := make([]*version.Version, len(labels))
	for i, l := range labels {
		out[i] = version.MustParseGeneric(l)
	}
	return out
}

// ---------------------------------------------------------------- who checks a checksum

// A cell is the kubelets [at, next bound) with one gate setting: the prose is computed over the
// cells the kind's spans cut the versions into.
type cell struct {
	at     *version.Version
	gateOn bool
}

// readersProse says which kubelets check checksum s of a file of era e: those reading e's
// layout with a rule of the same ID, and those not reading e's layout but checking the same rule
// through another era's (an older layout, which drops what e added; a legacy retry). A
// kubelet's stored-0 shortcut and fallbacks whose error is not reported are said too.
func readersProse(ix *eraIndex, e *era, s sum) string {
	bounds := kindBounds(ix, e.Kinds[0])
	type status struct{ reads, quiet, zero, drop, legacy bool }
	at := func(c cell) status {
		k := Kubelet{Version: c.at, Gates: map[string]bool{GatePodLevelResourceManagers: c.gateOn}}
		var st status
		own := e.readBy(k)
		for _, other := range ix.byKind[e.Kinds[0]] {
			r := other.readBy(k)
			if r == nil || (own != nil && other != e) {
				continue
			}
			rules := r.Rules
			if rules == nil && len(other.Sums) > 0 {
				rules = []*checksumRule{other.Sums[0].Rule}
			}
			for _, rule := range rules {
				if rule.ID != s.Rule.ID {
					continue
				}
				st.reads, st.quiet, st.legacy = true, r.Quiet, rule.Legacy
				st.zero = rule.ZeroOK != nil && rule.ZeroOK.has(k)
				st.drop = other != e && e.Adds != "" && isOlder(ix, other, e)
				return st
			}
		}
		return st
	}
	var main, quiet, zero, drop, legacy versionSet
	for i, b := range bounds {
		var next *version.Version
		if i+1 < len(bounds) {
			next = bounds[i+1]
		}
		for _, on := range []bool{false, true} {
			st := at(cell{b, on})
			if !st.reads {
				continue
			}
			if st.quiet {
				quiet.add(b, next, on)
			} else {
				main.add(b, next, on)
			}
			if st.zero {
				zero.add(b, next, on)
			}
			if st.drop {
				drop.add(b, next, on)
			}
			if st.legacy {
				legacy.add(b, next, on)
			}
		}
	}
	text := "kubelet " + main.String()
	if main.singleMinor() && quiet.empty() {
		text += " only"
	}
	if !quiet.empty() {
		text += "; " + quiet.String() + " as a fallback"
	}
	var notes []string
	if !drop.empty() {
		notes = append(notes, drop.String()+" drop "+e.Adds)
	}
	if !legacy.empty() {
		notes = append(notes, legacy.String()+" through their legacy check")
	}
	switch {
	case zero.empty():
	case zero.equal(main.union(quiet)):
		notes = append(notes, "0 accepted unverified")
	case zero.suffixOf(main.union(quiet)):
		notes = append(notes, "0 accepted unverified from "+zero.ranges[0].sinceText())
	default:
		notes = append(notes, "0 accepted unverified by "+zero.String())
	}
	if len(notes) > 0 {
		text += " (" + strings.Join(notes, "; ") + ")"
	}
	return text
}

// isOlder reports whether era a was first written before era b.
func isOlder(ix *eraIndex, a, b *era) bool {
	first := func(e *era) *version.Version {
		var v *version.Version
		for _, w := range e.Writes {
			if w.since != nil && (v == nil || w.since.LessThan(v)) {
				v = w.since
			}
		}
		return v
	}
	fa, fb := first(a), first(b)
	return fa != nil && fb != nil && fa.LessThan(fb)
}

// kindBounds are the sorted distinct version bounds of every span of a kind's reads and zero
// shortcuts: between two consecutive ones, every kubelet behaves alike.
func kindBounds(ix *eraIndex, kind Kind) []*version.Version {
	var out []*version.Version
	addBound := func(v *version.Version) {
		if v == nil {
			return
		}
		for _, o := range out {
			if o.EqualTo(v) {
				return
			}
		}
		out = append(out, v)
	}
	for _, e := range ix.byKind[kind] {
		for _, r := range e.Reads {
			addBound(r.By.since)
			addBound(r.By.until)
			for _, rule := range r.Rules {
				if rule.ZeroOK != nil {
					addBound(rule.ZeroOK.since)
					addBound(rule.ZeroOK.until)
				}
			}
		}
		for _, s := range e.Sums {
			if s.Rule.ZeroOK != nil {
				addBound(s.Rule.ZeroOK.since)
				addBound(s.Rule.ZeroOK.until)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LessThan(out[j]) })
	return out
}

// A versionSet is kubelet version ranges, each for the gate off, on, or both.
type versionSet struct{ ranges []gatedRange }

type gatedRange struct {
	since, until *version.Version
	off, on      bool
}

func (s *versionSet) add(since, until *version.Version, gateOn bool) {
	// Same range as the last one: the other gate setting.
	if n := len(s.ranges); n > 0 && s.ranges[n-1].since.EqualTo(since) {
		if gateOn {
			s.ranges[n-1].on = true
		} else {
			s.ranges[n-1].off = true
		}
		s.merge()
		return
	}
	s.ranges = append(s.ranges, gatedRange{since: since, until: until, off: !gateOn, on: gateOn})
	s.merge()
}

// merge joins the last range into the one before when they touch and agree on the gate.
func (s *versionSet) merge() {
	n := len(s.ranges)
	if n < 2 {
		return
	}
	a, b := s.ranges[n-2], s.ranges[n-1]
	if a.until != nil && a.until.EqualTo(b.since) && a.on == b.on && a.off == b.off {
		s.ranges[n-2].until = b.until
		s.ranges = s.ranges[:n-1]
	}
}

func (s versionSet) empty() bool { return len(s.ranges) == 0 }

// suffixOf: s is one range, for both gate settings, ending where all ends.
func (s versionSet) suffixOf(all versionSet) bool {
	if len(s.ranges) != 1 || all.empty() || !s.ranges[0].on || !s.ranges[0].off {
		return false
	}
	a, b := s.ranges[0].until, all.ranges[len(all.ranges)-1].until
	return (a == nil && b == nil) || (a != nil && b != nil && a.EqualTo(b))
}

func (s versionSet) singleMinor() bool {
	if len(s.ranges) != 1 {
		return false
	}
	r := s.ranges[0]
	return r.until != nil && r.since.Patch() == 0 && r.until.Patch() == 0 && r.until.Minor() == r.since.Minor()+1
}

func (s versionSet) equal(o versionSet) bool { return s.String() == o.String() }

func (s versionSet) union(o versionSet) versionSet {
	out := versionSet{}
	all := append(append([]gatedRange(nil), s.ranges...), o.ranges...)
	sort.Slice(all, func(i, j int) bool { return all[i].since.LessThan(all[j].since) })
	for _, r := range all {
		out.ranges = append(out.ranges, r)
		out.merge()
	}
	return out
}

func (s versionSet) String() string {
	parts := make([]string, len(s.ranges))
	for i, r := range s.ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

func (r gatedRange) sinceText() string { return minorText(r.since) }

func (r gatedRange) String() string {
	text := r.rangeText()
	switch {
	case r.on && !r.off:
		text += " with " + GatePodLevelResourceManagers
	case r.off && !r.on:
		text += " without " + GatePodLevelResourceManagers
	}
	return text
}

// rangeText writes [since, until) by minors: "1.18-1.36", "1.30", "1.37+", and a range starting
// at a patch release "1.20.14+" (to the end of that minor), "1.22.5+ and 1.23-1.30".
func (r gatedRange) rangeText() string {
	since := r.since
	prefix := ""
	if since.Patch() != 0 {
		nextMinor := version.MajorMinor(since.Major(), since.Minor()+1)
		prefix = fmt.Sprintf("%d.%d.%d+", since.Major(), since.Minor(), since.Patch())
		if r.until == nil || !nextMinor.LessThan(r.until) {
			return prefix
		}
		prefix += " and "
		since = nextMinor
	}
	if r.until == nil {
		return prefix + minorText(since) + "+"
	}
	last := version.MajorMinor(r.until.Major(), r.until.Minor()-1)
	if r.until.Patch() != 0 {
		last = version.MajorMinor(r.until.Major(), r.until.Minor())
	}
	if last.Minor() == since.Minor() {
		return prefix + minorText(since)
	}
	return prefix + minorText(since) + "-" + minorText(last)
}

func minorText(v *version.Version) string {
	if v.Patch() != 0 {
		return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch())
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}
