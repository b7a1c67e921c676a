//go:build e2e

package e2e

// The fault suite (`make e2e-faults`, docs/reliability.md): `verify --all-nodes` over more nodes
// than its concurrency, while the control plane, the exec stream, the nodes, other clients or
// the user misbehave. Each test is one row of docs/reliability.md's table. The suite's last
// test checks through the API that no debug pod is left anywhere.

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// faultSuite skips the test unless the fault suite runs: it stops and restarts the shared API
// server, which the other e2e tests must not see.
func faultSuite(t *testing.T) {
	t.Helper()
	if os.Getenv("NODESTATE_E2E_FAULTS") == "" {
		t.Skip("fault suite: run with make e2e-faults (NODESTATE_E2E_FAULTS=1)")
	}
}

// faultNodes creates n Ready nodes prefix-00, prefix-01, ... holding the example kubelet dir,
// their execs slowed (ExecSlow) so that a fan-out has nodes in every phase at once.
func faultNodes(t *testing.T, prefix string, n int) []string {
	t.Helper()
	dir := KubeletDir(t, repoDirFiles(t, "examples/kubelet-root"))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{KubeletDir: dir} })
	for _, name := range names {
		SetExecFault(t, name, ExecSlow)
	}
	return names
}

// faultNode creates one node with the example kubelet dir (pods never run when its name
// starts with PrefixPodsPending) and the exec fault mode.
func faultNode(t *testing.T, name, mode string) string {
	t.Helper()
	o := NodeOptions{KubeletDir: KubeletDir(t, repoDirFiles(t, "examples/kubelet-root"))}
	if strings.HasPrefix(name, PrefixPodsPending) {
		o.Pods = PodsPending
	}
	CreateNodeWith(t, name, o)
	if mode != "" {
		SetExecFault(t, name, mode)
	}
	return name
}

// heldNodes creates n nodes prefix-00, ... whose execs hold (ExecHold).
func heldNodes(t *testing.T, prefix string, n int) []string {
	t.Helper()
	held := make([]string, n)
	for i := range held {
		held[i] = faultNode(t, fmt.Sprintf("%s-%02d", prefix, i), ExecHold)
	}
	return held
}

// waitHeld waits until an exec is held on each of nodes.
func waitHeld(t *testing.T, nodes ...string) {
	t.Helper()
	for _, node := range nodes {
		WaitExecHeld(t, node, 20*time.Second)
	}
}

// verifyAll starts verify --all-nodes over the test's nodes.
func verifyAll(t *testing.T, concurrency int, extra ...string) *Plugin {
	t.Helper()
	args := append([]string{"verify", "--all-nodes", "-l", TestSelector(t), "--concurrency", fmt.Sprint(concurrency)}, extra...)
	return StartPlugin(t, nil, args...)
}

// outcome checks what the user saw: every node in ok has rows, all valid, and no error line;
// every node in failed has an unreadable row and exactly one stderr line, "error: node N: ...",
// that contains the text given. Exit code as given.
func outcome(t *testing.T, r Result, exit int, ok []string, failed map[string]string) {
	t.Helper()
	if r.ExitCode != exit {
		t.Errorf("exit %d, want %d\n%s", r.ExitCode, exit, r)
	}
	verdicts := map[string][]string{}
	for _, row := range tableRows(r.Stdout)[1:] {
		verdicts[row[0]] = append(verdicts[row[0]], row[3])
	}
	errLines := map[string][]string{}
	for _, l := range nonEmptyLines(r.Stderr) {
		if m := regexp.MustCompile(`^error: node (\S+): `).FindStringSubmatch(l); m != nil {
			errLines[m[1]] = append(errLines[m[1]], l)
		}
	}
	for _, node := range ok {
		v := verdicts[node]
		if len(v) == 0 || len(errLines[node]) > 0 {
			t.Errorf("node %s: rows %v, errors %q; want it read", node, v, errLines[node])
			continue
		}
		for _, verdict := range v {
			if verdict != "valid" {
				t.Errorf("node %s: verdicts %v, want all valid", node, v)
				break
			}
		}
	}
	for node, want := range failed {
		if v := verdicts[node]; len(v) != 1 || v[0] != "unreadable" {
			t.Errorf("node %s: verdicts %v, want one unreadable row", node, v)
		}
		if l := errLines[node]; len(l) != 1 || !strings.Contains(l[0], want) {
			t.Errorf("node %s: error lines %q, want one containing %q", node, l, want)
		}
	}
	if len(verdicts) != len(ok)+len(failed) {
		t.Errorf("%d nodes in the output, want %d:\n%s", len(verdicts), len(ok)+len(failed), r.Stdout)
	}
}

// noPodsLeft waits (up to 10 s: deletions in flight) until no debug pod exists anywhere,
// terminating ones included.
func noPodsLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pods := ManagedPods(t, "")
		if len(pods) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range pods {
				names = append(names, p.Namespace+"/"+p.Name+" on "+p.Spec.NodeName)
			}
			t.Fatalf("%d debug pods left: %s", len(pods), strings.Join(names, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPods waits until at least n debug pods exist: the fan-out is under way.
func waitPods(t *testing.T, p *Plugin, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for CountManagedPods(t, "") < n {
		select {
		case <-p.done:
			t.Fatalf("the plugin ended before %d debug pods existed: %s", n, p.result)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d debug pods after 20s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The API server stops answering for 20 s in the middle of a 60-node fan-out at concurrency 10:
// every node is read, the pause costs time only.
func TestFaultAPIServerPause(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fp", 60)
	p := verifyAll(t, 10)
	waitPods(t, p, 10)
	resumed := PauseAPIServer(t, 20*time.Second)
	r := p.Wait(t, 3*time.Minute)
	<-resumed
	outcome(t, r, 0, nodes, nil)
	if r.Duration < 20*time.Second {
		t.Errorf("done in %s, before the API server came back", r.Duration)
	}
	noPodsLeft(t)
}

// The API server is restarted (connections refused, watches cut) in the middle of the fan-out:
// every node is read.
func TestFaultAPIServerRestart(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fr", 60)
	p := verifyAll(t, 10)
	waitPods(t, p, 10)
	RestartAPIServer(t)
	r := p.Wait(t, 3*time.Minute)
	outcome(t, r, 0, nodes, nil)
	noPodsLeft(t)
}

// The exec stream is cut in the middle of the tar: once (read again), or every time (the node
// fails as a truncated archive, never judged from half a file).
func TestFaultExecCut(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fc", 20)
	once := faultNode(t, "fc-cut-once", ExecCutOnce)
	always := faultNode(t, "fc-cut-always", ExecCut)
	r := verifyAll(t, 5).Wait(t, 2*time.Minute)
	outcome(t, r, 2, append(nodes, once), map[string]string{always: "bad archive from node: truncated"})
	noPodsLeft(t)
}

// The exec stalls (a stuck runtime): the exec timeout ends it, the node fails with that reason,
// and the pod goes.
func TestFaultExecStall(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fs", 20)
	stalled := faultNode(t, "fs-stalled", ExecStall)
	r := verifyAll(t, 5, "--pod-running-timeout", "5s").Wait(t, 2*time.Minute)
	outcome(t, r, 2, nodes, map[string]string{stalled: "took longer than the exec timeout (5s)"})
	if r.Duration > 30*time.Second {
		t.Errorf("took %s: the stalled exec held the run past its timeout", r.Duration)
	}
	noPodsLeft(t)
}

// The node is deleted, or goes NotReady, while its pod waits to run or its exec runs: the node
// fails with that reason, the others are read.
func TestFaultNodeGone(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fg", 10)
	waitDeleted := faultNode(t, PrefixPodsPending+"fg-wait-deleted", "")
	waitNotReady := faultNode(t, PrefixPodsPending+"fg-wait-notready", "")
	execDeleted := faultNode(t, "fg-exec-deleted", ExecHold)
	execNotReady := faultNode(t, "fg-exec-notready", ExecHold)
	p := verifyAll(t, 20, "--pod-running-timeout", "8s")
	waitPods(t, p, 14)
	waitHeld(t, execDeleted, execNotReady)
	ctx := ctxFor(t, 30*time.Second)
	for _, node := range []string{waitDeleted, execDeleted} {
		if err := Client().CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	SetNodeNotReady(t, waitNotReady)
	SetNodeNotReady(t, execNotReady)
	ReleaseExec(t, execDeleted)
	ReleaseExec(t, execNotReady)
	r := p.Wait(t, 2*time.Minute)
	outcome(t, r, 2, nodes, map[string]string{
		waitDeleted:  "the node was deleted while it was being read",
		execDeleted:  "the node was deleted while it was being read",
		waitNotReady: "node is not Ready",
		execNotReady: "node is not Ready",
	})
	noPodsLeft(t)
}

// Someone else deletes or evicts the debug pod while its exec runs: the read goes on through a
// new pod, once, and says so.
func TestFaultPodDeletedDuringExec(t *testing.T) {
	faultSuite(t)
	nodes := faultNodes(t, "fd", 10)
	deleted := faultNode(t, "fd-deleted", ExecHold)
	evicted := faultNode(t, "fd-evicted", ExecHold)
	p := verifyAll(t, 12)
	ctx := ctxFor(t, 30*time.Second)
	for _, node := range []string{deleted, evicted} {
		waitHeld(t, node)
		pod := debugPodOn(t, node)
		var err error
		if node == deleted {
			err = Client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
		} else {
			err = Client().CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}})
		}
		if err != nil {
			t.Fatalf("%s: %v", node, err)
		}
		SetExecFault(t, node, "") // the replacement's exec runs normally
		ReleaseExec(t, node)      // the killed pod's exec ends (exit 137)
	}
	r := p.Wait(t, 2*time.Minute)
	outcome(t, r, 0, append(nodes, deleted, evicted), nil)
	for _, node := range []string{deleted, evicted} {
		if !strings.Contains(r.Stderr, "warning: node "+node+": debug pod ") || !strings.Contains(r.Stderr, "deleted by someone else") {
			t.Errorf("no warning about %s's replaced pod:\n%s", node, r.Stderr)
		}
	}
	noPodsLeft(t)
}

// debugPodOn returns the debug pod on node.
func debugPodOn(t *testing.T, node string) corev1.Pod {
	t.Helper()
	for _, p := range ManagedPods(t, "") {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			return p
		}
	}
	t.Fatalf("no debug pod on %s", node)
	return corev1.Pod{}
}

// Ctrl-C in each phase: the plugin exits 2 saying every pod was deleted, and none is left.
func TestFaultInterrupt(t *testing.T) {
	faultSuite(t)
	wantInterrupted := func(t *testing.T, r Result) {
		t.Helper()
		if r.ExitCode != 2 || !strings.Contains(r.Stderr, "interrupted; every debug pod created was deleted") {
			t.Errorf("want exit 2 and the interruption named: %s", r)
		}
		noPodsLeft(t)
	}
	interrupted := func(t *testing.T, p *Plugin, within time.Duration) {
		t.Helper()
		p.Signal(t, syscall.SIGINT)
		wantInterrupted(t, p.Wait(t, within))
	}
	t.Run("wait: pods pending", func(t *testing.T) {
		for i := range 20 {
			faultNode(t, fmt.Sprintf("%sfi-wait-%02d", PrefixPodsPending, i), "")
		}
		p := verifyAll(t, 10)
		waitPods(t, p, 10)
		interrupted(t, p, 15*time.Second)
	})
	t.Run("exec: execs running", func(t *testing.T) {
		held := heldNodes(t, "fi-exec", 12)
		p := verifyAll(t, 6)
		waitHeld(t, held[0])
		interrupted(t, p, 15*time.Second)
	})
	t.Run("create and delete: API server paused", func(t *testing.T) {
		faultNodes(t, "fi-api", 40)
		p := verifyAll(t, 10)
		waitPods(t, p, 10)
		// Creates and deletes in flight now wait for the server; Ctrl-C while they do.
		resumed := PauseAPIServer(t, 3*time.Second)
		time.Sleep(500 * time.Millisecond)
		p.Signal(t, syscall.SIGINT)
		<-resumed
		wantInterrupted(t, p.Wait(t, 45*time.Second))
	})
}

// SIGKILL during the execs: the pods stay (nothing can delete them), each with its
// activeDeadlineSeconds, until `kubectl nodestate cleanup` removes them.
func TestFaultKill(t *testing.T) {
	faultSuite(t)
	held := heldNodes(t, "fk", 6)
	p := verifyAll(t, 6)
	waitHeld(t, held...)
	p.Signal(t, syscall.SIGKILL)
	p.Wait(t, 10*time.Second)
	left := ManagedPods(t, "")
	if len(left) != len(held) {
		t.Errorf("%d debug pods after SIGKILL, want %d", len(left), len(held))
	}
	for _, pod := range left {
		if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d <= 0 {
			t.Errorf("pod %s has no activeDeadlineSeconds", pod.Name)
		}
	}
	r := nodestate(t, nil, "cleanup")
	if r.ExitCode != 0 || strings.Count(r.Stdout, "nodestate-fk-") != len(held) {
		t.Errorf("cleanup: %s", r)
	}
	noPodsLeft(t)
}

// The API server stops answering during the execs for longer than the delete timeout: the
// exec timeout fails the nodes, the deletions give up, and the one line names the exact
// command that removes the pods, which works once the server is back.
func TestFaultUndeletable(t *testing.T) {
	faultSuite(t)
	held := heldNodes(t, "fu", 3)
	p := verifyAll(t, 3, "--pod-running-timeout", "4s")
	waitHeld(t, held...)
	resumed := PauseAPIServer(t, 50*time.Second)
	r := p.Wait(t, 2*time.Minute)
	failed := map[string]string{}
	for _, node := range held {
		failed[node] = "could not be deleted"
	}
	outcome(t, r, 2, nil, failed)
	cmd := regexp.MustCompile("run `(kubectl nodestate cleanup -n [a-z0-9-]+)`").FindStringSubmatch(r.Stderr)
	if cmd == nil || cmd[1] != fetch.CleanupCommand(pluginNamespace) {
		t.Fatalf("no cleanup command on stderr:\n%s", r.Stderr)
	}
	<-resumed
	if n := len(ManagedPods(t, "")); n != len(held) {
		t.Errorf("%d debug pods once the server is back, want the %d it could not delete", n, len(held))
	}
	if r := nodestate(t, nil, strings.Fields(cmd[1])[2:]...); r.ExitCode != 0 {
		t.Errorf("%s: %s", cmd[1], r)
	}
	noPodsLeft(t)
}

// Last: after every fault above, not one debug pod anywhere, asked of the API server.
func TestFaultZZNoPodsLeft(t *testing.T) {
	faultSuite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: fetch.ManagedSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d debug pods left after the fault suite", len(list.Items))
	}
	t.Logf("debug pods left after the fault suite: %d", len(list.Items))
}
