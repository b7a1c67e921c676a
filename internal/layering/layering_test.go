package layering

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const module = "github.com/kubectl-nodestate/kubectl-nodestate/"

// A rule: the packages under From (and below) import none of ours outside Allow, and none in Deny.
// A Direct rule looks at the packages' own imports; the others at everything they import,
// directly or not.
type rule struct {
	From   string
	Allow  []string // when set: the only packages of ours allowed (and their subpackages)
	Deny   []string
	Direct bool
}

var upper = []string{"pkg/render", "pkg/cmd", "pkg/cmdutil"}

// engines are what nodestate runs: commands and render reach them only through nodestate.
var engines = []string{"pkg/fetch", "pkg/decode", "pkg/doctor", "pkg/admit", "pkg/replay", "pkg/cgroup", "pkg/machine", "pkg/nodefs", "pkg/nodelocal"}

var rules = []rule{
	{From: "pkg/nodestate", Deny: upper},
	// The engines are pure: no presentation, no commands, no other engine's runner.
	{From: "pkg/doctor", Allow: []string{"pkg/decode", "pkg/machine", "pkg/replay", "pkg/cgroup", "internal/text"}},
	// What the node's cgroups show: bytes in, a model out.
	{From: "pkg/cgroup", Allow: []string{"pkg/machine", "internal/text"}},
	{From: "pkg/admit", Allow: []string{"pkg/decode", "pkg/machine", "pkg/replay", "internal/text"}},
	{From: "pkg/replay", Allow: []string{"pkg/decode", "pkg/machine", "internal/text"}},
	// The shared words are a leaf any layer may use.
	{From: "internal/text", Allow: []string{"internal/text"}},
	// The vector sets' reader serves tests and hack tools, and knows nothing of the product.
	{From: "internal/vectorpack", Allow: []string{"internal/vectorpack"}},
	{From: "pkg/fetch", Deny: append([]string{"pkg/machine", "pkg/nodefs", "pkg/nodestate"}, append(upper, "pkg/decode", "pkg/doctor", "pkg/admit")...)},
	// decode and machine are the floor: nothing of ours but their own insides.
	{From: "pkg/decode", Allow: []string{"pkg/decode"}},
	{From: "pkg/machine", Allow: []string{"pkg/machine"}},
	{From: "pkg/nodefs", Allow: []string{"pkg/nodefs"}},
	// The node this process runs on, read as the debug pod reads it: paths and sections, no verdicts.
	{From: "pkg/nodelocal", Allow: []string{"pkg/fetch", "pkg/cgroup", "pkg/machine", "pkg/nodefs", "internal/text"}},
	{From: "pkg/render", Deny: []string{"pkg/cmd", "pkg/cmdutil"}},
	// nodestate is the only way in: commands and render present its results, and import no
	// engine themselves (they do through nodestate, so the rule looks at their own imports).
	{From: "pkg/render", Deny: engines, Direct: true},
	{From: "pkg/cmd", Deny: engines, Direct: true},
	{From: "pkg/cmdutil", Deny: engines, Direct: true},
	{From: "cmd", Deny: engines, Direct: true},
}

// A pkg is one package of the module and what it imports: Imports its own imports, Deps
// everything it imports, directly or not (go list's fields).
type pkg struct {
	ImportPath    string
	Imports, Deps []string
}

// violations are the rules the packages break, one line each.
func violations(pkgs []pkg) (out []string, checked map[string]bool) {
	checked = map[string]bool{}
	for _, p := range pkgs {
		self := strings.TrimPrefix(p.ImportPath, module)
		for _, r := range rules {
			if !under(self, r.From) {
				continue
			}
			checked[r.From] = true
			deps := p.Deps
			if r.Direct {
				deps = p.Imports
			}
			for _, d := range deps {
				dep, ours := strings.CutPrefix(d, module)
				if ours && violates(r, dep) {
					out = append(out, fmt.Sprintf("%s imports %s (rule for %s)", self, dep, r.From))
				}
			}
		}
	}
	return out, checked
}

// goList lists the module's packages in dir with their imports.
func goList(t *testing.T, dir string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// TestImportGraph checks every package's imports (go list) against the rules.
func TestImportGraph(t *testing.T) {
	statSources(t)
	bad, checked := violations(goList(t, "../.."))
	for _, v := range bad {
		t.Error(v)
	}
	for _, must := range []string{"pkg/nodestate", "pkg/doctor", "pkg/decode", "pkg/fetch", "pkg/machine", "pkg/render", "pkg/cgroup", "pkg/nodefs", "pkg/nodelocal", "pkg/cmd", "pkg/cmdutil", "cmd"} {
		if !checked[must] {
			t.Errorf("no package under %s was checked", must)
		}
	}
}

func violates(r rule, dep string) bool {
	for _, d := range r.Deny {
		if under(dep, d) {
			return true
		}
	}
	if r.Allow == nil {
		return false
	}
	for _, a := range r.Allow {
		if under(dep, a) {
			return false
		}
	}
	return true
}

// The rules catch what they are for.
func TestRulesBite(t *testing.T) {
	for _, tc := range []struct {
		from, dep string
		bad       bool
	}{
		{"pkg/nodestate", "pkg/render", true},
		{"pkg/nodestate", "pkg/doctor", false},
		{"pkg/decode", "pkg/decode/internal/kubelet/checksum", false},
		{"pkg/decode", "pkg/machine", true},
		{"pkg/fetch", "pkg/machine", true},
		{"pkg/replay", "pkg/doctor", true},
		{"pkg/doctor", "pkg/replay", false},
	} {
		for _, r := range rules {
			if r.From == tc.from && violates(r, tc.dep) != tc.bad {
				t.Errorf("%s -> %s: violation %v, want %v", tc.from, tc.dep, !tc.bad, tc.bad)
			}
		}
	}
}

// The new rules over synthetic graphs: commands and render may reach an engine through
// nodestate, never on their own.
func TestOneWayIn(t *testing.T) {
	ours := func(ps ...string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = module + p
		}
		return out
	}
	for _, tc := range []struct {
		name string
		pkg  pkg
		bad  int
	}{
		{"render through nodestate", pkg{module + "pkg/render", ours("pkg/nodestate"), ours("pkg/nodestate", "pkg/decode", "pkg/doctor")}, 0},
		{"render imports decode", pkg{module + "pkg/render", ours("pkg/nodestate", "pkg/decode"), ours("pkg/nodestate", "pkg/decode")}, 1},
		{"render imports cgroup and admit", pkg{module + "pkg/render", ours("pkg/cgroup", "pkg/admit"), nil}, 2},
		{"show imports decode", pkg{module + "pkg/cmd/show", ours("pkg/cmdutil", "pkg/decode"), nil}, 1},
		{"cleanup imports fetch", pkg{module + "pkg/cmd/cleanup", ours("pkg/fetch"), nil}, 1},
		{"admit imports fetch/local", pkg{module + "pkg/cmd/admit", ours("pkg/fetch/local"), nil}, 1},
		{"cmdutil imports fetch", pkg{module + "pkg/cmdutil", ours("pkg/fetch"), nil}, 1},
		{"node-check imports nodelocal", pkg{module + "pkg/cmd/nodecheck", ours("pkg/cmdutil", "pkg/nodestate", "pkg/nodelocal"), nil}, 1},
		{"nodelocal reads through fetch and cgroup", pkg{module + "pkg/nodelocal", ours("pkg/fetch", "pkg/cgroup"), ours("pkg/fetch", "pkg/cgroup", "pkg/machine")}, 0},
		{"nodelocal judges with doctor", pkg{module + "pkg/nodelocal", ours("pkg/doctor"), ours("pkg/doctor")}, 1},
		{"main imports machine", pkg{module + "cmd/kubectl-nodestate", ours("pkg/cmd", "pkg/machine"), nil}, 1},
		{"a command through nodestate", pkg{module + "pkg/cmd/verify", ours("pkg/cmdutil", "pkg/nodestate", "pkg/render"), ours("pkg/fetch", "pkg/replay")}, 0},
	} {
		if bad, _ := violations([]pkg{tc.pkg}); len(bad) != tc.bad {
			t.Errorf("%s: %q, want %d violations", tc.name, bad, tc.bad)
		}
	}
}

// An import planted in a scratch copy of the module breaks the rule: render importing decode,
// and a command importing fetch, are each one violation that go list sees.
func TestPlantedImportFails(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module's Go files")
	}
	dir := t.TempDir()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", p)
		if d.IsDir() {
			if rel != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || rel == "hack" || rel == "test" || rel == "docs") {
				return filepath.SkipDir
			}
			// A nested module (scheduler/) is not this module's: copied without its go.mod, its
			// packages would join this one and miss their requirements.
			if _, err := os.Stat(filepath.Join(p, "go.mod")); rel != "." && err == nil {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".go") && rel != "go.mod" && rel != "go.sum" || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad, _ := violations(goList(t, dir)); len(bad) != 0 {
		t.Fatalf("the copy breaks rules before the plant: %q", bad)
	}
	plant := map[string]string{
		"pkg/render/planted.go":   "package render\n\nimport _ \"" + module + "pkg/decode\"\n",
		"pkg/cmd/show/planted.go": "package show\n\nimport _ \"" + module + "pkg/fetch\"\n",
	}
	for name, src := range plant {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad, _ := violations(goList(t, dir))
	want := []string{"pkg/cmd/show imports pkg/fetch (rule for pkg/cmd)", "pkg/render imports pkg/decode (rule for pkg/render)"}
	if !reflect.DeepEqual(bad, want) && !reflect.DeepEqual(bad, []string{want[1], want[0]}) {
		t.Errorf("planted imports: %q, want %q", bad, want)
	}
}

// statSources stats every Go file of the module: go test caches a passing test by the files it
// touched, and go list's reads are not the test's, so without this an import added later would
// pass from the cache.
func statSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
