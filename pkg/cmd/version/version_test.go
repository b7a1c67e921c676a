package version

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/version"
)

var stamp = version.Info{
	Version:   "v0.1.0",
	Commit:    "abc1234",
	Date:      "2026-11-21T10:00:00Z",
	GoVersion: "go1.26.8",
	Platform:  "linux/amd64",
}

// run executes the command with args and a fixed stamp; it returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewCmdVersion(streams)
	orig := getInfo
	getInfo = func() version.Info { return stamp }
	t.Cleanup(func() { getInfo = orig })
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestVersionText(t *testing.T) {
	out, errOut, err := run(t)
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	want := "kubectl-nodestate v0.1.0 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 linux/amd64)\n" +
		"kubelet builds checked: " + strings.Join(nodestate.KubeletBuildsChecked(), ", ") + "\n"
	if out != want || !strings.Contains(want, decode.HomeKubelet+", ") {
		t.Errorf("stdout:\n got %q\nwant %q", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr should be empty, got %q", errOut)
	}
}

func TestVersionStructured(t *testing.T) {
	for _, tc := range []struct {
		format    string
		unmarshal func([]byte, any) error
	}{
		{"json", json.Unmarshal},
		{"yaml", func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out, _, err := run(t, "-o", tc.format)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			var got Info
			if err := tc.unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not %s: %v\n%s", tc.format, err, out)
			}
			if got.Info != stamp || !slices.Equal(got.KubeletBuildsChecked, nodestate.KubeletBuildsChecked()) || !slices.Contains(got.KubeletBuildsChecked, decode.HomeKubelet) {
				t.Errorf("decoded %+v, want %+v and the builds checked", got, stamp)
			}
			if !strings.Contains(out, "goVersion") {
				t.Errorf("field names must be the json tags (goVersion), got:\n%s", out)
			}
		})
	}
}

func TestVersionRejectsUnknownOutput(t *testing.T) {
	out, _, err := run(t, "-o", "wide")
	if err == nil {
		t.Fatal("expected an error for -o wide")
	}
	for _, want := range []string{`"wide"`, "json, yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should mention %s", err, want)
		}
	}
	if out != "" {
		t.Errorf("nothing should be printed on error, got %q", out)
	}
}

func TestVersionRejectsArgs(t *testing.T) {
	if _, _, err := run(t, "extra"); err == nil {
		t.Fatal("expected an error for a positional argument")
	}
}

func TestDefaultStampIsReal(t *testing.T) {
	// Without the test seam the command prints this binary's own stamp.
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := NewOptions(streams)
	if err := o.Complete(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "kubectl-nodestate ") || !strings.Contains(out.String(), version.Get().GoVersion) {
		t.Errorf("unexpected line %q", out.String())
	}
}
