package vectorpack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
)

// The manifest fields of a case that restate its files or its expectation, and are not kept:
// "dir" and "files" (checked against the directory), "outcome" and "outcome2" (a summary of
// the first two pods' results in the expectation), "description" and "tags" when the case's
// setup/meta.json says the same.
var restated = []string{"dir", "files", "outcome", "outcome2"}

// expectationFields are the manifest fields that hold a case's expectation when the case has
// no expected.json (the kubelet-start vectors keep theirs as "results").
var expectationFields = []string{"expected", "results"}

// FromDir reads a generator's output: dir/cases/<name>/ with every file of a case (expected.json
// its expectation, any other file at any depth an input or a record of how it was made), and
// dir/MANIFEST.json when there is one. The manifest must name exactly the case directories; its
// top-level fields become the set's meta, and a case's own facts that no file restates its info.
// An expectation both in expected.json and in the manifest must be the same.
func FromDir(dir string) (*Set, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "cases"))
	if err != nil {
		return nil, err
	}
	man, err := readManifest(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		return nil, err
	}
	s := &Set{Meta: man.meta}
	for _, e := range entries {
		if !e.IsDir() {
			return nil, fmt.Errorf("cases/%s: not a case directory", e.Name())
		}
		c, err := readCase(filepath.Join(dir, "cases", e.Name()))
		if err != nil {
			return nil, err
		}
		if man.cases != nil {
			entry, ok := man.cases[c.Name]
			if !ok {
				return nil, fmt.Errorf("cases/%s: not in MANIFEST.json", c.Name)
			}
			delete(man.cases, c.Name)
			if err := c.takeManifest(entry); err != nil {
				return nil, fmt.Errorf("cases/%s: %w", c.Name, err)
			}
		}
		if c.Expected == nil {
			return nil, fmt.Errorf("cases/%s: no expected.json and no expectation in a manifest", c.Name)
		}
		s.Cases = append(s.Cases, c)
	}
	for name := range man.cases {
		return nil, fmt.Errorf("MANIFEST.json names case %s, which has no directory", name)
	}
	if len(s.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", dir)
	}
	return s, nil
}

type manifest struct {
	meta  map[string]json.RawMessage
	cases map[string]map[string]json.RawMessage // nil: no manifest
}

func readManifest(name string) (manifest, error) {
	raw, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{}, nil
	}
	if err != nil {
		return manifest{}, err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m.meta); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal(m.meta["cases"], &m.cases); err != nil || m.cases == nil {
		return manifest{}, fmt.Errorf("%s: no cases object (%v)", name, err)
	}
	delete(m.meta, "cases")
	return m, nil
}

func readCase(dir string) (Case, error) {
	c := Case{Name: filepath.Base(dir), Files: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel == "expected.json" {
			if !json.Valid(b) {
				return fmt.Errorf("%s: not JSON", p)
			}
			c.Expected = b
			return nil
		}
		c.Files[rel] = b
		return nil
	})
	return c, err
}

// takeManifest keeps what the case's manifest entry says that its files do not.
func (c *Case) takeManifest(entry map[string]json.RawMessage) error {
	var dir string
	if raw, ok := entry["dir"]; ok && (json.Unmarshal(raw, &dir) != nil || dir != "cases/"+c.Name) {
		return fmt.Errorf("manifest dir %s, want cases/%s", raw, c.Name)
	}
	var files []string
	if raw, ok := entry["files"]; ok && json.Unmarshal(raw, &files) != nil {
		return fmt.Errorf("manifest files %s: not a list of names", raw)
	}
	for _, f := range files {
		if !c.Has(f) {
			return fmt.Errorf("the manifest lists %s, the directory has no such file", f)
		}
	}
	for _, field := range expectationFields {
		raw, ok := entry[field]
		if !ok {
			continue
		}
		if c.Expected == nil {
			c.Expected = raw
		} else if same, err := sameJSON(c.Expected, raw); err != nil || !same {
			return fmt.Errorf("expected.json differs from the manifest's %s (%v)", field, err)
		}
		delete(entry, field)
	}
	if meta, ok := c.Files["setup/meta.json"]; ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(meta, &m); err != nil {
			return fmt.Errorf("setup/meta.json: %w", err)
		}
		for _, field := range []string{"description", "tags"} {
			if same, _ := sameJSON(m[field], entry[field]); same || m[field] == nil && string(entry[field]) == "[]" {
				delete(entry, field)
			}
		}
	}
	for _, field := range restated {
		delete(entry, field)
	}
	if len(entry) > 0 {
		c.Info = entry
	}
	return nil
}

func sameJSON(a, b []byte) (bool, error) {
	if a == nil || b == nil {
		return a == nil && b == nil, nil
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	return reflect.DeepEqual(x, y), nil
}

// Unpack writes every case of the set as dir/cases/<name>/ (its files and expected.json).
func (s *Set) Unpack(dir string) error {
	for _, c := range s.Cases {
		if !validPath(c.Name) || slices.Contains([]string{".", ".."}, c.Name) || filepath.Base(c.Name) != c.Name {
			return fmt.Errorf("case name %q", c.Name)
		}
		if err := c.WriteDir(filepath.Join(dir, "cases", c.Name)); err != nil {
			return err
		}
	}
	return nil
}
