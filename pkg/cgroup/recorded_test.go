package cgroup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordedNodes resolves the dumps that make e2e-node recorded on real nodes (with
// NODESTATE_E2E_NODE_UPDATE=1; testdata/real/<layout>/: the script's dump and the pods'
// container statuses): every container the API had running is found, by the directory's layout.
func TestRecordedNodes(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "real", "*"))
	recorded := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		recorded++
		layout := strings.Replace(strings.Replace(filepath.Base(dir), "-", "/", 1), "-", "/", 1)
		dump, err := os.ReadFile(filepath.Join(dir, "dump.txt"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "pods.json"))
		if err != nil {
			t.Fatal(err)
		}
		var pods []PodRef
		if err := json.Unmarshal(raw, &pods); err != nil {
			t.Fatal(err)
		}
		d, err := Parse(dump)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		n := Resolve(d, pods)
		if len(n.Missing) != 0 || len(n.Layouts) != 1 || n.Layouts[0] != layout {
			t.Errorf("%s: layouts %v, missing %+v", dir, n.Layouts, n.Missing)
		}
		running := 0
		for _, p := range pods {
			for _, c := range p.Containers {
				if !c.Running {
					continue
				}
				running++
				cg := n.Containers[p.UID][c.Name]
				if cg == nil {
					t.Errorf("%s: %s/%s not found", dir, p.UID, c.Name)
					continue
				}
				if _, ok := cg.Runs(); !ok || cg.Mems.Err != "" || !cg.Mems.Present {
					t.Errorf("%s: %s/%s: %+v", dir, p.UID, c.Name, cg)
				}
			}
		}
		if running == 0 {
			t.Errorf("%s: no running container recorded", dir)
		}
	}
	if recorded == 0 {
		t.Fatal("no recorded node under testdata/real (make e2e-node with NODESTATE_E2E_NODE_UPDATE=1 writes one)")
	}
}
