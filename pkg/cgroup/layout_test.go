package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/treetest"
)

// The pods of every tree in testdata/trees (see its README).
const (
	guaranteed = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	burstable  = "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9"
	besteffort = "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9"
	appID      = "4a7d1e9c0b3f2a6d8e5c7b9a1f0e3d2c4b6a8f1e3d5c7b9a0f2e4d6c8b1a3f5e"
	webID      = "7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d"
	exitedID   = "6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170"
	goneID     = "8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b"
)

// shells are the shells the script is run with: sh, and busybox's (the debug image's) when
// installed.
func shells(t *testing.T) [][]string {
	out := [][]string{{"sh"}}
	if _, err := exec.LookPath("busybox"); err == nil {
		out = append(out, []string{"busybox", "sh"})
	} else {
		t.Log("busybox not installed: the script runs with sh only")
	}
	return out
}

func runScript(t *testing.T, shell []string, mount string) []byte {
	t.Helper()
	cmd := exec.Command(shell[0], append(shell[1:], "-c", Script(mount))...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", shell, err)
	}
	return out
}

// TestLayouts runs the debug pod's script over the tree of every layout and resolves the pods.
func TestLayouts(t *testing.T) {
	trees, _ := filepath.Glob(filepath.Join("testdata", "trees", "*.tree"))
	if len(trees) != len(Layouts) {
		t.Fatalf("%d trees for %d layouts", len(trees), len(Layouts))
	}
	for _, listing := range trees {
		name := strings.Replace(strings.Replace(strings.TrimSuffix(filepath.Base(listing), ".tree"), "-", "/", 1), "-", "/", 1)
		var layout Layout
		for _, l := range Layouts {
			if l.Name == name {
				layout = l
			}
		}
		if layout.Name == "" {
			t.Fatalf("%s: no layout %s", listing, name)
		}
		root := treetest.Write(t, listing)
		for _, shell := range shells(t) {
			t.Run(name+"/"+strings.Join(shell, " "), func(t *testing.T) {
				d, err := Parse(runScript(t, shell, root))
				if err != nil {
					t.Fatal(err)
				}
				if d.Version != layout.Version || d.Cut || d.Skipped != 0 {
					t.Fatalf("version %d cut %v skipped %d, want version %d", d.Version, d.Cut, d.Skipped, layout.Version)
				}
				id := func(s string) string { return layout.Runtime + "://" + s }
				n := Resolve(d, []PodRef{
					{UID: guaranteed, Containers: []ContainerRef{{Name: "app", ID: id(appID), Running: true}}},
					{UID: burstable, Containers: []ContainerRef{{Name: "web", ID: id(webID), Running: true}}},
					{UID: besteffort, Containers: []ContainerRef{{Name: "job", ID: id(exitedID)}}},
					// The API says it runs, the node has no cgroup for it.
					{UID: burstable, Containers: []ContainerRef{{Name: "gone", ID: id(goneID), Running: true}}},
				})
				if len(n.Layouts) != 1 || n.Layouts[0] != layout.Name {
					t.Errorf("layouts %v, want %s", n.Layouts, layout.Name)
				}
				for _, want := range []struct{ pod, ctr, cpus, eff, mems string }{
					{guaranteed, "app", "2-3", "2-3", "0"},
					{burstable, "web", "0-1", "0-1", "0"},
				} {
					c := n.Containers[want.pod][want.ctr]
					if c == nil {
						t.Errorf("%s/%s: no cgroup found", want.pod, want.ctr)
						continue
					}
					if c.CPUs.Raw != want.cpus || c.EffectiveCPUs.Raw != want.eff || c.Mems.Raw != want.mems || c.Layout != layout.Name {
						t.Errorf("%s/%s: %+v", want.pod, want.ctr, c)
					}
					if runs, ok := c.Runs(); !ok || runs.String() != want.cpus {
						t.Errorf("%s/%s runs on %s", want.pod, want.ctr, runs)
					}
				}
				if c := n.Containers[besteffort]["job"]; c != nil {
					t.Errorf("the exited container has a cgroup: %+v", c)
				}
				if len(n.Missing) != 1 || n.Missing[0].Container != "gone" {
					t.Errorf("missing %+v, want only the gone container", n.Missing)
				}
				// Sandbox and container; CRI-O's conmon has its own directory too.
				conmon := 0
				if layout.Runtime == "cri-o" {
					conmon = 1
				}
				for uid, children := range map[string]int{guaranteed: 2 + conmon, burstable: 2, besteffort: 1} {
					if p := n.Pods[uid]; p == nil || p.Children != children || p.Driver != layout.Driver {
						t.Errorf("pod %s: %+v, want %d children", uid, p, children)
					}
				}
				if len(n.Pods) != 3 {
					t.Errorf("%d pod directories, want 3: %v", len(n.Pods), n.Pods)
				}
			})
		}
	}
}

// TestV2EmptyCPUSetRunsOnEffective: on cgroup v2 a container whose cpuset.cpus nobody wrote
// (CPU manager policy none; the runtime sets no cpuset) has an empty file and runs on what it
// inherits, cpuset.cpus.effective. Each v2 tree again with the shared container's cpuset.cpus
// emptied and its effective set its pod's: it runs on the pod's CPUs, not on none.
func TestV2EmptyCPUSetRunsOnEffective(t *testing.T) {
	trees, _ := filepath.Glob(filepath.Join("testdata", "trees", "v2-*.tree"))
	if len(trees) == 0 {
		t.Fatal("no cgroup v2 tree under testdata/trees")
	}
	for _, listing := range trees {
		name := strings.Replace(strings.Replace(strings.TrimSuffix(filepath.Base(listing), ".tree"), "-", "/", 1), "-", "/", 1)
		t.Run(name, func(t *testing.T) {
			root := treetest.Write(t, listing)
			var webDir string
			err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() && strings.Contains(d.Name(), webID) && !strings.Contains(d.Name(), "conmon") {
					webDir = p
				}
				return err
			})
			if err != nil || webDir == "" {
				t.Fatalf("no directory of container %s (%v)", webID, err)
			}
			inherited, err := os.ReadFile(filepath.Join(filepath.Dir(webDir), "cpuset.cpus.effective"))
			if err != nil {
				t.Fatal(err)
			}
			for file, content := range map[string]string{"cpuset.cpus": "\n", "cpuset.cpus.effective": string(inherited)} {
				if err := os.WriteFile(filepath.Join(webDir, file), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := Parse(runScript(t, []string{"sh"}, root))
			if err != nil {
				t.Fatal(err)
			}
			var layout Layout
			for _, l := range Layouts {
				if l.Name == name {
					layout = l
				}
			}
			id := func(s string) string { return layout.Runtime + "://" + s }
			n := Resolve(d, []PodRef{
				{UID: guaranteed, Containers: []ContainerRef{{Name: "app", ID: id(appID), Running: true}}},
				{UID: burstable, Containers: []ContainerRef{{Name: "web", ID: id(webID), Running: true}}},
			})
			want := strings.TrimSpace(string(inherited))
			web := n.Containers[burstable]["web"]
			if web == nil || !web.CPUs.Present || web.CPUs.Raw != "" || web.EffectiveCPUs.Raw != want {
				t.Fatalf("web: %+v, want an empty cpuset.cpus and effective %s", web, want)
			}
			if runs, ok := web.Runs(); !ok || runs.String() != want {
				t.Errorf("web runs on %q (ok %v), want the effective %s", runs, ok, want)
			}
			if runs, ok := n.Containers[guaranteed]["app"].Runs(); !ok || runs.String() != "2-3" {
				t.Errorf("app runs on %q (ok %v), want its own 2-3", runs, ok)
			}
		})
	}
}
