package layering

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/kubectl-nodestate/kubectl-nodestate/"

// A rule: the packages under From (and below) import none of ours outside Allow, and none in Deny.
type rule struct {
	From  string
	Allow []string // when set: the only packages of ours allowed (and their subpackages)
	Deny  []string
}

var upper = []string{"pkg/render", "pkg/cmd", "pkg/cmdutil"}

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
	{From: "pkg/render", Deny: []string{"pkg/cmd", "pkg/cmdutil"}},
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// TestImportGraph checks every package's transitive imports (go list -deps) against the rules.
func TestImportGraph(t *testing.T) {
	statSources(t)
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", module+"pkg/...", module+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		self := strings.TrimPrefix(p.ImportPath, module)
		for _, r := range rules {
			if !under(self, r.From) {
				continue
			}
			checked[r.From] = true
			for _, d := range p.Deps {
				dep, ours := strings.CutPrefix(d, module)
				if !ours {
					continue
				}
				if violates(r, dep) {
					t.Errorf("%s imports %s (rule for %s)", self, dep, r.From)
				}
			}
		}
	}
	for _, must := range []string{"pkg/nodestate", "pkg/doctor", "pkg/decode", "pkg/fetch", "pkg/machine", "pkg/render", "pkg/cgroup", "pkg/nodefs"} {
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
