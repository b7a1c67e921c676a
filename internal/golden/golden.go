// Package golden compares a test's output with a file under its package's testdata, or rewrites
// the file when the test runs with -update. A change is a behaviour change to review in the diff.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Check compares got with the file at path (relative to the test's package), or writes it with
// -update. A mismatch names the first line that differs, and shows both in full when they are
// short.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(got) == string(want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	msg := fmt.Sprintf("%s differs from line %d (go test -update rewrites it; review the diff):\n got: %s\nwant: %s", path, i+1, lineAt(g, i), lineAt(w, i))
	if len(g)+len(w) <= 200 {
		msg += "\n--- got\n" + string(got) + "\n--- want\n" + string(want)
	}
	t.Error(msg)
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}
