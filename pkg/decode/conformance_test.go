package decode

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The conformance suite: every file of the kubelet vectors (written by the real kubelet code of
// each release; their expectations are in testdata/kubelet/expected) must be judged as the real readers judged
// it, its hashed text reproduced byte for byte, and its content decoded as the writer decoded it.

const (
	vectorsDir  = "../../testdata/kubelet"
	expectedDir = vectorsDir + "/expected"
)

type manifestEntry struct {
	File            string          `json:"-"` // the path under testdata/kubelet
	Component       string          `json:"component"`
	Writer          string          `json:"writer"`
	Format          string          `json:"format"`
	Case            string          `json:"case"`
	Mutation        *string         `json:"mutation"`
	ExpectedVerdict Verdict         `json:"expectedVerdict"`
	ExpectedError   *string         `json:"expectedError"`
	ExpectedDecoded json.RawMessage `json:"expectedDecoded"`
	HashedText      *string         `json:"hashedText"`
	DataHashedText  *string         `json:"dataHashedText"`
	Reads           map[string]struct {
		Verdict Verdict `json:"verdict"`
		Error   *string `json:"error"`
		// Dropped is the entries that reader's restore skipped (the device manager's), when the
		// vector records them (hack/restorevec/device).
		Dropped *[]droppedRead `json:"dropped"`
	} `json:"reads"`
}

// loadManifest reads the expectations of every vector that testdata/kubelet/MANIFEST lists:
// expectedDir holds, at each vector's path, its <case>.json and the texts its writer hashed
// (<case>.hashed.txt, .data-hashed.txt), as its MANIFEST line says. The list is the count: a
// vector, an expectation or a hashed text that is missing fails, and so does one the list lacks.
func loadManifest(t testing.TB) []manifestEntry {
	t.Helper()
	listed := readVectorList(t)
	checkVectorTree(t, listed)
	out := make([]manifestEntry, 0, len(listed))
	for _, v := range listed {
		stem := filepath.Join(expectedDir, strings.TrimSuffix(v.path, ".json"))
		raw, err := os.ReadFile(stem + ".json")
		if err != nil {
			t.Fatalf("%s: no expectation: %v", v.path, err)
		}
		var e manifestEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %v", stem+".json", err)
		}
		e.File = v.path
		if e.HashedText, err = expectedText(stem+".hashed.txt", v.hashed); err != nil {
			t.Fatal(err)
		}
		if e.DataHashedText, err = expectedText(stem+".data-hashed.txt", v.dataHashed); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// listedVector is one line of testdata/kubelet/MANIFEST.
type listedVector struct {
	path               string
	hashed, dataHashed bool
}

func readVectorList(t testing.TB) []listedVector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(vectorsDir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	var out []listedVector
	seen := map[string]bool{}
	for n, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		v := listedVector{path: fields[0]}
		for _, f := range fields[1:] {
			switch f {
			case "hashed":
				v.hashed = true
			case "data-hashed":
				v.dataHashed = true
			default:
				t.Fatalf("MANIFEST:%d: unknown flag %q", n+1, f)
			}
		}
		if seen[v.path] || !strings.HasSuffix(v.path, ".json") {
			t.Fatalf("MANIFEST:%d: %q listed twice or not a .json vector", n+1, v.path)
		}
		seen[v.path] = true
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatal("MANIFEST lists no vector")
	}
	return out
}

// checkVectorTree: the files under testdata/kubelet are exactly the listed vectors, and those
// under expected/ exactly their expectations (and its README).
func checkVectorTree(t testing.TB, listed []listedVector) {
	t.Helper()
	want := map[string]bool{"MANIFEST": true, "expected/README.md": true}
	for _, v := range listed {
		stem := "expected/" + strings.TrimSuffix(v.path, ".json")
		want[v.path], want[stem+".json"] = true, true
		if v.hashed {
			want[stem+".hashed.txt"] = true
		}
		if v.dataHashed {
			want[stem+".data-hashed.txt"] = true
		}
	}
	found := map[string]bool{}
	err := filepath.WalkDir(vectorsDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(vectorsDir, p)
		found[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if !found[f] {
			t.Errorf("testdata/kubelet/%s: listed by MANIFEST, missing", f)
			bad++
		}
	}
	for _, f := range slices.Sorted(maps.Keys(found)) {
		if !want[f] {
			t.Errorf("testdata/kubelet/%s: not listed by MANIFEST (a new vector gets a MANIFEST line)", f)
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d files differ from MANIFEST's %d vectors", bad, len(listed))
	}
}

// expectedText reads a hashed text that MANIFEST says is there.
func expectedText(path string, listed bool) (*string, error) {
	if !listed {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// writerReader is the reader the expected* fields come from.
func (e manifestEntry) writerReader() string {
	if e.Writer == "synthetic" || e.Writer == "" {
		return "v1.35.8" // synthetic files are judged by the v1.35.8 reader (see the spec)
	}
	return e.Writer
}

func (e manifestEntry) raw(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(vectorsDir, e.File))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformanceReadsMatrix(t *testing.T) {
	for _, e := range loadManifest(t) {
		raw := e.raw(t)
		kind := Kind(e.Component)
		t.Run(e.File, func(t *testing.T) {
			for label, want := range e.Reads {
				k, err := ParseKubelet(label, nil)
				if err != nil {
					t.Fatal(err)
				}
				rep := Decode(kind, raw, Options{Kubelet: &k})
				if rep.Verdict != want.Verdict {
					t.Errorf("reader %s: verdict %s, want %s (error %q, want %q)", label, rep.Verdict, want.Verdict, rep.Error, deref(want.Error))
					continue
				}
				if want.Error != nil && rep.Error != *want.Error {
					t.Errorf("reader %s: error\n got %q\nwant %q", label, rep.Error, *want.Error)
				}
				checkDropped(t, label, rep.Dropped, want.Dropped)
			}
		})
	}
}

// droppedRead is an entry a real restore skipped: its index and the error the kubelet logged.
type droppedRead struct {
	Index      int    `json:"index"`
	Error      string `json:"error,omitempty"`
	ReplacedBy *int   `json:"replacedBy,omitempty"`
}

func (d droppedRead) String() string {
	if d.ReplacedBy != nil {
		return fmt.Sprintf("%d replaced by %d", d.Index, *d.ReplacedBy)
	}
	return fmt.Sprintf("%d: %s", d.Index, d.Error)
}

// checkDropped compares the entries a report says its reader skips with the real restore's; a
// vector that does not record them was restored without skipping any.
func checkDropped(t *testing.T, label string, got []DroppedEntry, want *[]droppedRead) {
	t.Helper()
	var w []droppedRead
	if want != nil {
		w = *want
	}
	g := make([]droppedRead, 0, len(got))
	for _, d := range got {
		g = append(g, droppedRead{d.Index, d.Error, d.ReplacedBy})
	}
	if len(g) != len(w) {
		t.Errorf("reader %s: %d entries dropped, want %d", label, len(g), len(w))
	}
	shown := 0
	for i := 0; i < len(g) && i < len(w) && shown < 5; i++ {
		if g[i].String() != w[i].String() {
			t.Errorf("reader %s: dropped %s, want %s", label, g[i], w[i])
			shown++
		}
	}
}

func TestConformanceWriterVerdict(t *testing.T) {
	for _, e := range loadManifest(t) {
		raw := e.raw(t)
		t.Run(e.File, func(t *testing.T) {
			k, err := ParseKubelet(e.writerReader(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rep := Decode(Kind(e.Component), raw, Options{Kubelet: &k})
			if rep.Verdict != e.ExpectedVerdict {
				t.Fatalf("verdict %s, want %s (error %q)", rep.Verdict, e.ExpectedVerdict, rep.Error)
			}
			if e.ExpectedError != nil && rep.Error != *e.ExpectedError {
				t.Errorf("error\n got %q\nwant %q", rep.Error, *e.ExpectedError)
			}
			if e.ExpectedVerdict == Valid {
				got := kubeletView(t, Kind(e.Component), rep.Decoded.Any())
				var want any
				if err := json.Unmarshal(e.ExpectedDecoded, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					gj, _ := json.Marshal(normalize(got))
					wj, _ := json.Marshal(normalize(want))
					t.Errorf("decoded\n got %s\nwant %s", gj, wj)
				}
			}
		})
	}
}

// Without --kubelet-version a file is judged by the last release writing its detected format.
func TestConformanceDefaultVerdict(t *testing.T) {
	for _, e := range loadManifest(t) {
		raw := e.raw(t)
		t.Run(e.File, func(t *testing.T) {
			rep := Decode(Kind(e.Component), raw, Options{})
			if rep.Reader == "" {
				// Not JSON: no format to pick a kubelet by, and every kubelet refuses it.
				if rep.Verdict != Unreadable || e.ExpectedVerdict != Unreadable {
					t.Fatalf("no format detected: verdict %s (%s), writer's verdict %s", rep.Verdict, rep.Error, e.ExpectedVerdict)
				}
				return
			}
			want, ok := e.Reads[rep.Reader]
			if !ok {
				t.Fatalf("format %s judged by %q, which the vectors do not cover", rep.Format, rep.Reader)
			}
			if rep.Verdict != want.Verdict {
				t.Errorf("format %s by %s: verdict %s, want %s", rep.Format, rep.Reader, rep.Verdict, want.Verdict)
			}
			// The detected format is the writer's own whenever the writer accepted the file; a zeroed
			// checksum erases the only thing telling layouts of the same JSON shape apart.
			zeroed := e.Mutation != nil && *e.Mutation == "checksum-zero"
			if e.ExpectedVerdict == Valid && !zeroed && !sameFormat(rep.Format, e.Format) {
				t.Errorf("format %s, want %s", rep.Format, formatID(e.Format))
			}
		})
	}
}

func TestConformanceHashedText(t *testing.T) {
	n := 0
	for _, e := range loadManifest(t) {
		if e.HashedText == nil && e.DataHashedText == nil {
			continue
		}
		n++
		raw := e.raw(t)
		t.Run(e.File, func(t *testing.T) {
			texts := hashedText(Kind(e.Component), raw)
			if e.DataHashedText != nil {
				if got := texts["dataChecksum"]; got != *e.DataHashedText {
					t.Errorf("data hashed text\n got %q\nwant %q", got, *e.DataHashedText)
				}
			}
			if e.HashedText != nil {
				key := checksumKey(t, raw)
				if got := texts[key]; got != *e.HashedText {
					t.Errorf("hashed text under %q\n got %q\nwant %q", key, got, *e.HashedText)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no vector carries a hashed text")
	}
}

// checksumKey is the file's own top-level checksum field ("checksum", "Checksum"): the text
// under that key of HashedText is what the writer hashed for it.
func checksumKey(t *testing.T, raw []byte) string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("a vector with a hashed text is not a JSON object: %v", err)
	}
	for k := range top {
		if strings.EqualFold(k, "checksum") {
			return k
		}
	}
	t.Fatal("a vector with a hashed text has no checksum field")
	return ""
}

func formatID(manifestFormat string) string {
	id, _, _ := strings.Cut(manifestFormat, ":")
	return id
}

// sameFormat compares format IDs; files with no entries are byte-identical across the device
// V1/V2 eras, so either name is right for them. Likewise a file that uses none of the fields a
// sub-era added (dra-v2c's skipNodeOperations, an empty dra-v1b/c file) is byte-identical to the
// older sub-era's, which names it: an older sub-era of the same format is right.
func sameFormat(got, manifestFormat string) bool {
	want := formatID(manifestFormat)
	gotBase, gotSub := subEra(got)
	wantBase, wantSub := subEra(want)
	return got == want || (strings.HasPrefix(got, "dev-") && strings.HasPrefix(want, "dev-")) ||
		(gotSub != 0 && gotBase == wantBase && gotSub <= wantSub)
}

// subEra splits "dra-v2b" into "dra-v2" and 'b'; an ID without a sub-era letter gives 0.
func subEra(id string) (string, byte) {
	if n := len(id); n > 2 && id[n-1] >= 'a' && id[n-1] <= 'z' && id[n-2] >= '0' && id[n-2] <= '9' {
		return id[:n-1], id[n-1]
	}
	return id, 0
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// normalize drops empty maps, empty lists and nulls, which the writers' decoded values differ
// on only by pre-initialisation, and round-trips through JSON so numbers compare alike.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return prune(out)
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if p := prune(val); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = prune(val)
			if out[i] == nil {
				out[i] = map[string]any{}
			}
		}
		return out
	}
	return v
}

// eraByID is the row of the era table with this ID.
func eraByID(t testing.TB, id string) *era {
	t.Helper()
	for _, e := range eras {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no era %q", id)
	return nil
}

// keepsAll's claim, on every vector: a file of an older layout reads through each newer layout
// that keeps it into the same model (what lets Decode skip comparing the two).
func TestKeepsAllLosesNothing(t *testing.T) {
	checked := 0
	for _, e := range loadManifest(t) {
		raw, err := os.ReadFile(filepath.Join(vectorsDir, e.File))
		if err != nil {
			t.Fatal(err)
		}
		kind, known := ParseKind(e.Component)
		if !known || files[kind].Unchecked {
			continue
		}
		p := Parse(kind, raw)
		f := p.detect()
		if f == nil {
			continue
		}
		older := bestEffortModel(f, p.in)
		if older == nil {
			continue
		}
		for newer, olders := range keepsAll {
			if !slices.Contains(olders, f.Layout) {
				continue
			}
			through := bestEffortModel(&era{Layout: newer}, p.in)
			if !reflect.DeepEqual(through, older) {
				t.Errorf("%s (%s): read through a newer layout that keeps it, the model differs:\n%+v\nwant %+v", e.File, f.ID, through, older)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no vector of a kept layout")
	}
	t.Logf("%d vector readings checked", checked)
}
