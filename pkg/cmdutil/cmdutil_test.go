package cmdutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

const repo = "../.."

func TestParseFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]bool
	}{
		{"", map[string]bool{}},
		{"PodLevelResourceManagers=true", map[string]bool{"PodLevelResourceManagers": true}},
		{"A=true,B=false", map[string]bool{"A": true, "B": false}},
		{" A = true , B=0 ,", map[string]bool{"A": true, "B": false}},
		{",,A=1,,", map[string]bool{"A": true}},
		{"A=true,A=false", map[string]bool{"A": false}}, // the last one wins, as in the kubelet
		{"A=TRUE,B=F", map[string]bool{"A": true, "B": false}},
	} {
		got, err := ParseFeatureGates(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseFeatureGates(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"A", "A=", "A=yes", "=true", " =true", "A=true,B", "A:true", "A=true=false"} {
		_, err := ParseFeatureGates(in)
		if err == nil {
			t.Errorf("ParseFeatureGates(%q): no error", in)
		} else if !strings.HasPrefix(err.Error(), "invalid --feature-gates entry ") || !strings.Contains(err.Error(), "want Name=true|false") {
			t.Errorf("ParseFeatureGates(%q): unclear error %q", in, err)
		}
	}
}

func TestLongDesc(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"tabs", `
			Verify recognises each file.
			  indented more

			Exit status: 0.`,
			"Verify recognises each file.\n  indented more\n\nExit status: 0."},
		{"spaces and blank lines with spaces", "\n    one\n      \n    two\n  ", "one\n\ntwo"},
		{"already flush left keeps relative indentation", "first\n  second\nthird", "first\n  second\nthird"},
		{"whitespace-only line shorter than the indent", "\n\t\tone\n\t\n\t\ttwo", "one\n\ntwo"},
		{"empty", "", ""},
		{"only blank", "\n   \n\t\n", ""},
	} {
		if got := LongDesc(tc.in); got != tc.want {
			t.Errorf("%s: LongDesc(%q)\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestExamples(t *testing.T) {
	in := `
		# Verify every checkpoint of a node
		kubectl nodestate verify worker-1

		# Verify files copied off a node
		kubectl nodestate verify --from-dir ./var-lib-kubelet \
		  -o wide`
	want := "  # Verify every checkpoint of a node\n" +
		"  kubectl nodestate verify worker-1\n" +
		"\n" +
		"  # Verify files copied off a node\n" +
		"  kubectl nodestate verify --from-dir ./var-lib-kubelet \\\n" +
		"    -o wide"
	if got := Examples(in); got != want {
		t.Errorf("Examples:\n got %q\nwant %q", got, want)
	}
}

func TestSourceValidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        SourceOptions
		nodes    []string
		allNodes bool
		err      string // "" for valid
	}{
		{"node", SourceOptions{}, []string{"n1"}, false, ""},
		{"nodes", SourceOptions{}, []string{"n1", "n2"}, false, ""},
		{"all nodes", SourceOptions{}, nil, true, ""},
		{"from-dir", SourceOptions{FromDir: "d"}, nil, false, ""},
		{"from-file", SourceOptions{FromFile: "f"}, nil, false, ""},
		{"from-file with kind", SourceOptions{FromFile: "f", Kind: "cpu_manager_state"}, nil, false, ""},
		{"version and gates", SourceOptions{FromDir: "d", KubeletVersion: "v1.36.4", FeatureGates: "PodLevelResourceManagers=true"}, nil, false, ""},
		{"version with a node", SourceOptions{KubeletVersion: "v1.36.4"}, []string{"n1"}, false, ""},
		{"nothing", SourceOptions{}, nil, false, "you must name a node (or use --all-nodes), or read copied files with --from-dir or --from-file"},
		{"both sources", SourceOptions{FromDir: "d", FromFile: "f"}, nil, false, "--from-dir and --from-file cannot be used together"},
		{"dir and node", SourceOptions{FromDir: "d"}, []string{"n1"}, false, "node names and --all-nodes read live nodes; they cannot be combined with --from-dir or --from-file"},
		{"file and all nodes", SourceOptions{FromFile: "f"}, nil, true, "node names and --all-nodes read live nodes; they cannot be combined with --from-dir or --from-file"},
		{"kind without file", SourceOptions{FromDir: "d", Kind: "cpu_manager_state"}, nil, false, "--kind only applies to --from-file"},
		{"kind with a node", SourceOptions{Kind: "cpu_manager_state"}, []string{"n1"}, false, "--kind only applies to --from-file"},
		{"gates without version", SourceOptions{FromDir: "d", FeatureGates: "A=true"}, nil, false, "--feature-gates needs --kubelet-version: gates only matter for the kubelet they belong to"},
		{"unknown kind", SourceOptions{FromFile: "f", Kind: "cpu_state"}, nil, false, `unknown --kind "cpu_state": want one of cpu_manager_state, memory_manager_state, kubelet_internal_checkpoint, dra_manager_state, dra_health_state, pod_status_manager_state, allocated_pods_state, actuated_pods_state`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate(tc.nodes, tc.allNodes)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("error:\n got %v\nwant %s", err, tc.err)
			}
			if got, want := tc.o.Offline(), tc.o.FromDir != "" || tc.o.FromFile != ""; got != want {
				t.Errorf("Offline() = %v", got)
			}
		})
	}
}

func TestSourceComplete(t *testing.T) {
	o := SourceOptions{Output: "json", KubeletVersion: "v1.36.4", FeatureGates: "PodLevelResourceManagers=true"}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if o.Format != render.JSON || o.Kubelet == nil || o.Kubelet.Version.String() != "1.36.4" || !o.Kubelet.Gates["PodLevelResourceManagers"] {
		t.Errorf("completed: format %q, kubelet %+v", o.Format, o.Kubelet)
	}
	o = SourceOptions{}
	if err := o.Complete(); err != nil || o.Kubelet != nil || o.Format != render.Table {
		t.Errorf("defaults: %v, %+v", err, o)
	}
	for _, tc := range []struct {
		o    SourceOptions
		want string
	}{
		{SourceOptions{Output: "jsonpath"}, `unable to match a printer suitable for the output format "jsonpath"`},
		{SourceOptions{KubeletVersion: "1.x"}, `invalid kubelet version "1.x"`},
		{SourceOptions{KubeletVersion: "v1.36.4", FeatureGates: "Foo"}, `invalid --feature-gates entry "Foo"`},
	} {
		if err := tc.o.Complete(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Complete(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestLiveValidate(t *testing.T) {
	ok := LiveOptions{Concurrency: 1, Timeout: time.Second}
	if err := ok.Validate([]string{"n1"}); err != nil {
		t.Errorf("valid: %v", err)
	}
	for _, tc := range []struct {
		o     LiveOptions
		nodes []string
		want  string
	}{
		{LiveOptions{AllNodes: true, Concurrency: 1, Timeout: time.Second}, []string{"n1"}, "name nodes or use --all-nodes, not both"},
		{LiveOptions{Selector: "a=b", Concurrency: 1, Timeout: time.Second}, []string{"n1"}, "-l/--selector selects nodes for --all-nodes; add --all-nodes"},
		{LiveOptions{Concurrency: 0, Timeout: time.Second}, []string{"n1"}, "--concurrency must be at least 1"},
		{LiveOptions{Concurrency: 1, Timeout: 0}, []string{"n1"}, "timeout must be positive"},
		{LiveOptions{Concurrency: 1, Timeout: -time.Second}, []string{"n1"}, "timeout must be positive"},
	} {
		if err := tc.o.Validate(tc.nodes); err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestExit(t *testing.T) {
	if Exit(ExitOK) != nil {
		t.Error("Exit(0) is not nil")
	}
	var e *ExitError
	if err := Exit(ExitUnreadable); !errors.As(err, &e) || e.Code != 2 || err.Error() != "exit status 2" {
		t.Errorf("Exit(2) = %#v", err)
	}
	if err := (&ExitError{Code: 1, Message: "boom"}); err.Error() != "boom" {
		t.Errorf("message: %q", err.Error())
	}
}

type fakeRunner struct{ complete, validate, run error }

func (f fakeRunner) Complete([]string) error   { return f.complete }
func (f fakeRunner) Validate() error           { return f.validate }
func (f fakeRunner) Run(context.Context) error { return f.run }

func TestRunEExitCodes(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		r    fakeRunner
		code int // 0: no error
	}{
		{"ok", fakeRunner{}, 0},
		{"complete", fakeRunner{complete: boom}, ExitUsage},
		{"validate", fakeRunner{validate: boom}, ExitUsage},
		{"run plain error", fakeRunner{run: boom}, ExitNotValid},
		{"run exit code kept", fakeRunner{run: Exit(ExitUnreadable)}, ExitUnreadable},
	} {
		err := RunE(tc.r)(&cobra.Command{}, nil)
		var e *ExitError
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code != 0 && (!errors.As(err, &e) || e.Code != tc.code):
			t.Errorf("%s: %#v, want exit %d", tc.name, err, tc.code)
		case tc.code != 0 && tc.code != ExitUnreadable && e.Message != "boom":
			t.Errorf("%s: message %q", tc.name, e.Message)
		}
	}
}

func TestLoadOfflineFromFile(t *testing.T) {
	vector := filepath.Join(repo, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.json")
	// Named like a vector, not like the file on the node: the kind must be given.
	_, err := (&SourceOptions{FromFile: vector}).LoadOffline()
	if err == nil || !strings.Contains(err.Error(), "cannot tell which checkpoint") || !strings.Contains(err.Error(), "--kind") {
		t.Errorf("unknown name: %v", err)
	}
	s, err := (&SourceOptions{FromFile: vector, Kind: "cpu_manager_state"}).LoadOffline()
	if err != nil {
		t.Fatal(err)
	}
	if s.Kinds[vector] != decode.KindCPU || len(s.Files[vector]) == 0 || s.Node != "" {
		t.Errorf("snapshot: %+v", s)
	}
	// The node's file name is enough, wherever it lies.
	dir := t.TempDir()
	p := filepath.Join(dir, "memory_manager_state")
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := (&SourceOptions{FromFile: p}).LoadOffline(); err != nil || s.Kinds[p] != decode.KindMemory {
		t.Errorf("by name: %+v, %v", s, err)
	}
	// --kind wins over the name.
	if s, err := (&SourceOptions{FromFile: p, Kind: "dra_manager_state"}).LoadOffline(); err != nil || s.Kinds[p] != decode.KindDRA {
		t.Errorf("kind over name: %+v, %v", s, err)
	}
	if _, err := (&SourceOptions{FromFile: filepath.Join(dir, "cpu_manager_state")}).LoadOffline(); err == nil {
		t.Error("missing file: no error")
	}
}

func TestLoadOfflineFromDir(t *testing.T) {
	s, err := (&SourceOptions{FromDir: filepath.Join(repo, "examples/broken-node")}).LoadOffline()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 4 || !reflect.DeepEqual(s.TempFiles, []string{".482910377"}) || s.Kinds != nil {
		t.Errorf("snapshot: files %d, temp %q, kinds %v", len(s.Files), s.TempFiles, s.Kinds)
	}
}

func TestDecodeRowsAndOrder(t *testing.T) {
	root := filepath.Join(repo, "examples/kubelet-root")
	files := map[string][]byte{}
	for _, f := range decode.Files {
		if b, err := os.ReadFile(filepath.Join(root, f.Path)); err == nil {
			files[f.Path] = b
		}
	}
	s := &Snapshot{Files: files, Oversized: []string{"pod_status_manager_state"}, TempFiles: []string{".123", "device-plugins/.9"}}
	o := &SourceOptions{}
	rs, err := o.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.File+"="+string(r.Verdict))
	}
	want := []string{
		"cpu_manager_state=valid", "memory_manager_state=valid", "device-plugins/kubelet_internal_checkpoint=valid",
		"dra_manager_state=valid", "dra_health_state=valid", "allocated_pods_state=valid", "actuated_pods_state=valid",
		"pod_status_manager_state=unreadable", ".123=not-read", "device-plugins/.9=not-read",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	// The oversized row carries its kind (so the show commands count it) and a cause.
	over := rs[7]
	if over.Kind != decode.KindPodStatus || !strings.Contains(over.Cause, "64 MiB cap") || over.Error == "" {
		t.Errorf("oversized row: %+v", over.Report)
	}
	if rs[8].Kind != "" || !strings.Contains(rs[8].Error, "temp file") {
		t.Errorf("temp row: %+v", rs[8].Report)
	}
	for _, r := range rs[:7] {
		if r.Kind == "" || r.Reader == "" {
			t.Errorf("%s: kind %q reader %q", r.File, r.Kind, r.Reader)
		}
	}
}

func TestDecodeReader(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repo, "examples/kubelet-root/cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	snap := func(version string) *Snapshot {
		return &Snapshot{Node: "n1", KubeletVersion: version, Files: map[string][]byte{"cpu_manager_state": raw}}
	}
	// Offline: the last kubelet writing the format.
	rs, err := (&SourceOptions{}).Decode(snap(""))
	if err != nil || rs[0].Reader != "v1.37.1" {
		t.Fatalf("offline reader: %v %v", rs, err)
	}
	// Live: the node's own kubelet version.
	rs, err = (&SourceOptions{}).Decode(snap("v1.36.4"))
	if err != nil || rs[0].Reader != "v1.36.4" || rs[0].Node != "n1" {
		t.Errorf("node reader: %+v %v", rs[0].Report, err)
	}
	// --kubelet-version wins over the node's version.
	o := &SourceOptions{KubeletVersion: "v1.35.8"}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if rs, err = o.Decode(snap("v1.36.4")); err != nil || rs[0].Reader != "v1.35.8" {
		t.Errorf("flag reader: %+v %v", rs[0].Report, err)
	}
	// A version naming no release does not stop the read: the format's own rules judge, and the
	// report says why.
	rs, err = (&SourceOptions{}).Decode(snap("garbage"))
	if err != nil || rs[0].Reader == "" || len(rs[0].Notes) == 0 || !strings.Contains(rs[0].Notes[len(rs[0].Notes)-1], `"garbage"`) {
		t.Errorf("bad node version: %+v %v", rs[0].Report, err)
	}
}

func TestWhere(t *testing.T) {
	if got := Where(&Snapshot{Node: "n1"}, &SourceOptions{}); got != "node n1" {
		t.Errorf("node: %q", got)
	}
	if got := Where(&Snapshot{}, &SourceOptions{FromDir: "d"}); got != "d" {
		t.Errorf("dir: %q", got)
	}
	if got := Where(&Snapshot{}, &SourceOptions{FromFile: "f"}); got != "f" {
		t.Errorf("file: %q", got)
	}
}

func TestNodeColumnWidth(t *testing.T) {
	for _, tc := range []struct {
		nodes []string
		want  int
	}{{nil, 30}, {[]string{"a"}, 4}, {[]string{"a", "worker-long-name-17"}, 19}} {
		if got := NodeColumnWidth(tc.nodes); got != tc.want {
			t.Errorf("NodeColumnWidth(%q) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}
