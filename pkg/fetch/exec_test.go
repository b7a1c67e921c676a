package fetch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// shells runs the collect command with each shell+tar the machine has: the system's (what kwok
// runs it with) and busybox's (what the default image runs it with).
func shells(t *testing.T) map[string]func(args []string) *exec.Cmd {
	t.Helper()
	found := map[string]func(args []string) *exec.Cmd{}
	if _, err := exec.LookPath("sh"); err == nil {
		if _, err := exec.LookPath("tar"); err == nil {
			found["system"] = func(args []string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
		}
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		// A PATH of busybox applets only, as in the busybox image.
		bin := t.TempDir()
		for _, applet := range []string{"sh", "tar", "[", "test", "grep"} {
			if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
				t.Fatal(err)
			}
		}
		found["busybox"] = func(args []string) *exec.Cmd {
			cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
			cmd.Env = append(os.Environ(), "PATH="+bin)
			return cmd
		}
	}
	if len(found) == 0 {
		t.Skip("no sh and tar on this machine")
	}
	return found
}

// The real collect command, against a real directory: existing regular files come back,
// missing ones, directories and dangling links are left out, and it exits 0 with no stdin.
func TestCollectCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu_manager_state", `{"policyName":"static"}`)
	write("device-plugins/kubelet_internal_checkpoint", "dev")
	write("-n", "dash")           // looks like an option
	write("with space", "spaced") // needs quoting
	if err := os.MkdirAll(filepath.Join(dir, "dra_manager_state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "memory_manager_state")); err != nil {
		t.Fatal(err)
	}
	paths := []string{"cpu_manager_state", "memory_manager_state", "dra_manager_state",
		"device-plugins/kubelet_internal_checkpoint", "-n", "with space", "missing"}

	for name, command := range shells(t) {
		t.Run(name, func(t *testing.T) {
			run := func(paths []string) ([]byte, string) {
				cmd := command(CollectCommand(paths))
				cmd.Dir = dir
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
				}
				return stdout.Bytes(), stderr.String()
			}

			out, stderr := run(paths)
			files, missing, err := ReadTar(bytes.NewReader(out), paths, TarLimits{})
			if err != nil {
				t.Fatalf("ReadTar: %v", err)
			}
			want := map[string][]byte{
				"cpu_manager_state":                          []byte(`{"policyName":"static"}`),
				"device-plugins/kubelet_internal_checkpoint": []byte("dev"),
				"-n":         []byte("dash"),
				"with space": []byte("spaced"),
			}
			if diff := cmp.Diff(want, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"memory_manager_state", "dra_manager_state", "missing"}, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			// Only the end marker, last: the script ran to its end.
			if stderr != endMarker+"\n" {
				t.Errorf("stderr %q, want only the end marker", stderr)
			}

			// Nothing there: no output at all, still exit 0, and the end marker.
			if out, stderr := run([]string{"missing", "also-missing"}); len(out) != 0 || stderr != endMarker+"\n" {
				t.Errorf("with no file present: %d bytes, stderr %q", len(out), stderr)
			}
		})
	}
}

// An image without tar must not pass for a node without files.
func TestCollectCommandNoTar(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	if err := os.Symlink(sh, filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	args := CollectCommand([]string{"cpu_manager_state"})
	cmd := exec.Command(filepath.Join(bin, "sh"), args[1:]...)
	cmd.Env = []string{"PATH=" + bin}
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), noTarMarker) {
		t.Errorf("stdout %d bytes, stderr %q; want nothing and the marker", stdout.Len(), stderr.String())
	}
}

// A tar killed under the script (a container killed mid-exec) leaves out the end marker, even
// when it wrote nothing: the read is then refused, never taken for "no file".
func TestCollectCommandTarKilled(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	if err := os.Symlink(sh, filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "tar"), []byte("#!"+sh+"\nkill -9 $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpu_manager_state"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := CollectCommand([]string{"cpu_manager_state"})
	cmd := exec.Command(filepath.Join(bin, "sh"), args[1:]...)
	cmd.Env = []string{"PATH=" + bin}
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if strings.Contains(stderr.String(), endMarker) {
		t.Errorf("stderr %q has the end marker after tar was killed", stderr.String())
	}
}

// The machine variant, with real shells on this machine's sysfs: stdout is still exactly the
// tar, the dump sits on stderr between its markers and parses, and tar's own complaint (an
// unreadable file) stays apart from it.
func TestCollectDumpCommand(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skip("no sysfs here")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cpu_manager_state"), []byte(`{"policyName":"none"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{"cpu_manager_state", "memory_manager_state"}
	for name, command := range shells(t) {
		t.Run(name, func(t *testing.T) {
			// The one script holds both sections; the command asks for sysfs only.
			script := ShellReaderScript([]StderrDump{sysfsDump, otherDump})
			cmd := command(ShellReaderCommand(script, paths, []StderrDump{sysfsDump}))
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
			}
			files, missing, err := ReadTar(&stdout, paths, TarLimits{})
			if err != nil {
				t.Fatalf("ReadTar: %v", err)
			}
			if string(files["cpu_manager_state"]) != `{"policyName":"none"}` || len(missing) != 1 {
				t.Errorf("files %q, missing %q", files, missing)
			}
			dumps, rest := splitDumps("tar: before\n"+stderr.String()+"tar: after\n", []StderrDump{sysfsDump})
			dump := dumps[machine.SysfsHeader]
			if strings.Contains(stderr.String(), otherDump.Header) {
				t.Errorf("a section not asked for ran: %q", stderr.String())
			}
			if diff := cmp.Diff([]string{"tar: before", endMarker, "tar: after"}, stderrLines(rest)); diff != "" {
				t.Errorf("stderr without the dump (-want +got):\n%s", diff)
			}
			m, err := machine.FromSysfs(dump)
			if err != nil {
				t.Fatalf("FromSysfs: %v\n%s", err, dump)
			}
			if len(m.CPUs) == 0 {
				t.Errorf("no CPUs from\n%s", dump)
			}
		})
	}
}

// sysfsDump is the dump nodestate passes: package machine's.
var sysfsDump = StderrDump{Header: machine.SysfsHeader, End: machine.SysfsEnd, Script: machine.SysfsScript,
	ReaderSection: "sysfs", Max: machine.MaxSysfsBytes}

// otherDump is a second section, whose directory its reader section names.
var otherDump = StderrDump{Header: "@@other v1", End: "@@end", Script: `echo "@@other v1"; echo x; echo "@@end"`,
	ReaderSection: "other=/host/other", Max: 100}

// A second section beside the sysfs one, each with its end line: both come out whole.
func TestSplitDumps(t *testing.T) {
	other := StderrDump{Header: "@@other v1", End: "@@end"}
	in := "tar: a\n" + machine.SysfsHeader + "\ncpu/online:0\n@@end\n@@other v1\nx\n@@end\ntar: b\n"
	got, rest := splitDumps(in, []StderrDump{sysfsDump, other})
	if string(got[machine.SysfsHeader]) != machine.SysfsHeader+"\ncpu/online:0\n@@end" || string(got[other.Header]) != "@@other v1\nx\n@@end" {
		t.Errorf("dumps %q", got)
	}
	if diff := cmp.Diff([]string{"tar: a", "tar: b"}, stderrLines(rest)); diff != "" {
		t.Errorf("rest (-want +got):\n%s", diff)
	}
}

func TestSplitDump(t *testing.T) {
	for _, tc := range []struct{ in, dump, rest string }{
		{"tar: x\n", "", "tar: x\n"},
		{machine.SysfsHeader + "\ncpu/online:0\n" + machine.SysfsEnd + "\ntar: x\n", machine.SysfsHeader + "\ncpu/online:0\n" + machine.SysfsEnd, "\ntar: x\n"},
		// Cut by the stderr cap: all of it is the dump, which FromSysfs then calls cut short.
		{"a\n" + machine.SysfsHeader + "\ncpu/onl", machine.SysfsHeader + "\ncpu/onl", "a\n"},
	} {
		dumps, rest := splitDumps(tc.in, []StderrDump{sysfsDump})
		dump := dumps[machine.SysfsHeader]
		if string(dump) != tc.dump || rest != tc.rest {
			t.Errorf("splitDumps(%q) = %q, %q; want %q, %q", tc.in, dump, rest, tc.dump, tc.rest)
		}
	}
}
