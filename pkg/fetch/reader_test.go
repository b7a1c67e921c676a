package fetch

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Under ReaderBinary the debug pod runs the plugin's own image of this version with the node
// reader as its command, and is otherwise the shell reader's pod: same mounts, same security.
func TestBinaryReaderPod(t *testing.T) {
	fixSuffix(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	shell := GenerateDebugPod(node, Options{})
	const image = ReaderImageRepo + ":v1.2.3"
	binary := GenerateDebugPod(node, Options{Reader: ReaderBinary, Image: image})
	c := binary.Spec.Containers[0]
	if c.Image != image {
		t.Errorf("image %q", c.Image)
	}
	if want := []string{ReaderPath, NodeReadVerb, "--sleep=300"}; !slices.Equal(c.Command, want) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	binary.Spec.Containers[0].Image, binary.Spec.Containers[0].Command = shell.Spec.Containers[0].Image, shell.Spec.Containers[0].Command
	if !reflect.DeepEqual(shell, binary) {
		t.Errorf("the binary reader's pod differs from the shell's beyond image and command")
	}
	if err := (Options{Reader: "python"}).Validate(); err == nil {
		t.Error("an unknown reader accepted")
	}
	// No image is guessed for the binary reader: the caller knows its version.
	if err := (Options{Reader: ReaderBinary}).Validate(); err == nil || !strings.Contains(err.Error(), "needs the plugin's own image") {
		t.Errorf("the binary reader without an image: %v", err)
	}
}

// The exec command: the node reader with each dump's section, the paths after "--"; a dump
// with no section is left out, as the shell leaves out a dump with no script. The shell
// reader's command is its one script asked for the dumps' sections by name, then the paths.
func TestReaderCommands(t *testing.T) {
	dumps := []StderrDump{{Header: "@@a", Script: "echo a", ReaderSection: "sysfs"}, {Header: "@@b", ReaderSection: "podresources"},
		{Header: "@@c", Script: "echo c", ReaderSection: "cdi=/host/etc/cdi"}}
	f := &Fetcher{Paths: []string{"cpu_manager_state", "--sleep=1"}, Dumps: dumps, Options: Options{Reader: ReaderBinary}}
	want := []string{ReaderPath, NodeReadVerb, "--section=sysfs", "--section=podresources", "--section=cdi=/host/etc/cdi", "--", "cpu_manager_state", "--sleep=1"}
	if got := f.Command(); !slices.Equal(got, want) {
		t.Errorf("binary: %q, want %q", got, want)
	}
	f.Options.Reader = ReaderShell
	got := f.Command()
	want = []string{"sh", "-c", ShellReaderScript(dumps), "sh", "--section=sysfs", "--section=cdi", "./cpu_manager_state", "./--sleep=1"}
	if !slices.Equal(got, want) {
		t.Errorf("shell: %q, want %q", got, want)
	}
	if !strings.HasPrefix(got[2], "for nodestate_arg; do case $nodestate_arg in --section=sysfs) { echo a; } >&2 2>/dev/null;; --section=cdi) { echo c; } >&2 2>/dev/null;; esac; done; ") {
		t.Errorf("shell script: %q", got[2])
	}
	// The script every read shares, whatever it asks for.
	f.ShellScript = ShellReaderScript(append(dumps, StderrDump{Header: "@@d", Script: "echo d", ReaderSection: "other"}))
	if got := f.Command(); got[2] != f.ShellScript || !slices.Equal(got[3:], want[3:]) {
		t.Errorf("shell with the shared script: %q", got)
	}
}
