//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveBrokenPipe: `kubectl nodestate verify --all-nodes | head -1` closes stdout in the middle
// of a fan-out. That must stop the fan-out and delete every debug pod, not kill the plugin with
// SIGPIPE and leave pods behind.
func TestLiveBrokenPipe(t *testing.T) {
	files := repoDirFiles(t, "examples/kubelet-root")
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("pipe-%02d", i)
	}
	CreateNodes(t, names, func(string) NodeOptions {
		return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: KubeletDir(t, files)}
	})
	ns := NewNamespace(t, nil)

	cmd := exec.Command(KubectlBin(), "nodestate", "verify", "--all-nodes", "-l", TestSelector(t), "-n", ns, "--concurrency", "2")
	cmd.Env = Env(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("no first line: %v", err)
	}
	stdout.Close() // the reader goes away, as head does
	closed := time.Now()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("plugin exited %v after the pipe closed: %v", time.Since(closed).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("plugin still running 10s after its stdout closed")
	}
	if n := CountManagedPods(t, ""); n != 0 {
		t.Fatalf("%d debug pods left after the pipe closed", n)
	}
}
