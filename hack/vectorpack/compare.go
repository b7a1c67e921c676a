package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
)

// leadingRelease is the release a set's file is named after ("v1.38.0-beta.0-readmit").
var leadingRelease = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?`)

// compareSets writes, for the cases two sets both hold (the same case under two releases,
// hack/release-day.sh compare), how many the real code judged otherwise on the same inputs: each
// is a release row to write, or a pick the kubelet makes at random (the conformance tests judge).
// JSON is compared as values, each set's release name taken as the same word (the generators
// record the release that ran).
func compareSets(w io.Writer, fromFile, toFile string) error {
	from, err := vectorpack.ReadFile(fromFile)
	if err != nil {
		return err
	}
	to, err := vectorpack.ReadFile(toFile)
	if err != nil {
		return err
	}
	fromRelease := leadingRelease.FindString(filepath.Base(fromFile))
	toRelease := leadingRelease.FindString(filepath.Base(toFile))
	var both, onlyFrom, onlyTo int
	var inputs, results, picks []string
	for _, a := range from.Cases {
		b, ok := to.Case(a.Name)
		if !ok {
			onlyFrom++
			continue
		}
		both++
		if file := differentInput(a, b, fromRelease, toRelease); file != "" {
			inputs = append(inputs, a.Name+" ("+file+")")
		} else if !sameContent(a.Expected, b.Expected, fromRelease, toRelease) {
			if pickedAmongInterchangeable(a.Expected) && pickedAmongInterchangeable(b.Expected) {
				picks = append(picks, a.Name)
			} else {
				results = append(results, a.Name)
			}
		}
	}
	for _, b := range to.Cases {
		if _, ok := from.Case(b.Name); !ok {
			onlyTo++
		}
	}
	fmt.Fprintf(w, "%d cases in both: %d with other results, %d with other picks among interchangeable devices, %d with other inputs (set up again by the release); %d only %s, %d only %s\n",
		both, len(results), len(picks), len(inputs), onlyFrom, fromRelease, onlyTo, toRelease)
	for _, name := range results[:min(len(results), 5)] {
		fmt.Fprintf(w, "  results: %s\n", name)
	}
	for _, name := range picks[:min(len(picks), 2)] {
		fmt.Fprintf(w, "  picks:   %s\n", name)
	}
	for _, name := range inputs[:min(len(inputs), 2)] {
		fmt.Fprintf(w, "  inputs:  %s\n", name)
	}
	return nil
}

// pickedAmongInterchangeable: the device manager chose among interchangeable devices (the
// expectation's deviceChoice "symmetric", testdata/admission/README-devices.md), so two runs of
// one release may name other devices; the conformance tests compare such results up to swaps.
func pickedAmongInterchangeable(expected []byte) bool {
	var compact bytes.Buffer
	return json.Compact(&compact, expected) == nil && bytes.Contains(compact.Bytes(), []byte(`"deviceChoice":"symmetric"`))
}

// differentInput is the name of the first of a's and b's files (everything but the results)
// that differ, "" when none does: a case whose inputs differ was set up otherwise by the
// release (its own seeding, or a seed's random device pick), so its results are not comparable.
func differentInput(a, b vectorpack.Case, fromRelease, toRelease string) string {
	for _, name := range slices.Sorted(maps.Keys(a.Files)) {
		if !sameContent(a.Files[name], b.Files[name], fromRelease, toRelease) {
			return name
		}
	}
	for name := range b.Files {
		if _, ok := a.Files[name]; !ok {
			return name
		}
	}
	return ""
}

func sameContent(a, b []byte, fromRelease, toRelease string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(renamed(x, fromRelease), renamed(y, toRelease))
}

// renamed is v with every string naming the release (as a word) given as "RELEASE".
func renamed(v any, release string) any {
	switch v := v.(type) {
	case string:
		if release != "" && strings.Contains(v, release) {
			return strings.ReplaceAll(v, release, "RELEASE")
		}
		return v
	case []any:
		for i := range v {
			v[i] = renamed(v[i], release)
		}
	case map[string]any:
		for k := range v {
			v[k] = renamed(v[k], release)
		}
	}
	return v
}
