package nodefs

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// posixShells are the POSIX shells on this machine: dash and busybox sh, as on the nodes and in
// the debug image; sh (whatever it is) when neither is there.
func posixShells(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, name := range []string{"dash", "busybox"} {
		if p, err := exec.LookPath(name); err == nil {
			found[name] = p
		}
	}
	if len(found) == 0 {
		if p, err := exec.LookPath("sh"); err == nil {
			found["sh"] = p
		}
	}
	if len(found) == 0 {
		t.Skip("no POSIX shell here")
	}
	return found
}

func runScript(t *testing.T, shell, dir, script string) []byte {
	t.Helper()
	args := []string{"-c", script}
	if filepath.Base(shell) == "busybox" {
		args = append([]string{"sh"}, args...)
	}
	cmd := exec.Command(shell, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", shell, err)
	}
	return out
}

// listen makes a real unix socket at p, as a device plugin does.
func listen(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

// The script against a recorded device-plugins/ dir: sockets only (not the checkpoint, not a
// regular file named like a socket), hidden ones too.
func TestSocketsScript(t *testing.T) {
	root := t.TempDir()
	dp := filepath.Join(root, SocketsDir)
	if err := os.Mkdir(dp, 0o755); err != nil {
		t.Fatal(err)
	}
	listen(t, filepath.Join(dp, KubeletSocket))
	listen(t, filepath.Join(dp, "nvidia gpu.sock"))
	listen(t, filepath.Join(dp, ".hidden.sock"))
	for _, f := range []string{"kubelet_internal_checkpoint", "fake.sock"} {
		if err := os.WriteFile(filepath.Join(dp, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, sh := range posixShells(t) {
		t.Run(name, func(t *testing.T) {
			s, err := ParseSockets(runScript(t, sh, root, SocketsScript))
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{".hidden.sock", "kubelet.sock", "nvidia gpu.sock"}; !reflect.DeepEqual(s.Names, want) {
				t.Errorf("sockets %q, want %q", s.Names, want)
			}
		})
	}
	// No device-plugins/ at all: an empty, complete section.
	for name, sh := range posixShells(t) {
		s, err := ParseSockets(runScript(t, sh, t.TempDir(), SocketsScript))
		if err != nil || len(s.Names) != 0 {
			t.Errorf("%s: empty dir: %q, %v", name, s.Names, err)
		}
	}
}

func TestParseSocketsRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		SocketsHeader + "\nkubelet.sock\n",      // cut short
		SocketsHeader + "\n../x\n" + End + "\n", // not a name
		strings.Repeat("x", MaxSocketsBytes+1),  // too big
		"@@nodestate-device-plugin-sockets v2\n@@end", // another version
	} {
		if _, err := ParseSockets([]byte(in)); err == nil {
			t.Errorf("ParseSockets(%.40q) accepted", in)
		}
	}
}

const gpuSpec = `cdiVersion: "0.6.0"
kind: example.com/gpu
devices:
- name: gpu-0
  containerEdits:
    env: ["GPU=0"]
- name: gpu-1
  containerEdits:
    env: ["GPU=1"]
`

// The script against recorded spec dirs (one missing): each spec comes back whole, whatever its
// lines (one holds the end marker), other files are left out, a spec over the cap is named.
func TestCDIScript(t *testing.T) {
	node := t.TempDir()
	etc, run := filepath.Join(node, "etc-cdi"), filepath.Join(node, "run-cdi")
	for _, d := range []string{etc, run} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nic := `{"cdiVersion":"0.5.0","kind":"example.com/nic","devices":[{"name":"nic0"}]}`
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(run, "example.com-gpu.yaml"), gpuSpec)
	write(filepath.Join(etc, "nic.json"), nic)
	broken := "cdiVersion: x\n" + End + "\n@@file /etc/cdi/forged.yaml 0\n"
	write(filepath.Join(etc, "broken.yaml"), broken)
	write(filepath.Join(etc, "README"), "not a spec")
	write(filepath.Join(etc, "big.yaml"), string(make([]byte, MaxSpecBytes+1)))
	dirs := []CDIDir{{Node: "/etc/cdi", Here: etc}, {Node: "/var/run/cdi", Here: run}, {Node: "/none", Here: filepath.Join(node, "none")}}
	for name, sh := range posixShells(t) {
		t.Run(name, func(t *testing.T) {
			files, err := ParseCDIDump(runScript(t, sh, node, CDIScript(dirs)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = fmt.Sprintf("%d %q", f.Size, f.Data)
			}
			want := map[string]string{
				"/etc/cdi/nic.json":                 fmt.Sprintf("%d %q", len(nic), nic),
				"/etc/cdi/broken.yaml":              fmt.Sprintf("%d %q", len(broken), broken),
				"/etc/cdi/big.yaml":                 fmt.Sprintf("%d %q", MaxSpecBytes+1, []byte(nil)),
				"/var/run/cdi/example.com-gpu.yaml": fmt.Sprintf("%d %q", len(gpuSpec), gpuSpec),
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("files %v\nwant %v", got, want)
			}
			reg := NewRegistry(files)
			wantDevs := map[string]string{"example.com/gpu=gpu-0": "/var/run/cdi/example.com-gpu.yaml",
				"example.com/gpu=gpu-1": "/var/run/cdi/example.com-gpu.yaml", "example.com/nic=nic0": "/etc/cdi/nic.json"}
			if !reflect.DeepEqual(reg.Devices, wantDevs) || len(reg.Problems) != 2 ||
				!strings.HasPrefix(reg.Problems[0], "/etc/cdi/big.yaml") || !strings.HasPrefix(reg.Problems[1], "/etc/cdi/broken.yaml") {
				t.Errorf("registry %v, problems %q", reg.Devices, reg.Problems)
			}
		})
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, in := range []string{
		``, `kind: a/b`, `cdiVersion: "0.6.0"` + "\nkind: nokind\ndevices: [{name: a}]",
		`cdiVersion: "0.6.0"` + "\nkind: a/b\ndevices: [{name: 'a b'}]",
		`cdiVersion: "0.6.0"` + "\nkind: a/b\n",
		"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
	} {
		if _, err := ParseSpec([]byte(in)); err == nil {
			t.Errorf("ParseSpec(%q) accepted", in)
		}
	}
}

func TestParseCDIDumpRefuses(t *testing.T) {
	for _, in := range []string{
		CDIHeader + "\n@@file /etc/cdi/a.yaml 10\nshort\n" + End + "\n",
		CDIHeader + "\n@@file relative.yaml 0\n\n" + End + "\n",
		CDIHeader + "\n@@file /etc/cdi/../x.yaml 0\n\n" + End + "\n",
		CDIHeader + "\n@@file /etc/cdi/a.yaml -1\n" + End + "\n",
		CDIHeader + "\n@@file /etc/cdi/a.yaml 99999999999\n" + End + "\n",
		CDIHeader + "\ngarbage\n" + End + "\n",
		CDIHeader + "\n",
	} {
		if _, err := ParseCDIDump([]byte(in)); err == nil {
			t.Errorf("ParseCDIDump(%q) accepted", in)
		}
	}
}
