// What the generators that add a release's reads to the vectors share (alloc, ../readall link
// this file): the release the binary was built against, and one reader's line in an expectation
// of testdata/kubelet/expected.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
)

// release is the k8s.io/kubernetes version this binary was built against: the module's only
// statement of its release.
func release() string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/kubernetes" {
				return d.Version
			}
		}
	}
	fmt.Fprintln(os.Stderr, "no k8s.io/kubernetes in the build info: build the release module")
	os.Exit(2)
	return ""
}

var readLineRE = regexp.MustCompile(`(?m)^    "(v[^"]+)": \{"verdict".*$`)

// setRead puts reader label's line (readLine's) into an existing
// expectation, in version order (the other lines as they are).
func setRead(path, label, read string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("    %q: %s", label, read)
	locs := readLineRE.FindAllSubmatchIndex(b, -1)
	if len(locs) == 0 {
		return fmt.Errorf("%s: no reads", path)
	}
	var lines []string
	for _, l := range locs {
		lines = append(lines, strings.TrimSuffix(string(b[l[0]:l[1]]), ","))
	}
	replaced := false
	for i, l := range lines {
		if strings.HasPrefix(l, fmt.Sprintf("    %q:", label)) {
			lines[i], replaced = line, true
		}
	}
	if !replaced {
		lines = append(lines, line)
	}
	sort.SliceStable(lines, func(i, j int) bool { return versionLess(labelOf(lines[i]), labelOf(lines[j])) })
	out := append([]byte{}, b[:locs[0][0]]...)
	out = append(out, strings.Join(lines, ",\n")...)
	out = append(out, b[locs[len(locs)-1][1]:]...)
	return os.WriteFile(path, out, 0o644)
}

func labelOf(line string) string { l, _, _ := strings.Cut(strings.TrimSpace(line)[1:], `"`); return l }

// versionLess orders "v1.9.0" < "v1.38.0-alpha.0" < "v1.38.0-beta.0" < "v1.38.0".
func versionLess(a, b string) bool {
	pa, pb := versionKey(a), versionKey(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func versionKey(l string) [4]string {
	core, pre, hasPre := strings.Cut(strings.TrimPrefix(strings.SplitN(l, "+", 2)[0], "v"), "-")
	var k [4]string
	for i, p := range strings.SplitN(core, ".", 3) {
		k[i] = fmt.Sprintf("%08s", p)
	}
	k[3] = "~" // a release after its pre-releases
	if hasPre {
		k[3] = pre
	}
	return k
}

// readLine is a reader's verdict and error as an expectation's line holds them.
func readLine(verdict string, err *string) string {
	v, _ := json.Marshal(verdict)
	e, _ := json.Marshal(err)
	return fmt.Sprintf(`{"verdict": %s, "error": %s}`, v, e)
}
