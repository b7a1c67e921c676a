package fetch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// Listed nodes are not read again, and every pod is waited for on one watch: per node only
// create, exec, the pod index list and delete remain.
func TestFetchNodesListedNodesOneWatch(t *testing.T) {
	const nodes = 30
	objs, _ := readyNodes(nodes)
	c := newClient(false, objs...)
	// Pods start a little after their create returns, so every wait goes through the watch.
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		runsAfterCreate(c, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
	list, err := ListNodes(context.Background(), c, "", NodeInfoOf)
	if err != nil {
		t.Fatal(err)
	}
	c.ClearActions()

	f := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"}))
	ok := 0
	for node, err := range fanout(context.Background(), f, list, 8) {
		if err != nil {
			t.Errorf("%s: %v", node, err)
			continue
		}
		ok++
	}
	if ok != nodes {
		t.Fatalf("%d nodes read, want %d", ok, nodes)
	}
	if got := actions(c, "nodes"); len(got) != 0 {
		t.Errorf("node requests %v, want none (the nodes were listed)", got)
	}
	count := map[string]int{}
	for _, v := range actions(c, "pods") {
		count[v]++
	}
	want := map[string]int{"watch": 1, "create": nodes, "list": nodes, "delete": nodes}
	for v, n := range want {
		if count[v] != n {
			t.Errorf("%d pod %s requests, want %d (all: %v)", count[v], v, n, count)
		}
	}
	if len(count) != len(want) {
		t.Errorf("pod requests %v, want only %v", count, want)
	}
	if got := actions(c, "events"); len(got) != 1 || got[0] != "watch" {
		t.Errorf("event requests %v, want one watch", got)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// The shared watch judges each pod as the per-pod watch does, and fail, or a failure from the
// pod's events (realnode's EventError, sent on the wait's failed channel), ends one wait early.
func TestPodWatchOutcomes(t *testing.T) {
	c := newClient(false)
	pods := c.CoreV1().Pods("ns")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pw, err := newPodWatch(ctx, pods, "busybox", "")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) (*podWaiter, *corev1.Pod) {
		w := pw.add(name)
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w, p
	}
	type result struct {
		name string
		err  error
	}
	done := make(chan result, 5)
	failed := map[string]chan *Error{}
	for _, name := range []string{"runs", "fails", "deleted", "failed", "events"} {
		w, p := mk(name)
		ch := make(chan *Error)
		failed[name] = ch
		go func() { done <- result{name, pw.wait(ctx, w, p, 5*time.Second, ch)} }()
	}
	time.Sleep(20 * time.Millisecond)
	update := func(name string, mutate func(*corev1.Pod)) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutate(p)
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("runs", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
	update("fails", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}
	})
	if err := pods.Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pw.fail("failed", &Error{Reason: ReasonPodFailed, Short: "OutOfpods", Message: "rejected"})
	failed["events"] <- &Error{Reason: ReasonRootDir, Short: "FailedMount", Message: "mount failed"}

	want := map[string]Reason{"runs": "", "fails": ReasonImagePull, "deleted": ReasonPodDeleted, "failed": ReasonPodFailed, "events": ReasonRootDir}
	for range want {
		select {
		case r := <-done:
			if got := ReasonOf(r.err); got != want[r.name] || (want[r.name] == "") != (r.err == nil) {
				t.Errorf("%s: %v (reason %q), want reason %q", r.name, r.err, got, want[r.name])
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a wait did not end")
		}
	}
}
