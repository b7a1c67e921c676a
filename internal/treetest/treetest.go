// Package treetest writes directory trees for tests from listings: a cgroup mount as
// pkg/cgroup/testdata/trees holds it, one "path<TAB>content" line per file.
package treetest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes a listing out as files (each content plus a newline, as cgroupfs shows it)
// under a new temp directory, and returns the directory.
func Write(t testing.TB, listing string) string {
	t.Helper()
	f, err := os.Open(listing)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := t.TempDir()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, content, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("%s: line %q has no tab", listing, sc.Text())
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return root
}
