package doctor

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/golden"
)

// TestDiagnoseGolden pins everything Diagnose says on every start vector for every version: the
// fix offered (its config change, the file to delete, what that loses, the alternatives) and
// each finding, first without the API server, then with no pod left in it. The start itself is
// checked against the real kubelet by TestStartConformance and every fix offered is replayed by
// TestFixesVerified; this catches what neither sees: a fix candidate lost (another way is then
// offered, or none), a finding's condition or wording changed. A change here is a behaviour
// change to review in the diff: `go test ./pkg/doctor -run TestDiagnoseGolden -update`.
func TestDiagnoseGolden(t *testing.T) {
	man := loadStartManifest(t)
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(man.Cases)) {
		// Versions that say the same share one block.
		var order []string
		byBlock := map[string][]string{}
		for _, v := range man.Versions {
			block := diagnoseText(diagnoseCase(t, name, v, nil), diagnoseCase(t, name, v, map[string]bool{}))
			block = strings.ReplaceAll(block, "kubelet "+v, "kubelet VERSION")
			if byBlock[block] == nil {
				order = append(order, block)
			}
			byBlock[block] = append(byBlock[block], v)
		}
		for _, block := range order {
			fmt.Fprintf(&out, "== %s @ %s\n%s", name, strings.Join(byBlock[block], " "), block)
		}
	}
	golden.Check(t, filepath.Join("testdata", "diagnose.golden"), []byte(out.String()))
}

// diagnoseText is a result as golden lines; noPods is the same case with an empty API server,
// of which only the findings it adds are written.
func diagnoseText(r, noPods Result) string {
	var b strings.Builder
	ks := r.KubeletStart
	fmt.Fprintf(&b, "starts=%v phase=%s\n", ks.Starts, ks.Phase)
	if f := ks.Fix; f != nil {
		fmt.Fprintf(&b, "fix verified=%v config=%s delete=%s loses=%d\n  %s\n", f.Verified, f.Config, f.Delete, len(f.Loses), f.Text)
		for _, a := range f.Alternatives {
			fmt.Fprintf(&b, "alternative verified=%v config=%s delete=%s loses=%d\n", a.Verified, a.Config, a.Delete, len(a.Loses))
		}
	}
	seen := map[string]bool{}
	for _, f := range r.Findings {
		line := findingText(f, ks.Fix)
		seen[line] = true
		b.WriteString(line)
	}
	for _, f := range noPods.Findings {
		if line := findingText(f, ks.Fix); !seen[line] {
			b.WriteString("no pods: " + line)
		}
	}
	return b.String()
}

// findingText is one finding as a line; the start finding's fix is the fix above it.
func findingText(f Finding, fix *Fix) string {
	if fix != nil && f.Fix == fix.Text {
		f.Fix = "(the fix)"
	}
	return fmt.Sprintf("%s %s %s [%s]: %s | %s\n", f.Severity, f.Check, f.File, f.Entry, f.Message, f.Fix)
}
