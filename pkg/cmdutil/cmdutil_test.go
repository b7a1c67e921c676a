package cmdutil

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

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

// --reader=binary runs the plugin's own image unless --image names one (its mirror); the shell
// reader keeps --image's default; an unknown reader is refused.
func TestLiveReader(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantImage string
		wantErr   string
	}{
		{nil, DefaultImage, ""},
		{[]string{"--reader=binary"}, "", ""},
		{[]string{"--reader=binary", "--image=mirror.example.com/kubectl-nodestate:v1"}, "mirror.example.com/kubectl-nodestate:v1", ""},
		{[]string{"--reader=shell", "--image=mirror.example.com/busybox:1.37"}, "mirror.example.com/busybox:1.37", ""},
		{[]string{"--reader=python"}, "", "--reader must be shell or binary"},
	} {
		o := &LiveOptions{}
		cmd := &cobra.Command{}
		o.AddFlags(cmd)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate([]string{"n1"})
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: %v, want %q", tc.args, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case o.DebugImage() != tc.wantImage:
			t.Errorf("%q: image %q, want %q", tc.args, o.DebugImage(), tc.wantImage)
		}
	}
}
