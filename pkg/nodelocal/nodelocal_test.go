package nodelocal

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/treetest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// sh runs a debug pod script with sh in dir.
func sh(t *testing.T, dir, script string) []byte {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return out
}

// The Go walk reads every layout's tree as the debug pod's script does: the same hierarchy,
// directories and cpuset files (compared parsed: find lists in directory order, Go in name
// order). Noise the tree adds is walked alike: a symlinked directory, a kubepods tree in
// another place, a file of two lines, an empty file.
func TestCgroupDumpIsTheScripts(t *testing.T) {
	trees, _ := filepath.Glob(filepath.Join("testdata", "trees", "*.tree"))
	if len(trees) != len(cgroup.Layouts) {
		t.Fatalf("%d trees for %d layouts", len(trees), len(cgroup.Layouts))
	}
	for _, listing := range trees {
		t.Run(filepath.Base(listing), func(t *testing.T) {
			mount := treetest.Write(t, listing)
			base := mount
			if _, err := os.Stat(filepath.Join(mount, "cpuset")); err == nil {
				base = filepath.Join(mount, "cpuset")
			}
			kube, _ := filepath.Glob(filepath.Join(base, "kubepods*"))
			if len(kube) == 0 {
				t.Fatal("no kubepods tree")
			}
			if err := os.Symlink(kube[0], filepath.Join(kube[0], "loop")); err != nil {
				t.Fatal(err)
			}
			odd := filepath.Join(base, "system.slice", "kubepods-odd", "x")
			if err := os.MkdirAll(odd, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(odd, "cpuset.cpus"), []byte("1\n2\n"), 0o644)
			os.WriteFile(filepath.Join(odd, "cpuset.mems"), nil, 0o644)

			want, err := cgroup.Parse(sh(t, t.TempDir(), cgroup.Script(mount)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := cgroup.Parse(CgroupDump(mount))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Go walk differs from the script:\ngot  %+v\nwant %+v", dirsOf(got), dirsOf(want))
			}
			if len(got.Dirs) < 5 || got.Version == 0 {
				t.Errorf("read %d dirs, version %d", len(got.Dirs), got.Version)
			}
		})
	}
}

func dirsOf(d *cgroup.Dump) map[string]map[string]string {
	out := map[string]map[string]string{}
	for p, dir := range d.Dirs {
		out[p] = dir.Files
	}
	return out
}

// Past the bound the walk stops and says so; no mount, or no cpuset tree, is version 0.
func TestCgroupDumpBounds(t *testing.T) {
	mount := treetest.Write(t, filepath.Join("testdata", "trees", "v2-cgroupfs-containerd.tree"))
	d, err := cgroup.Parse(cgroupDump(mount, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Cut || len(d.Dirs) != 3 {
		t.Errorf("cut %v with %d dirs, want cut with 3", d.Cut, len(d.Dirs))
	}
	for _, m := range []string{filepath.Join(t.TempDir(), "absent"), t.TempDir()} {
		d, err := cgroup.Parse(CgroupDump(m))
		if err != nil || d.Version != 0 || len(d.Dirs) != 0 {
			t.Errorf("%s: %+v %v", m, d, err)
		}
	}
}

// The sockets and CDI sections are the scripts' own, byte for byte.
func TestSectionsAreTheScripts(t *testing.T) {
	root := t.TempDir()
	plugins := filepath.Join(root, nodefs.SocketsDir)
	os.MkdirAll(plugins, 0o755)
	for _, s := range []string{"kubelet.sock", "gpu.example.com.sock", ".hidden.sock"} {
		l, err := net.Listen("unix", filepath.Join(plugins, s))
		if err != nil {
			t.Skipf("no unix sockets here: %v", err)
		}
		defer l.Close()
	}
	os.WriteFile(filepath.Join(plugins, "kubelet_internal_checkpoint"), []byte("{}"), 0o600)
	os.Symlink(filepath.Join(plugins, "kubelet.sock"), filepath.Join(plugins, "link.sock"))
	if got, want := socketsSection(root), sh(t, root, nodefs.SocketsScript); string(got) != string(want) {
		t.Errorf("sockets:\ngot  %q\nwant %q", got, want)
	}
	s, err := nodefs.ParseSockets(socketsSection(root))
	if err != nil || !reflect.DeepEqual(s.Names, []string{".hidden.sock", "gpu.example.com.sock", "kubelet.sock", "link.sock"}) {
		t.Errorf("sockets %+v %v", s, err)
	}

	etc, run := t.TempDir(), filepath.Join(t.TempDir(), "absent")
	os.WriteFile(filepath.Join(etc, "b.yaml"), []byte("cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices:\n- name: gpu0\n"), 0o644)
	os.WriteFile(filepath.Join(etc, "a.json"), []byte(`{"cdiVersion":"0.6.0","kind":"example.com/nic","devices":[{"name":"nic0"}]}`), 0o644)
	os.WriteFile(filepath.Join(etc, "empty.json"), nil, 0o644)
	os.WriteFile(filepath.Join(etc, "big.json"), make([]byte, nodefs.MaxSpecBytes+1), 0o644)
	os.WriteFile(filepath.Join(etc, "notes.txt"), []byte("no spec"), 0o644)
	dirs := []nodefs.CDIDir{{Node: etc, Here: etc}, {Node: run, Here: run}}
	if got, want := cdiSection([]string{etc, run}), sh(t, t.TempDir(), nodefs.CDIScript(dirs)); string(got) != string(want) {
		t.Errorf("CDI:\ngot  %q\nwant %q", got[:min(len(got), 400)], want[:min(len(want), 400)])
	}
	files, err := nodefs.ParseCDIDump(cdiSection([]string{etc, run}))
	if err != nil || len(files) != 4 {
		t.Errorf("CDI files %d: %v", len(files), err)
	}
}

// The machine read from this host's sysfs is the script's.
func TestSysfsDumpIsTheScripts(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skip("no sysfs here")
	}
	want, err := machine.FromSysfs(sh(t, t.TempDir(), machine.SysfsScript))
	if err != nil {
		t.Fatal(err)
	}
	got, err := machine.FromSysfs(sysfsDump("/sys", "/proc"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("machine:\ngot  %s\nwant %s", got.Summary(), want.Summary())
	}
}

// The bundles name each pod's containers with the runtime's ID scheme, and the pods whose
// sandbox runs.
func TestRunningContainers(t *testing.T) {
	rts := []Runtime{Runtimes[0], Runtimes[1]}
	rts[0].Bundles = filepath.Join("testdata", "bundles", "containerd", "k8s.io", "*", "config.json")
	rts[1].Bundles = filepath.Join("testdata", "bundles", "crio", "overlay-containers", "*", "userdata", "config.json")
	ix, warnings := runningContainers(rts)
	want := map[string][]fetch.ContainerStatus{
		"5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f": {{Name: "app", ID: "containerd://3d4e", Running: true}},
		"0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9": {{Name: "web", ID: "cri-o://c0ffee", Running: true}},
	}
	if !reflect.DeepEqual(ix.Statuses, want) || len(warnings) != 0 {
		t.Errorf("statuses %+v, warnings %v", ix.Statuses, warnings)
	}
	if sandboxes := map[string]bool{"5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f": true, "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9": true}; !reflect.DeepEqual(ix.Sandboxes, sandboxes) {
		t.Errorf("sandboxes %v, want %v", ix.Sandboxes, sandboxes)
	}
	bad := filepath.Join(t.TempDir(), "x", "config.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("{not json"), 0o644)
	rts[0].Bundles = filepath.Join(filepath.Dir(filepath.Dir(bad)), "*", "config.json")
	if _, warnings := runningContainers(rts[:1]); len(warnings) != 1 {
		t.Errorf("a broken bundle: warnings %v", warnings)
	}
}
