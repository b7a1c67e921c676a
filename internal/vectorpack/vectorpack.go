// Package vectorpack stores a set of test vectors in one JSON-lines file instead of a directory
// per case: every distinct file content is stored once and referenced by its hash, and each
// case's expectation is stored once, in its own line. The conformance tests read sets with Read;
// `go run ./hack/vectorpack` packs a generator's directory output (cases/<name>/...).
//
// The file, line by line:
//
//	{"schema":"vectorpack/v1","cases":N,"blobs":M,"meta":{...}}
//	{"case":"<name>","files":{"<path>":"<hash>",...},"expected":<json>,"info":{...}}  (N lines, by name)
//	{"blob":"<hash>","json":<json>,"newline":true}  (M lines, by hash; or "text":"..." or "base64":"...")
//
// meta is the generator's manifest without its cases (e.g. "kubelet"); expected is the case's
// expectation (its expected.json, or its manifest entry's); info holds the manifest's other facts
// about the case that no file restates. A blob's hash is the first 16 hex digits of the sha256 of
// the file's bytes, which the "json", "text" or "base64" field gives back exactly ("json" is the
// file itself when it is one line of JSON, followed by a newline when "newline" is true).
// Read refuses a set whose case or blob count differs from the header, a case naming a missing
// blob, a blob whose bytes do not hash to its name, and a case without an expectation.
package vectorpack

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Schema is the header's schema.
const Schema = "vectorpack/v1"

// Ext ends the name of a packed set's file.
const Ext = ".vectors.jsonl"

// maxLine caps one line of a packed file (the largest blob or expectation).
const maxLine = 64 << 20

// Set is one vector set.
type Set struct {
	// Name is the file's name without Ext (set by ReadFile).
	Name string
	// Meta is the generator's manifest without its cases: what holds for every case.
	Meta  map[string]json.RawMessage
	Cases []Case // by name
}

// Case is one case: its files and what the real code did with them.
type Case struct {
	Name     string
	Expected json.RawMessage
	// Info holds the manifest's facts about the case that no file restates (may be nil).
	Info map[string]json.RawMessage
	// Files are the case's files by slash path under the case's directory (expected.json
	// excepted: it is Expected).
	Files map[string][]byte
}

// Case returns the case of that name.
func (s *Set) Case(name string) (Case, bool) {
	i, ok := slices.BinarySearchFunc(s.Cases, name, func(c Case, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return Case{}, false
	}
	return s.Cases[i], true
}

// MetaString is the string field name of the set's meta ("" when absent or not a string).
func (s *Set) MetaString(name string) string {
	var v string
	if raw, ok := s.Meta[name]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return ""
}

// Has says whether the case has the file name.
func (c Case) Has(name string) bool {
	_, ok := c.Files[name]
	return ok
}

// WriteDir writes the case's files, and its expectation as expected.json, under dir.
func (c Case) WriteDir(dir string) error {
	for name, b := range c.Files {
		if err := writeUnder(dir, name, b); err != nil {
			return err
		}
	}
	if c.Expected == nil {
		return nil
	}
	return writeUnder(dir, "expected.json", append(slices.Clip(c.Expected), '\n'))
}

// writeUnder writes a file at a slash path that must stay inside dir.
func writeUnder(dir, name string, b []byte) error {
	if !validPath(name) {
		return fmt.Errorf("case file %q: not a plain relative path", name)
	}
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func validPath(name string) bool {
	return name != "" && !strings.ContainsAny(name, "\\\x00") && path.Clean(name) == name && !path.IsAbs(name) && name != ".." && !strings.HasPrefix(name, "../")
}

// Hash names a blob.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

type header struct {
	Schema string                     `json:"schema"`
	Cases  int                        `json:"cases"`
	Blobs  int                        `json:"blobs"`
	Meta   map[string]json.RawMessage `json:"meta,omitempty"`
}

// line is a case line or a blob line.
type line struct {
	Case     *string                    `json:"case"`
	Files    map[string]string          `json:"files"`
	Expected json.RawMessage            `json:"expected"`
	Info     map[string]json.RawMessage `json:"info"`
	Blob     *string                    `json:"blob"`
	JSON     json.RawMessage            `json:"json"`
	Newline  bool                       `json:"newline"`
	Text     *string                    `json:"text"`
	Base64   *string                    `json:"base64"`
}

// ReadFile reads a packed set.
func ReadFile(name string) (*Set, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.Name = strings.TrimSuffix(filepath.Base(name), Ext)
	return s, nil
}

// ReadGlob reads the sets whose files match pattern (filepath.Glob), in name order.
func ReadGlob(pattern string) ([]*Set, error) {
	names, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var sets []*Set
	for _, name := range names {
		s, err := ReadFile(name)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	return sets, nil
}

// ReadDir reads every set packed in dir, by name. A set left unpacked there (a directory with
// cases/ or MANIFEST.json, as a generator writes it) is an error that says how to pack it, so
// that no set is silently skipped.
func ReadDir(dir string) ([]*Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var sets []*Set
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			for _, marker := range []string{"cases", "MANIFEST.json"} {
				if _, err := os.Stat(filepath.Join(p, marker)); err == nil {
					return nil, fmt.Errorf("%s is an unpacked vector set: go run ./hack/vectorpack %s %s%s", p, p, p, Ext)
				}
			}
			continue
		}
		if !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		s, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("%s: no vector set (*%s)", dir, Ext)
	}
	return sets, nil
}

// Read reads a packed set and checks it whole (see the package comment).
func Read(r io.Reader) (*Set, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("empty: no header")
	}
	var h header
	if err := strictUnmarshal(sc.Bytes(), &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Schema != Schema {
		return nil, fmt.Errorf("header: schema %q, want %q", h.Schema, Schema)
	}
	s := &Set{Meta: h.Meta}
	type pending struct {
		c     Case
		files map[string]string
	}
	var cases []pending
	blobs := map[string][]byte{}
	for n := 2; sc.Scan(); n++ {
		var l line
		if err := strictUnmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case l.Case != nil && l.Blob == nil && l.JSON == nil && l.Text == nil && l.Base64 == nil && !l.Newline:
			if len(blobs) > 0 {
				return nil, fmt.Errorf("line %d: case %s after the blobs", n, *l.Case)
			}
			if len(cases) > 0 && cases[len(cases)-1].c.Name >= *l.Case {
				return nil, fmt.Errorf("line %d: case %s out of order or repeated", n, *l.Case)
			}
			if len(l.Expected) == 0 || string(l.Expected) == "null" {
				return nil, fmt.Errorf("line %d: case %s has no expectation", n, *l.Case)
			}
			cases = append(cases, pending{Case{Name: *l.Case, Expected: l.Expected, Info: l.Info}, l.Files})
		case l.Blob != nil && l.Case == nil && l.Files == nil && l.Expected == nil && l.Info == nil:
			b, err := l.content()
			if err != nil {
				return nil, fmt.Errorf("line %d: blob %s: %w", n, *l.Blob, err)
			}
			if got := Hash(b); got != *l.Blob {
				return nil, fmt.Errorf("line %d: blob %s holds bytes that hash to %s", n, *l.Blob, got)
			}
			if _, dup := blobs[*l.Blob]; dup {
				return nil, fmt.Errorf("line %d: blob %s repeated", n, *l.Blob)
			}
			blobs[*l.Blob] = b
		default:
			return nil, fmt.Errorf("line %d: neither one case nor one blob", n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cases) != h.Cases {
		return nil, fmt.Errorf("%d cases, the header says %d", len(cases), h.Cases)
	}
	used := map[string]bool{}
	for _, p := range cases {
		p.c.Files = make(map[string][]byte, len(p.files))
		for name, hash := range p.files {
			if !validPath(name) || name == "expected.json" {
				return nil, fmt.Errorf("case %s: file name %q", p.c.Name, name)
			}
			b, ok := blobs[hash]
			if !ok {
				return nil, fmt.Errorf("case %s: %s is blob %s, which the set does not hold", p.c.Name, name, hash)
			}
			used[hash] = true
			p.c.Files[name] = b
		}
		s.Cases = append(s.Cases, p.c)
	}
	if len(used) != len(blobs) {
		return nil, fmt.Errorf("%d blobs no case names", len(blobs)-len(used))
	}
	if len(blobs) != h.Blobs {
		return nil, fmt.Errorf("%d blobs, the header says %d", len(blobs), h.Blobs)
	}
	return s, nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one value on the line")
	}
	return nil
}

// content is a blob line's bytes.
func (l line) content() ([]byte, error) {
	forms := 0
	var b []byte
	if l.JSON != nil {
		forms++
		b = slices.Clip(l.JSON)
		if l.Newline {
			b = append(b, '\n')
		}
	}
	if l.Text != nil {
		forms++
		b = []byte(*l.Text)
	}
	if l.Base64 != nil {
		forms++
		var err error
		if b, err = base64.StdEncoding.DecodeString(*l.Base64); err != nil {
			return nil, err
		}
	}
	if forms != 1 {
		return nil, fmt.Errorf("%d of json, text and base64, want one", forms)
	}
	if l.Newline && l.JSON == nil {
		return nil, errors.New("newline without json")
	}
	return b, nil
}

// Write writes the set packed, cases by name and blobs by hash, so that the same set always
// writes the same bytes and a change to one case is a change to its own lines.
func Write(w io.Writer, s *Set) error {
	cases := slices.SortedFunc(slices.Values(s.Cases), func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	blobs := map[string][]byte{}
	bw := bufio.NewWriter(w)
	var body bytes.Buffer
	for i, c := range cases {
		if i > 0 && cases[i-1].Name == c.Name {
			return fmt.Errorf("case %s twice", c.Name)
		}
		if len(c.Expected) == 0 {
			return fmt.Errorf("case %s has no expectation", c.Name)
		}
		files := map[string]string{}
		for name, b := range c.Files {
			if !validPath(name) || name == "expected.json" {
				return fmt.Errorf("case %s: file name %q", c.Name, name)
			}
			h := Hash(b)
			if old, ok := blobs[h]; ok && !bytes.Equal(old, b) {
				return fmt.Errorf("two contents hash to %s", h)
			}
			blobs[h] = b
			files[name] = h
		}
		var expected bytes.Buffer
		if err := json.Compact(&expected, c.Expected); err != nil {
			return fmt.Errorf("case %s: expectation: %w", c.Name, err)
		}
		b, err := marshalLine(struct {
			Case     string                     `json:"case"`
			Files    map[string]string          `json:"files"`
			Expected json.RawMessage            `json:"expected"`
			Info     map[string]json.RawMessage `json:"info,omitempty"`
		}{c.Name, files, expected.Bytes(), c.Info})
		if err != nil {
			return fmt.Errorf("case %s: %w", c.Name, err)
		}
		body.Write(b)
	}
	hb, err := marshalLine(header{Schema: Schema, Cases: len(cases), Blobs: len(blobs), Meta: s.Meta})
	if err != nil {
		return err
	}
	bw.Write(hb)
	bw.Write(body.Bytes())
	for _, h := range slices.Sorted(maps.Keys(blobs)) {
		bw.Write(blobLine(h, blobs[h]))
	}
	return bw.Flush()
}

func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// blobLine writes a file as itself when it is one line of JSON (so that a diff of the set shows
// the content), else as a string, else in base64.
func blobLine(hash string, b []byte) []byte {
	raw, newline := bytes.CutSuffix(b, []byte("\n"))
	if len(raw) > 0 && !bytes.ContainsAny(raw, "\r\n") && utf8.Valid(raw) && json.Valid(raw) && len(bytes.TrimSpace(raw)) == len(raw) {
		out := fmt.Appendf(nil, `{"blob":%q,"json":`, hash)
		out = append(out, raw...)
		if newline {
			out = append(out, `,"newline":true`...)
		}
		return append(out, "}\n"...)
	}
	if utf8.Valid(b) {
		s := string(b)
		out, _ := marshalLine(struct {
			Blob string  `json:"blob"`
			Text *string `json:"text"`
		}{hash, &s})
		return out
	}
	e := base64.StdEncoding.EncodeToString(b)
	out, _ := marshalLine(struct {
		Blob   string  `json:"blob"`
		Base64 *string `json:"base64"`
	}{hash, &e})
	return out
}
