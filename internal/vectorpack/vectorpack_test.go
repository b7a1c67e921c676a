package vectorpack

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (slash paths) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A generator's tree: shared inputs, nested and binary files, a manifest restating the cases.
var tree = map[string]string{
	"MANIFEST.json": `{"schema":"admitvec/manifest/v1","kubelet":"v1.37.1","cases":{
		"a":{"dir":"cases/a","files":["machine.json","pod.json"],"outcome":"admit","outcome2":null,"description":"first","tags":["x"],"stratum":"s1","expected":{"starts":true}},
		"b":{"dir":"cases/b","files":["machine.json"],"description":"second","tags":[],"expected":{"starts":false,"pods":[]}}}}`,
	"cases/a/machine.json":        "{\"cpus\":[0,1]}\n",
	"cases/a/pod.json":            `{"metadata":{"name":"p"}}`,
	"cases/a/expected.json":       "{\"starts\": true}\n",
	"cases/a/setup/meta.json":     `{"description":"first","tags":["x"]}`,
	"cases/a/device-plugins/ckpt": "not json\r\nat all",
	"cases/b/machine.json":        "{\"cpus\":[0,1]}\n",
	"cases/b/bin":                 "\xff\x00\xfe",
	"cases/b/expected.json":       `{"starts":false,"pods":[]}`,
}

func packTree(t testing.TB) ([]byte, *Set) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, tree)
	s, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), s
}

func TestRoundTrip(t *testing.T) {
	packed, _ := packTree(t)
	s, err := Read(bytes.NewReader(packed))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MetaString("kubelet"); got != "v1.37.1" {
		t.Errorf("meta kubelet %q", got)
	}
	if _, ok := s.Meta["cases"]; ok {
		t.Error("the manifest's cases kept in meta")
	}
	// The shared machine.json is stored once: 5 distinct contents for 6 files.
	if n := strings.Count(string(packed), `{"blob":`); n != 5 {
		t.Errorf("%d blobs, want 5:\n%s", n, packed)
	}
	out := t.TempDir()
	if err := s.Unpack(out); err != nil {
		t.Fatal(err)
	}
	for name, want := range tree {
		if name == "MANIFEST.json" || strings.HasSuffix(name, "expected.json") {
			continue
		}
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q (%v), want %q", name, got, err, want)
		}
	}
	a, _ := s.Case("a")
	if string(a.Expected) != `{"starts":true}` {
		t.Errorf("expectation %s", a.Expected)
	}
	// Only what no file restates stays of the manifest's entry.
	if got := keys(a.Info); !reflect.DeepEqual(got, []string{"stratum"}) {
		t.Errorf("case a info %v, want only stratum", got)
	}
	if b, _ := s.Case("b"); !reflect.DeepEqual(keys(b.Info), []string{"description", "tags"}) {
		t.Errorf("case b info %v, want description and tags (no setup/meta.json)", keys(b.Info))
	}
	// Packing is deterministic.
	again, _ := packTree(t)
	if !bytes.Equal(packed, again) {
		t.Error("two packs of one tree differ")
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// TestReadRefuses: each way a packed set can lose or change a vector fails to load.
func TestReadRefuses(t *testing.T) {
	packed, _ := packTree(t)
	lines := strings.SplitAfter(strings.TrimSuffix(string(packed), "\n"), "\n")
	without := func(i int) string { return strings.Join(append(append([]string{}, lines[:i]...), lines[i+1:]...), "") }
	for _, tc := range []struct {
		name, packed, want string
	}{
		{"case deleted", without(1), "1 cases, the header says 2"},
		{"blob deleted", without(len(lines) - 1), "which the set does not hold"},
		{"expectation deleted", strings.Replace(string(packed), `,"expected":{"starts":true}`, "", 1), "has no expectation"},
		{"blob changed", strings.Replace(string(packed), `{"metadata":{"name":"p"}}`, `{"metadata":{"name":"q"}}`, 1), "hash to"},
		{"header count changed with the case", strings.Replace(without(1), `"cases":2`, `"cases":1`, 1), "blobs no case names"},
		{"unknown field", strings.Replace(string(packed), `"case":"a"`, `"case":"a","extra":1`, 1), "unknown field"},
		{"cases out of order", lines[0] + lines[2] + lines[1] + strings.Join(lines[3:], ""), "out of order"},
		{"empty", "", "no header"},
		{"wrong schema", strings.Replace(string(packed), Schema, "vectorpack/v0", 1), "schema"},
	} {
		if _, err := Read(strings.NewReader(tc.packed)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestFromDirRefuses: a manifest that disagrees with the directories is not packed.
func TestFromDirRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, file, body, want string
	}{
		{"expected.json differs", "cases/a/expected.json", `{"starts":false}`, "differs from the manifest's expected"},
		{"case without manifest entry", "cases/c/expected.json", `{}`, "not in MANIFEST.json"},
		{"listed file missing", "MANIFEST.json", strings.Replace(tree["MANIFEST.json"], `["machine.json"]`, `["machine.json","pod2.json"]`, 1), "no such file"},
		{"manifest case without directory", "MANIFEST.json", strings.Replace(tree["MANIFEST.json"], `"b":{"dir":"cases/b"`, `"b":{"dir":"cases/b"},"z":{"dir":"cases/z"`, 1), "has no directory"},
	} {
		dir := t.TempDir()
		writeTree(t, dir, tree)
		writeTree(t, dir, map[string]string{tc.file: tc.body})
		if _, err := FromDir(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestReadDirRefusesUnpackedSet: a set added as directories is not skipped.
func TestReadDirRefusesUnpackedSet(t *testing.T) {
	dir := t.TempDir()
	packed, _ := packTree(t)
	writeTree(t, dir, map[string]string{"one" + Ext: string(packed), "README.md": "x", "new/MANIFEST.json": "{}"})
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "go run ./hack/vectorpack") {
		t.Errorf("error %v, want the pack command", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	sets, err := ReadDir(dir)
	if err != nil || len(sets) != 1 || sets[0].Name != "one" {
		t.Errorf("ReadDir: %v sets, %v", len(sets), err)
	}
}

// TestWriteDirStaysInside: a packed name cannot write outside the directory.
func TestWriteDirStaysInside(t *testing.T) {
	for _, name := range []string{"../x", "/etc/x", "a/../../x", "a\\..\\x", ""} {
		c := Case{Name: "c", Expected: []byte(`{}`), Files: map[string][]byte{name: []byte("x")}}
		if err := c.WriteDir(t.TempDir()); err == nil {
			t.Errorf("%q written", name)
		}
	}
}

// FuzzRead: whatever a packed file holds, Read neither panics nor returns a set that does not
// pack back to a set it reads the same.
func FuzzRead(f *testing.F) {
	packed, _ := packTree(f)
	f.Add(packed)
	f.Add([]byte(`{"schema":"vectorpack/v1","cases":0,"blobs":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, s); err != nil {
			return // a set Read accepts but Write refuses (e.g. an expectation that is not JSON)
		}
		back, err := Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("a written set does not read back: %v", err)
		}
		if len(back.Cases) != len(s.Cases) {
			t.Fatalf("%d cases read back, %d written", len(back.Cases), len(s.Cases))
		}
		for i, c := range s.Cases {
			if !reflect.DeepEqual(back.Cases[i].Files, c.Files) {
				t.Fatalf("case %s: files differ after a round trip", c.Name)
			}
		}
	})
}

// BenchmarkReadAdmission: every admission set read and checked (10,162 cases), as the
// conformance test loads them.
func BenchmarkReadAdmission(b *testing.B) {
	for b.Loop() {
		if _, err := ReadDir("../../testdata/admission"); err != nil {
			b.Fatal(err)
		}
	}
}
