package nodecheck

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ok", "ok"},
		{"two\nlines  and   spaces", "two lines and spaces"},
		{strings.Repeat("a", 80), strings.Repeat("a", 80)},
		{strings.Repeat("a", 81), strings.Repeat("a", 77) + "..."},
		// A rune is never cut in half.
		{strings.Repeat("a", 76) + "é" + strings.Repeat("b", 10), strings.Repeat("a", 76) + "..."},
	} {
		got := Line(tc.in)
		if got != tc.want || len(got) > MaxLine {
			t.Errorf("Line(%q) = %q (%d bytes), want %q", tc.in, got, len(got), tc.want)
		}
	}
}

// run runs node-check as main does, returning stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewCmdNodeCheck(streams)
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	code := 0
	var exit *cmdutil.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.Code
	case err != nil:
		code = cmdutil.ExitUsage
	}
	return out.String(), errOut.String(), code
}

// Each check answers on one line of stdout within 80 bytes, with NPD's exit status.
func TestNodeCheckProtocol(t *testing.T) {
	root := filepath.Join("..", "..", "nodestate", "testdata", "noderoot")
	base := []string{"--kubelet-root-dir", filepath.Join(root, "kubelet"), "--kubelet-version", "v1.37.1",
		"--cdi-dirs", filepath.Join(root, "host", "etc", "cdi") + "," + filepath.Join(root, "host", "var", "run", "cdi"),
		"--cgroup-root", t.TempDir(), "--kubelet-binary", filepath.Join(root, "absent")}
	for _, tc := range []struct {
		check  string
		code   int
		prefix string
	}{
		{"checkpoints", 0, "5 checkpoint files valid for kubelet v1.37.1"},
		{"restart", 1, "kubelet v1.37.1 would not start: could not restore state from checkpoint"},
		{"cgroups", 2, "cannot judge: no cpuset cgroup tree at"},
		{"devices", 1, "device-plugin-gone "},
	} {
		out, errOut, code := run(t, append([]string{tc.check}, base...)...)
		if code != tc.code || !strings.HasPrefix(out, tc.prefix) || strings.Count(out, "\n") != 1 || len(out) > MaxLine+1 {
			t.Errorf("%s: exit %d %q, want exit %d %q...", tc.check, code, out, tc.code, tc.prefix)
		}
		if tc.code == 1 && !strings.Contains(errOut, tc.check+": error ") {
			t.Errorf("%s: stderr %q names no problem", tc.check, errOut)
		}
	}
	// A kubelet build no vector was made by is judged by the newest rules: the line says so in
	// brief, stderr in full.
	later := append(slices.Clone(base), "--kubelet-version", "v1.99.0")
	if out, errOut, code := run(t, append([]string{"checkpoints"}, later...)...); code != 0 || out != "5 checkpoint files valid for kubelet v1.99.0"+nodestate.UncheckedMark+"\n" ||
		!strings.HasPrefix(errOut, "checkpoints: note: kubelet v1.99.0 is newer than every build this plugin was checked against") {
		t.Errorf("v1.99.0: exit %d %q, stderr %q", code, out, errOut)
	}
	// A root dir that is not there cannot be judged; an unknown check is a usage error.
	if out, _, code := run(t, "checkpoints", "--kubelet-root-dir", filepath.Join(root, "absent")); code != 2 || !strings.HasPrefix(out, "cannot judge: kubelet root dir:") {
		t.Errorf("no root dir: exit %d %q", code, out)
	}
	if _, _, code := run(t, "everything"); code != cmdutil.ExitUsage {
		t.Errorf("unknown check: exit %d", code)
	}
}

// --install-to copies this binary (here the test binary) into the dir, checking nothing; with a
// check named too, it is a usage error.
func TestInstallTo(t *testing.T) {
	dir := t.TempDir()
	out, _, code := run(t, "--install-to", dir)
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(filepath.Join(dir, "kubectl-nodestate"))
	if code != 0 || out != "" || err != nil || !bytes.Equal(got, want) {
		t.Errorf("exit %d %q: %d bytes copied of %d, %v", code, out, len(got), len(want), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "kubectl-nodestate")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d files", len(entries))
	}
	if _, _, code := run(t, "checkpoints", "--install-to", dir); code != cmdutil.ExitUsage {
		t.Errorf("a check and --install-to: exit %d", code)
	}
	if _, _, code := run(t); code != cmdutil.ExitUsage {
		t.Errorf("no check: exit %d", code)
	}
}
