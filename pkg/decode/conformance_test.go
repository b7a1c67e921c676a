package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
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

// loadManifest reads the expectations of every vector: expectedDir holds, at each vector's
// path, its <case>.json and the texts its writer hashed (<case>.hashed.txt, .data-hashed.txt).
func loadManifest(t testing.TB) []manifestEntry {
	t.Helper()
	var out []manifestEntry
	err := filepath.WalkDir(expectedDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var e manifestEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, _ := filepath.Rel(expectedDir, p)
		e.File = filepath.ToSlash(rel)
		stem := strings.TrimSuffix(p, ".json")
		if e.HashedText, err = optionalText(stem + ".hashed.txt"); err != nil {
			return err
		}
		if e.DataHashedText, err = optionalText(stem + ".data-hashed.txt"); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 500 {
		t.Fatalf("%d expectations; the vectors look incomplete", len(out))
	}
	return out
}

func optionalText(path string) (*string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
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
			texts := HashedText(Kind(e.Component), raw)
			if e.DataHashedText != nil {
				if got := texts["dataChecksum"]; got != *e.DataHashedText {
					t.Errorf("data hashed text\n got %q\nwant %q", got, *e.DataHashedText)
				}
			}
			if e.HashedText != nil && !hasValue(texts, *e.HashedText) {
				t.Errorf("hashed text\n got %q\nwant %q", texts, *e.HashedText)
			}
		})
	}
	if n < 200 {
		t.Fatalf("only %d vectors carry a hashed text", n)
	}
}

func hasValue(m map[string]string, want string) bool {
	for k, v := range m {
		if k != "dataChecksum" && v == want {
			return true
		}
	}
	return false
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
