//go:build e2e

package e2e

// Fault injection for the fault suite (faults_test.go, `make e2e-faults`): the kube-apiserver
// paused (SIGSTOP/SIGCONT by PID) or restarted, and the debug pods' exec wrapped. kwok runs
// exec on the host with the env of the pod's Exec object: the exec mapper puts faultDir/bin
// first on its PATH, so the plugin's collect script runs the injector below as `tar`. It reads
// faultDir/<node>.mode and, with none, runs the real tar.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exec faults, per node (SetExecFault).
const (
	// ExecCut sends the first 1,000 bytes of the tar and ends cleanly: a stream cut mid-tar.
	ExecCut = "cut"
	// ExecCutOnce is ExecCut for the node's next exec only.
	ExecCutOnce = "cut-once"
	// ExecStall sends nothing and does not end (for a minute): a stuck runtime.
	ExecStall = "stall"
	// ExecSlow waits 0.4 s before the tar, so a fan-out has nodes in every phase at once.
	ExecSlow = "slow"
	// ExecHold creates faultDir/<node>.held and waits (up to a minute) for ReleaseExec, then
	// ends with exit 137 and no output, as an exec whose container was killed.
	ExecHold = "hold"
)

const execFaultScript = `#!/bin/sh
# kubectl-nodestate e2e: the exec fault injector (test/e2e/faults.go), run as "tar".
real=%q
f="$NODESTATE_E2E_FAULTS/$NODESTATE_E2E_NODE"
mode=
[ -e "$f.mode" ] && read -r mode < "$f.mode"
case "$mode" in
cut) "$real" "$@" | head -c 1000; exit 0 ;;
cut-once) rm -f "$f.mode"; "$real" "$@" | head -c 1000; exit 0 ;;
stall) sleep 60; exit 0 ;;
slow) sleep 0.4 ;;
hold)
	: > "$f.held"
	i=0
	while [ ! -e "$f.release" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
	exit 137 ;;
esac
exec "$real" "$@"
`

// writeExecFaults installs the injector under cp.dir/faults.
func (cp *controlPlane) writeExecFaults() error {
	real, err := exec.LookPath("tar")
	if err != nil {
		return fmt.Errorf("the exec fault injector needs the host's tar: %w", err)
	}
	cp.faultDir = filepath.Join(cp.dir, "faults")
	if err := os.MkdirAll(filepath.Join(cp.faultDir, "bin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cp.faultDir, "bin", "tar"), []byte(fmt.Sprintf(execFaultScript, real)), 0o755)
}

// execEnv is the env of every debug pod's Exec object: the injector first on PATH.
func (cp *controlPlane) execEnv(node string) []any {
	return []any{
		map[string]any{"name": "PATH", "value": filepath.Join(cp.faultDir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")},
		map[string]any{"name": "NODESTATE_E2E_FAULTS", "value": cp.faultDir},
		map[string]any{"name": "NODESTATE_E2E_NODE", "value": node},
	}
}

func faultFile(node, suffix string) string { return filepath.Join(cp.faultDir, node+"."+suffix) }

// SetExecFault makes the execs in debug pods on node misbehave as mode says ("" to clear);
// cleared, with any hold released, when the test ends.
func SetExecFault(t testing.TB, node, mode string) {
	t.Helper()
	_ = os.Remove(faultFile(node, "release"))
	_ = os.Remove(faultFile(node, "held"))
	if mode == "" {
		_ = os.Remove(faultFile(node, "mode"))
		return
	}
	if err := os.WriteFile(faultFile(node, "mode"), []byte(mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Remove(faultFile(node, "mode"))
		ReleaseExec(t, node)
	})
}

// WaitExecHeld waits until an exec on node is held (ExecHold).
func WaitExecHeld(t testing.TB, node string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(faultFile(node, "held")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exec held on node %s after %s", node, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReleaseExec ends the held execs on node (they exit 137).
func ReleaseExec(t testing.TB, node string) {
	_ = os.WriteFile(faultFile(node, "release"), nil, 0o644)
}

// PauseAPIServer stops the kube-apiserver with SIGSTOP and continues it after d (or when the
// test ends, if it fails first). It returns at once; the returned channel closes on SIGCONT.
func PauseAPIServer(t testing.TB, d time.Duration) <-chan struct{} {
	t.Helper()
	pid := cp.apiserver.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP kube-apiserver (pid %d): %v", pid, err)
	}
	logf2("kube-apiserver (pid %d) stopped for %s", pid, d)
	resumed := make(chan struct{})
	resume := func() {
		select {
		case <-resumed:
		default:
			_ = syscall.Kill(pid, syscall.SIGCONT)
			logf2("kube-apiserver (pid %d) continued", pid)
			close(resumed)
		}
	}
	t.Cleanup(resume)
	time.AfterFunc(d, resume)
	return resumed
}

// RestartAPIServer stops the kube-apiserver (SIGTERM, then SIGKILL after 5 s) and starts it
// again on the same port and etcd, then waits until it is ready.
func RestartAPIServer(t testing.TB) {
	t.Helper()
	old := cp.apiserver
	old.stop(5 * time.Second)
	api, err := cp.start("kube-apiserver", filepath.Join(cp.toolsBin, "kube-apiserver"), cp.apiserverArgs...)
	if err != nil {
		t.Fatal(err)
	}
	cp.apiserver = api
	if err := cp.waitAPIServerReady(api); err != nil {
		t.Fatal(err)
	}
	logf2("kube-apiserver restarted (pid %d)", api.cmd.Process.Pid)
}

// Plugin is a plugin process started by StartPlugin.
type Plugin struct {
	cmd            *exec.Cmd
	stdout, stderr *strings.Builder
	done           chan struct{}
	start          time.Time
	result         Result
}

// StartPlugin starts `kubectl-nodestate args...` with env (nil = Env(t)) and returns at once;
// it is killed when the test ends if still running.
func StartPlugin(t testing.TB, env []string, args ...string) *Plugin {
	t.Helper()
	if env == nil {
		env = Env(t)
	}
	p := &Plugin{cmd: exec.Command(PluginBin(t), args...), stdout: &strings.Builder{}, stderr: &strings.Builder{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.result = Result{Stdout: p.stdout.String(), Stderr: p.stderr.String(), Err: err, Duration: time.Since(p.start), ExitCode: p.cmd.ProcessState.ExitCode()}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	t.Logf("started kubectl-nodestate %s (pid %d)", strings.Join(args, " "), p.cmd.Process.Pid)
	return p
}

// Signal sends sig to the plugin.
func (p *Plugin) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits for the plugin to exit, up to timeout (then fails t).
func (p *Plugin) Wait(t testing.TB, timeout time.Duration) Result {
	t.Helper()
	select {
	case <-p.done:
		t.Logf("kubectl-nodestate exited %d after %s", p.result.ExitCode, p.result.Duration.Round(time.Millisecond))
		return p.result
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("kubectl-nodestate still running after %s; killed. stderr:\n%s", timeout, p.result.Stderr)
		return p.result
	}
}
