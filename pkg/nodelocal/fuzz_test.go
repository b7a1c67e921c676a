package nodelocal

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadBundle: any config.json (a runtime's, or anything written where one is expected)
// gives a container, none, or an error; never a panic, never a name read past the bundle.
func FuzzReadBundle(f *testing.F) {
	for _, seed := range []string{
		`{"annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-uid":"u","io.kubernetes.cri.container-name":"app"}}`,
		`{"annotations":{"io.kubernetes.cri-o.ContainerType":"container","io.kubernetes.cri-o.Labels":"{\"io.kubernetes.pod.uid\":\"u\",\"io.kubernetes.container.name\":\"web\"}"}}`,
		`{"annotations":{"io.kubernetes.cri-o.ContainerType":"container","io.kubernetes.cri-o.Labels":"[1]"}}`,
		`{"annotations":null}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "config.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, rt := range Runtimes {
			uid, name, sandbox, ok, err := readBundle(rt, p)
			if ok && (err != nil || uid == "" || (name == "") != sandbox) {
				t.Fatalf("%s: ok with uid %q name %q err %v", rt.Name, uid, name, err)
			}
		}
	})
}
