// Package cmdtest runs the plugin's root command as main does, for command tests.
package cmdtest

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd"
)

// Isolate points HOME and KUBECONFIG at an empty temp dir, so no real kubeconfig is read, and
// clears COLUMNS, so that text is wrapped to the default width whatever the caller's terminal.
func Isolate(t *testing.T) {
	t.Helper()
	t.Setenv("COLUMNS", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "no-kubeconfig"))
}

// Run runs `kubectl nodestate ARGS` as main does; it returns stdout, stderr and the exit code.
func Run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	Isolate(t)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := cmd.NewCmdNodestate(streams)
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	code = cmd.Execute(context.Background(), root, streams)
	return out.String(), errOut.String(), code
}
