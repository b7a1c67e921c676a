package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// sharedEventsCluster is a fake cluster of nodes whose debug pods run a little after their
// create returns, except on the nodes in warn, whose pods stay Pending while the kubelet records
// warn's Warning event about them (FailedMount, say). It counts the events watches and keeps
// their field selectors and resource versions.
type sharedEventsCluster struct {
	c      *fake.Clientset
	events *watch.RaceFreeFakeWatcher

	mu        sync.Mutex
	selectors []string
	rvs       []string
}

func newSharedEventsCluster(t *testing.T, nodes int, warn map[string]string, eventsErr error) ([]NodeInfo, *sharedEventsCluster) {
	t.Helper()
	objs, _ := readyNodes(nodes)
	c := newClient(false, objs...)
	sc := &sharedEventsCluster{c: c, events: watch.NewRaceFreeFake()}
	c.PrependWatchReactor("events", func(a clienttesting.Action) (bool, watch.Interface, error) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		r := a.(clienttesting.WatchAction).GetWatchRestrictions()
		sc.selectors = append(sc.selectors, r.Fields.String())
		sc.rvs = append(sc.rvs, r.ResourceVersion)
		if eventsErr != nil {
			return true, nil, eventsErr
		}
		if len(sc.selectors) == 1 {
			return true, sc.events, nil
		}
		return true, watch.NewFake(), nil // per-pod watches, in the fallback
	})
	var uids atomic.Int32
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		pod.UID = types.UID(fmt.Sprintf("uid-%d", uids.Add(1)))
		if reason, ok := warn[pod.Spec.NodeName]; ok {
			// Recorded at once: it may reach the shared watch before the create returns.
			sc.events.Add(kubeletEvent(pod, corev1.EventTypeWarning, reason,
				`MountVolume.SetUp failed for volume "kubelet" : hostPath type check failed: /var/lib/kubelet is not a directory`))
			return false, nil, nil
		}
		runsAfterCreate(c, pod)
		return false, nil, nil
	})
	list, err := ListNodes(context.Background(), c, "", NodeInfoOf)
	if err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	return list, sc
}

func (sc *sharedEventsCluster) watches() ([]string, []string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]string(nil), sc.selectors...), append([]string(nil), sc.rvs...)
}

// fetchAll fetches nodes on one Fanout and returns each node's error (nil: read).
func fetchAll(t *testing.T, f *Fetcher, nodes []NodeInfo) map[string]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := fanout(ctx, f, nodes, 8)
	if len(got) != len(nodes) {
		t.Fatalf("%d results, want %d", len(got), len(nodes))
	}
	return got
}

// One events watch for the whole fan-out, selected on what the API server can select (Warning
// events about pods) and not on any one pod: a node whose kubelet records a FailedMount fails
// at once with the flag to fix (the pod-running timeout is an hour), the others are read.
func TestFetchNodesOneEventsWatch(t *testing.T) {
	const nodes = 24
	warn := map[string]string{"n03": "FailedMount", "n17": "FailedMount"}
	list, sc := newSharedEventsCluster(t, nodes, warn, nil)
	f := newFetcher(sc.c, tarExec(nodeFS{"cpu_manager_state": "x"}))
	f.Options.PodRunningTimeout = time.Hour
	got := fetchAll(t, f, list)
	for node, err := range got {
		if _, bad := warn[node]; bad {
			fe := wantReason(t, err, ReasonRootDir)
			if !strings.Contains(fe.Error(), "--kubelet-root-dir") {
				t.Errorf("%s: %v", node, fe)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", node, err)
		}
	}
	selectors, rvs := sc.watches()
	if len(selectors) != 1 {
		t.Fatalf("%d events watches, want 1: %q", len(selectors), selectors)
	}
	if selectors[0] != "involvedObject.kind=Pod,type=Warning" || rvs[0] != "" {
		t.Errorf("events watched with selector %q from %q, want involvedObject.kind=Pod,type=Warning from \"\"", selectors[0], rvs[0])
	}
	if left := debugPods(t, sc.c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// Events may not be watched (deploy/rbac.yaml makes it optional): no events watch per pod
// either, every node is still read. Any other failure to start the shared watch falls back to
// a watch per pod.
func TestFetchNodesEventsWatchRefused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		err    error
		perPod bool
	}{
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no watch")), false},
		{"other error", apierrors.NewServiceUnavailable("try later"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// n02's pod never runs: its wait, and so its own events watch, lasts the timeout.
			list, sc := newSharedEventsCluster(t, 6, map[string]string{"n02": "FailedMount"}, tt.err)
			f := newFetcher(sc.c, tarExec(nodeFS{"cpu_manager_state": "x"}))
			f.Options.PodRunningTimeout = 2 * time.Second
			for node, err := range fetchAll(t, f, list) {
				if node == "n02" {
					wantReason(t, err, ReasonTimeout)
				} else if err != nil {
					t.Errorf("%s: %v", node, err)
				}
			}
			// The shared one, then (a pod's own watch may be cancelled before it starts, when
			// its pod runs first) at most one per pod.
			selectors, _ := sc.watches()
			perPod := selectors[1:]
			if tt.perPod != (len(perPod) > 0) || len(perPod) > 6 {
				t.Errorf("events watches %q: want the shared one, then per pod: %v", selectors, tt.perPod)
			}
			for _, sel := range perPod {
				if !strings.Contains(sel, "involvedObject.uid=") {
					t.Errorf("events watch %q is not of one pod", sel)
				}
			}
		})
	}
}

// An event that reaches the shared watch before its pod's create has answered is kept until
// the wait knows the pod's UID: it then fails the wait if it is about this pod, and not if it
// is about an earlier pod of the same name.
func TestPodWatchPendingEvents(t *testing.T) {
	c := newClient(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pw, err := newPodWatch(ctx, c.CoreV1().Pods("kube-system"), "busybox", "")
	if err != nil {
		t.Fatal(err)
	}
	pw.watchEvents(ctx, c.CoreV1().Events("kube-system"), Options{Namespace: "kube-system"})
	if pw.events != eventsShared {
		t.Fatalf("events %d, want shared", pw.events)
	}
	for _, tt := range []struct {
		name     string
		eventUID types.UID
		want     Reason
	}{
		{"this pod", "uid-new", ReasonSandbox},
		{"an earlier pod of the name", "uid-old", ReasonTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "nodestate-n1-" + string(tt.eventUID)
			w := pw.add(name)
			defer pw.remove(name)
			pw.event(kubeletEvent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: tt.eventUID}},
				corev1.EventTypeWarning, "FailedCreatePodSandBox", "no runtime"))
			created, err := c.CoreV1().Pods("kube-system").Create(ctx,
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: "uid-new"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = pw.wait(ctx, w, created, 200*time.Millisecond, w.failed)
			wantReason(t, err, tt.want)
		})
	}
}

// The shared watches resume where the server ended them, and after a 410 Gone watch from ""
// (the server replays what exists) once expired has run.
func TestResumingWatch(t *testing.T) {
	defer func(d time.Duration) { watchRetryDelay = d }(watchRetryDelay)
	watchRetryDelay = time.Millisecond
	ws := []*watch.FakeWatcher{watch.NewFakeWithChanSize(2, false), watch.NewFakeWithChanSize(2, false), watch.NewFakeWithChanSize(2, false)}
	var mu sync.Mutex
	var rvs []string
	open := func(_ context.Context, rv string) (watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		rvs = append(rvs, rv)
		if len(rvs) > len(ws) {
			return nil, errors.New("no more")
		}
		return ws[len(rvs)-1], nil
	}
	seen := make(chan string, 10)
	handle := func(typ watch.EventType, obj any) { seen <- string(typ) + " " + obj.(*corev1.Pod).Name }
	var expired atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	ws[0].Add(pod("a", "10"))
	ws[0].Stop() // the server's timeout
	ws[1].Modify(pod("a", "12"))
	ws[1].Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	ws[2].Delete(pod("a", "20"))
	rw, err := startWatch(ctx, "5", open, handle, func(context.Context) { expired.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ADDED a", "MODIFIED a", "DELETED a"} {
		select {
		case got := <-seen:
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q", want)
		}
	}
	ws[2].Stop()
	select {
	case <-rw.broken:
	case <-time.After(5 * time.Second):
		t.Fatal("not broken after a failed re-watch")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"5", "10", "", "20"}; fmt.Sprint(rvs) != fmt.Sprint(want) {
		t.Errorf("watched from %q, want %q", rvs, want)
	}
	if expired.Load() != 1 {
		t.Errorf("expired ran %d times, want 1", expired.Load())
	}
}
