package admit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/resource"
)

const podA = `apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: app, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: ns}
spec: {containers: [{name: app, image: x}]}
`

// -f reads what kubectl's -f reads: files, directories (-R), URLs and stdin, in order.
func TestReadPods(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("pods/two.yaml", podA)
	write("pods/deeper/c.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"app","image":"x"}]}}`)
	svc := write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
	unnamed := write("unnamed.yaml", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: app, image: x}]}\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(podA)) }))
	defer srv.Close()

	names := func(opts resource.FilenameOptions) (string, error) {
		pods, err := readPods(&opts)
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return strings.Join(out, " "), err
	}
	for _, tc := range []struct {
		name string
		opts resource.FilenameOptions
		want string
		err  string
	}{
		{"file, documents in order", resource.FilenameOptions{Filenames: []string{two}}, "default/a ns/b", ""},
		{"directory, recursive", resource.FilenameOptions{Filenames: []string{filepath.Join(dir, "pods")}, Recursive: true}, "default/c default/a ns/b", ""},
		{"directory, not recursive", resource.FilenameOptions{Filenames: []string{filepath.Join(dir, "pods")}}, "default/a ns/b", ""},
		{"URL", resource.FilenameOptions{Filenames: []string{srv.URL + "/pods.yaml"}}, "default/a ns/b", ""},
		{"not a pod", resource.FilenameOptions{Filenames: []string{svc}}, "", `kind "Service": want Pod`},
		{"no name", resource.FilenameOptions{Filenames: []string{unnamed}}, "", "without metadata.name"},
		{"none", resource.FilenameOptions{}, "", ""},
	} {
		got, err := names(tc.opts)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// -f reads at most maxPods pods: a file of that many is read, one more is refused before any
// replay.
func TestReadPodsBound(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{maxPods, maxPods + 1} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec: {containers: [{name: app, image: x}]}\n", i)
		}
		file := filepath.Join(dir, fmt.Sprintf("%d.yaml", n))
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		pods, err := readPods(&resource.FilenameOptions{Filenames: []string{file}})
		switch {
		case n == maxPods && (err != nil || len(pods) != n):
			t.Errorf("%d pods: %d read, %v", n, len(pods), err)
		case n > maxPods && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over %d pods", maxPods))):
			t.Errorf("%d pods: %d read, %v; want refused", n, len(pods), err)
		}
	}
}
