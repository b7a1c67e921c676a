package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
)

func writeSet(t *testing.T, path string, cases ...vectorpack.Case) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := vectorpack.Write(f, &vectorpack.Set{Cases: cases}); err != nil {
		t.Fatal(err)
	}
}

func admission(name, expected, seedResult string) vectorpack.Case {
	return vectorpack.Case{Name: name, Expected: []byte(expected), Files: map[string][]byte{
		"machine.json":           []byte(`{"cpus": [0, 1]}`),
		"setup/seed-result.json": []byte(seedResult),
	}}
}

// The same case under two releases: the release's name and JSON layout do not count; other
// results on the same inputs do, apart when the device manager picked among interchangeable
// devices; other inputs make the results not comparable.
func TestCompareSets(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "v1.38.0-beta.0-ties.vectors.jsonl")
	to := filepath.Join(dir, "v1.38.0-rc.0-ties.vectors.jsonl")
	writeSet(t, from,
		admission("same", `{"admit":true,"cpus":"1"}`, `{"version":"v1.38.0-beta.0","cpus":"0"}`),
		admission("judged-otherwise", `{"admit":true}`, `{"version":"v1.38.0-beta.0"}`),
		admission("seeded-otherwise", `{"admit":true}`, `{"version":"v1.38.0-beta.0","devices":["gpu-0"]}`),
		admission("picked-otherwise", `{"devices":["gpu-0"],"deviceChoice":"symmetric"}`, `{}`),
		admission("gone", `{"admit":true}`, `{}`))
	writeSet(t, to,
		admission("same", `{ "cpus": "1", "admit": true }`, `{"cpus":"0","version":"v1.38.0-rc.0"}`),
		admission("judged-otherwise", `{"admit":false,"reason":"SMTAlignmentError"}`, `{"version":"v1.38.0-rc.0"}`),
		admission("seeded-otherwise", `{"admit":false}`, `{"version":"v1.38.0-rc.0","devices":["gpu-1"]}`),
		admission("picked-otherwise", `{"devices":["gpu-1"],"deviceChoice":"symmetric"}`, `{}`),
		admission("new", `{"admit":true}`, `{}`))
	var out strings.Builder
	if err := compareSets(&out, from, to); err != nil {
		t.Fatal(err)
	}
	want := `4 cases in both: 1 with other results, 1 with other picks among interchangeable devices, 1 with other inputs (set up again by the release); 1 only v1.38.0-beta.0, 1 only v1.38.0-rc.0
  results: judged-otherwise
  picks:   picked-otherwise
  inputs:  seeded-otherwise (setup/seed-result.json)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
