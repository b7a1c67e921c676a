package cgroup

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	mkdirs(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A hostile cgroup mount: the script stays in its bounds and the parser takes what it can.
func TestScriptOnHostileTree(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset\n")
	kp := filepath.Join(root, "kubepods")
	pod := filepath.Join(kp, "pod"+guaranteed)
	write(t, filepath.Join(pod, appID, "cpuset.cpus"), "2-3\n")
	// A loop back to the root, a name with a newline, a colon and quotes, a file of many
	// lines, a huge line, a tree deeper than any layout.
	if err := os.Symlink(root, filepath.Join(kp, "kubepods-loop")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(kp, "pod\nforged", "cpuset.cpus"), "0\n")
	write(t, filepath.Join(kp, `odd:'name"`, "cpuset.cpus"), "0-1\n")
	write(t, filepath.Join(pod, "many", "cpuset.cpus"), "0\n1\n2\n")
	write(t, filepath.Join(pod, "huge", "cpuset.cpus"), strings.Repeat("0,", 20000)+"0\n")
	deep := filepath.Join(kp, "a", "b", "c", "d", "e")
	write(t, filepath.Join(deep, "cpuset.cpus"), "0\n")
	for _, shell := range shells(t) {
		out := runScript(t, shell, root)
		d, err := Parse(out)
		if err != nil {
			t.Fatalf("%v: %v\n%s", shell, err, out)
		}
		if strings.Contains(string(out), "a/b/c/d") {
			t.Errorf("%v: walked deeper than kubepods/<qos>/<pod>/<container>", shell)
		}
		if bytes.Count(out, []byte("kubepods-loop/")) > 0 {
			t.Errorf("%v: followed a symlink", shell)
		}
		if d.Skipped == 0 {
			t.Errorf("%v: nothing skipped in\n%s", shell, out)
		}
		n := Resolve(d, []PodRef{{UID: guaranteed, Containers: []ContainerRef{
			{Name: "app", ID: "containerd://" + appID, Running: true},
			{Name: "up", ID: "containerd://..", Running: true},
			{Name: "abs", ID: "containerd:///etc", Running: true},
		}}})
		if c := n.Containers[guaranteed]["app"]; c == nil || c.CPUs.Raw != "2-3" {
			t.Errorf("%v: app %+v", shell, c)
		}
		if len(n.Missing) != 2 {
			t.Errorf("%v: IDs that are no path element must not resolve: %+v", shell, n.Missing)
		}
	}
}

// More directories than the cap: the script says it stopped, the parser keeps the flag.
func TestScriptCut(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset\n")
	for i := range 5 {
		mkdirs(t, filepath.Join(root, "kubepods", fmt.Sprintf("pod%d", i)))
	}
	cmd := exec.Command("sh", "-c", script(root, 3))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Cut || len(d.Dirs) != 3 {
		t.Errorf("cut %v, %d directories, want cut after 3:\n%s", d.Cut, len(d.Dirs), out)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no header", "@hierarchy 2\n@@end\n", "no \"@@nodestate-cgroup v1\" header"},
		{"cut", Header + "\n@hierarchy 2\n=./kubepods\n", "cut short"},
		{"no hierarchy", Header + "\n@@end\n", "no @hierarchy"},
		{"bad hierarchy", Header + "\n@hierarchy 3\n@@end\n", "unexpected"},
		{"two hierarchies", Header + "\n@hierarchy 1\n@hierarchy 2\n@@end\n", "unexpected"},
		{"too big", Header + "\n" + strings.Repeat("x", MaxBytes), "over the"},
	} {
		if _, err := Parse([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// No cgroup mount at all is an answer, not an error.
	d, err := Parse([]byte(Header + "\n@hierarchy 0\n@@end\n"))
	if err != nil || d.Version != 0 || len(Resolve(d, nil).Pods) != 0 {
		t.Errorf("%+v %v", d, err)
	}
}

func TestScriptWithoutMount(t *testing.T) {
	out := runScript(t, []string{"sh"}, filepath.Join(t.TempDir(), "absent"))
	d, err := Parse(out)
	if err != nil || d.Version != 0 {
		t.Errorf("%+v %v\n%s", d, err, out)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(Header + "\n@hierarchy 1\n=./kubepods/pod" + guaranteed + "\n=./kubepods/pod" + guaranteed + "/" + appID + "\n./kubepods/pod" + guaranteed + "/" + appID + "/cpuset.cpus:2-3\n@@end\n"))
	f.Add([]byte(Header + "\n@hierarchy 2\n=./kubepods.slice/kubepods-pod" + strings.ReplaceAll(guaranteed, "-", "_") + ".slice\n@@cut\n@@end\n"))
	f.Add([]byte(Header + "\n@hierarchy 2\n=./a\n./a/cpuset.cpus:0-4000000000\n./a/cpuset.mems:0-\n@@end\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			return
		}
		if len(d.Dirs) > MaxDirs {
			t.Fatalf("%d directories", len(d.Dirs))
		}
		var pods []PodRef
		for _, l := range Layouts {
			pods = append(pods, PodRef{UID: guaranteed, Containers: []ContainerRef{{Name: "app", ID: l.Runtime + "://" + appID, Running: true}}})
		}
		n := Resolve(d, pods)
		for _, cs := range n.Containers {
			for _, c := range cs {
				c.Runs()
			}
		}
	})
}
