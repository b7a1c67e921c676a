package replay

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// The kubelet's rejectPod words a refused pod's status message by release (kubelet.go:1967 in
// 1.25, :2070 in 1.26, :2647 in 1.37); the handler's message stays whole behind the prefix.
func TestRejectedStatusMessage(t *testing.T) {
	msg := "Node didn't have enough resource: cpu, requested: 1000, used: 500, capacity: 1000"
	for v, want := range map[string]string{
		"v1.25.16": "Pod " + msg,
		"v1.26.0":  "Pod was rejected: " + msg,
		"v1.37.1":  "Pod was rejected: " + msg,
		"v1.40.0":  "Pod was rejected: " + msg,
	} {
		r, ok := rulesFor(version.MustParseSemantic(v))
		if !ok {
			t.Fatalf("%s: no release row", v)
		}
		if got := r.RejectedStatusMessage(msg); got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
}

// A rule's ranges must not overlap (two rows at one release would make the later one win
// silently), and each must end after it starts.
func TestReleaseRuleRangesDisjoint(t *testing.T) {
	type row struct {
		key          string
		since, until *version.Version
	}
	var rows []row
	for _, r := range behaviourRanges {
		rows = append(rows, row{fmt.Sprint("behaviour ", int(r.Behaviour)), r.Since, r.Until})
	}
	for _, r := range cpuOptionLevels {
		rows = append(rows, row{"cpu option " + r.Option, r.Since, r.Until})
	}
	for _, r := range topologyOptionLevels {
		rows = append(rows, row{"topology option " + r.Option, r.Since, r.Until})
	}
	for _, r := range cpuOptionConflicts {
		rows = append(rows, row{fmt.Sprint("conflict ", r.Options), r.Since, r.Until})
	}
	for i, a := range rows {
		if a.since.LessThan(oldestReplayed) || (a.until != nil && !a.since.LessThan(a.until)) {
			t.Errorf("%s: [%s, %v) is not a range of releases replayed", a.key, a.since, a.until)
		}
		for _, b := range rows[i+1:] {
			if a.key == b.key && (b.until == nil || a.since.LessThan(b.until)) && (a.until == nil || b.since.LessThan(a.until)) {
				t.Errorf("%s: [%s, %v) overlaps [%s, %v)", a.key, a.since, a.until, b.since, b.until)
			}
		}
	}
	seen := map[Behaviour]bool{}
	for _, r := range behaviourRanges {
		seen[r.Behaviour] = true
	}
	for b := Behaviour(0); b < behaviourCount; b++ {
		if !seen[b] {
			t.Errorf("behaviour %d has no range", b)
		}
	}
}
