package cmdutil

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// fleetNotes adds what doctor says of n nodes without a kubelet config: two notes per node,
// one naming the node inside its text too, and one note only node-3 has.
func fleetNotes(notes *Notes, n int) {
	for i := range n {
		node := fmt.Sprintf("node-%d", i)
		notes.Addf(node, "node %s: kubelet config not read: configz: GET /api/v1/nodes/%s/proxy/configz answered HTTP 404", node, node)
		notes.Addf(node, "node %s: skipped start prediction: needs the kubelet config (--kubelet-config)", node)
		if i == 3 {
			notes.Addf(node, "warning: node %s: the debug pod printed no sysfs dump", node)
		}
	}
}

func TestNotesSayARepeatedNoteOnce(t *testing.T) {
	var b bytes.Buffer
	notes := &Notes{w: &b, byKey: map[string]*noteGroup{}}
	fleetNotes(notes, 1000)
	if b.Len() != 0 {
		t.Fatalf("printed before Flush: %q", b.String())
	}
	notes.Flush()
	want := `1000 nodes (node-0, node-1, node-10, ...): kubelet config not read: configz: GET /api/v1/nodes/NODE/proxy/configz answered HTTP 404
1000 nodes (node-0, node-1, node-10, ...): skipped start prediction: needs the kubelet config (--kubelet-config)
warning: node node-3: the debug pod printed no sysfs dump
(a note said of several nodes is printed once; -v=1 prints it for each)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestNotesEach(t *testing.T) {
	// -v: every line as it comes, in order.
	var b bytes.Buffer
	notes := &Notes{w: &b, each: true, byKey: map[string]*noteGroup{}}
	fleetNotes(notes, 5)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 11 || lines[0] != "node node-0: kubelet config not read: configz: GET /api/v1/nodes/node-0/proxy/configz answered HTTP 404" ||
		lines[8] != "warning: node node-3: the debug pod printed no sysfs dump" {
		t.Errorf("got %d lines:\n%s", len(lines), b.String())
	}
	notes.Flush()
	if strings.Count(b.String(), "\n") != 11 {
		t.Errorf("Flush printed again:\n%s", b.String())
	}
}

func TestNotesOneNodeAndOffline(t *testing.T) {
	// One node's notes, and notes about files read offline (no node), print as they are.
	var b bytes.Buffer
	notes := &Notes{w: &b, byKey: map[string]*noteGroup{}}
	notes.Addf("", "examples/x: skipped stale entries")
	if b.String() != "examples/x: skipped stale entries\n" {
		t.Errorf("offline note not printed at once: %q", b.String())
	}
	b.Reset()
	fleetNotes(notes, 1)
	notes.Flush()
	want := "node node-0: kubelet config not read: configz: GET /api/v1/nodes/node-0/proxy/configz answered HTTP 404\n" +
		"node node-0: skipped start prediction: needs the kubelet config (--kubelet-config)\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestReplaceName(t *testing.T) {
	for _, tc := range []struct{ s, name, want string }{
		{"node a: x", "a", "node #: x"},
		{"node a-1: data a", "a", "node a-1: data #"},
		{"/nodes/w1/proxy and w10", "w1", "/nodes/#/proxy and w10"},
		{"ends with w1.", "w1", "ends with #."},
		{"w1.example.com is not w1", "w1", "w1.example.com is not #"},
	} {
		if got := replaceName(tc.s, tc.name, "#"); got != tc.want {
			t.Errorf("replaceName(%q, %q) = %q, want %q", tc.s, tc.name, got, tc.want)
		}
	}
}

// -v=1 (klog's verbosity, the plugin's -v flag) prints each note.
func TestNewNotesFollowsVerbosity(t *testing.T) {
	var level klog.Level
	if NewNotes(io.Discard).each {
		t.Fatal("each note printed at the default verbosity")
	}
	if err := level.Set("1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = level.Set("0") })
	if !NewNotes(io.Discard).each {
		t.Error("-v=1 does not print each note")
	}
}
