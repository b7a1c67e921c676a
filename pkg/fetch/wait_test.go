package fetch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

func pendingPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nodestate-n1-xxxxx", Namespace: "default", ResourceVersion: "100"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}
	}
}

func phase(ph corev1.PodPhase, reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason, p.Status.Message = ph, reason, msg }
}

func rv(v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.ResourceVersion = v } }

func TestWaitRunning(t *testing.T) {
	tests := []struct {
		name   string
		events []watch.Event
		reason Reason // "" for success
		short  string
	}{
		{
			name: "pending, creating, running",
			events: []watch.Event{
				{Type: watch.Modified, Object: pendingPod(rv("101"))},
				{Type: watch.Modified, Object: pendingPod(rv("102"), waiting("ContainerCreating", ""))},
				{Type: watch.Modified, Object: pendingPod(rv("103"), phase(corev1.PodRunning, "", ""))},
			},
		},
		{
			name: "another pod's events are ignored",
			events: []watch.Event{
				{Type: watch.Modified, Object: pendingPod(func(p *corev1.Pod) { p.Name = "other"; p.Status.Phase = corev1.PodFailed })},
				{Type: watch.Deleted, Object: pendingPod(func(p *corev1.Pod) { p.Name = "other" })},
				{Type: watch.Modified, Object: pendingPod(phase(corev1.PodRunning, "", ""))},
			},
		},
		{
			name:   "image pull back-off",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(waiting("ImagePullBackOff", "Back-off pulling image"))}},
			reason: ReasonImagePull, short: "ImagePullBackOff",
		},
		{
			name:   "err image pull",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(waiting("ErrImagePull", "dial tcp: i/o timeout"))}},
			reason: ReasonImagePull, short: "ErrImagePull",
		},
		{
			name:   "invalid image name",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(waiting("InvalidImageName", ""))}},
			reason: ReasonImagePull, short: "InvalidImageName",
		},
		{
			name: "rejected by kubelet admission",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(
				phase(corev1.PodFailed, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"))}},
			reason: ReasonPodFailed, short: "OutOfpods",
		},
		{
			name: "unexpected admission error",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(
				phase(corev1.PodFailed, "UnexpectedAdmissionError", "Allocate failed"))}},
			reason: ReasonPodFailed, short: "UnexpectedAdmissionError",
		},
		{
			name: "container ended",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(phase(corev1.PodFailed, "", ""), func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
			})}},
			reason: ReasonPodFailed, short: "Failed",
		},
		{
			name:   "container config error",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(waiting("CreateContainerConfigError", "bad"))}},
			reason: ReasonPodFailed, short: "CreateContainerConfigError",
		},
		{
			name:   "deleted",
			events: []watch.Event{{Type: watch.Deleted, Object: pendingPod()}},
			reason: ReasonPodDeleted,
		},
		{
			name: "being deleted",
			events: []watch.Event{{Type: watch.Modified, Object: pendingPod(func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			})}},
			reason: ReasonPodDeleted,
		},
		{
			name: "watch error event",
			events: []watch.Event{{Type: watch.Error, Object: &apierrors.NewForbidden(podsGR, "",
				errors.New(`User "u" cannot watch resource "pods" in API group "" in the namespace "default"`)).ErrStatus}},
			reason: ReasonForbidden,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(false)
			w := watch.NewFakeWithChanSize(len(tt.events), false)
			var opts []string
			c.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
				r := a.(clienttesting.WatchActionImpl).GetWatchRestrictions()
				opts = append(opts, r.ResourceVersion, r.Fields.String())
				return true, w, nil
			})
			for _, ev := range tt.events {
				w.Action(ev.Type, ev.Object)
			}
			err := waitRunning(context.Background(), c.CoreV1().Pods("default"), pendingPod(), "busybox:1.37", 5*time.Second, nil)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("waitRunning: %v", err)
				}
			} else {
				fe := wantReason(t, ExplainError(err, "default"), tt.reason)
				if tt.short != "" && fe.Short != tt.short {
					t.Errorf("short %q, want %q", fe.Short, tt.short)
				}
			}
			// The watch starts at the create response's version, for this pod only.
			if len(opts) < 2 || opts[0] != "100" || opts[1] != "metadata.name=nodestate-n1-xxxxx" {
				t.Errorf("watch restrictions %q, want resourceVersion 100 and the pod's name", opts)
			}
		})
	}
}

func TestWaitRunningImagePullHint(t *testing.T) {
	err := nilIfNoError(func() *Error {
		_, e := startState(pendingPod(waiting("ErrImagePull", "not found")), "registry.local/bb:1")
		return e
	}())
	for _, s := range []string{`"registry.local/bb:1"`, "--image", "--image-pull-secret"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %s", err, s)
		}
	}
}

// A pod that is already running in the create response needs no watch.
func TestWaitRunningAlreadyRunning(t *testing.T) {
	c := newClient(false)
	err := waitRunning(context.Background(), c.CoreV1().Pods("default"),
		pendingPod(phase(corev1.PodRunning, "", "")), "img", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(c, "pods"); len(got) != 0 {
		t.Errorf("API calls %v, want none", got)
	}
}

func TestWaitRunningTimeout(t *testing.T) {
	c := newClient(false)
	w := watch.NewFake()
	c.PrependWatchReactor("pods", clienttesting.DefaultWatchReactor(w, nil))
	err := waitRunning(context.Background(), c.CoreV1().Pods("default"),
		pendingPod(waiting("ContainerCreating", "")), "img", 50*time.Millisecond, nil)
	wantReason(t, err, ReasonTimeout)
	for _, s := range []string{"default/nodestate-n1-xxxxx", "Pending/ContainerCreating", "--kubelet-root-dir"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %q", err, s)
		}
	}
}

func TestWaitRunningCanceled(t *testing.T) {
	c := newClient(false)
	c.PrependWatchReactor("pods", clienttesting.DefaultWatchReactor(watch.NewFake(), nil))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	err := waitRunning(ctx, c.CoreV1().Pods("default"), pendingPod(), "img", time.Minute, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// When the server ends the watch (or the version expires), waitRunning reads the pod again and
// watches on from its new version.
func TestWaitRunningResumes(t *testing.T) {
	for _, end := range []string{"closed", "expired"} {
		t.Run(end, func(t *testing.T) {
			defer func(d time.Duration) { watchRetryDelay = d }(watchRetryDelay)
			watchRetryDelay = time.Millisecond

			c := newClient(false, pendingPod(rv("200")))
			first := watch.NewFakeWithChanSize(2, false)
			second := watch.NewFakeWithChanSize(1, false)
			var rvs []string
			c.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
				rvs = append(rvs, a.(clienttesting.WatchActionImpl).GetWatchRestrictions().ResourceVersion)
				if len(rvs) == 1 {
					return true, first, nil
				}
				return true, second, nil
			})
			first.Modify(pendingPod(rv("150")))
			if end == "expired" {
				first.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
			} else {
				first.Stop()
			}
			second.Modify(pendingPod(rv("201"), phase(corev1.PodRunning, "", "")))

			if err := waitRunning(context.Background(), c.CoreV1().Pods("default"), pendingPod(), "img", 5*time.Second, nil); err != nil {
				t.Fatal(err)
			}
			if len(rvs) != 2 || rvs[0] != "100" {
				t.Errorf("watched from %q, want 100 then the version of a fresh get", rvs)
			}
			if got := actions(c, "pods"); !slices.Contains(got, "get") {
				t.Errorf("actions %v: no get before re-watching", got)
			}
		})
	}
}

func TestWaitRunningDeletedWhileRewatching(t *testing.T) {
	defer func(d time.Duration) { watchRetryDelay = d }(watchRetryDelay)
	watchRetryDelay = time.Millisecond
	c := newClient(false) // the pod is not in the cluster
	w := watch.NewFake()
	c.PrependWatchReactor("pods", clienttesting.DefaultWatchReactor(w, nil))
	w.Stop()
	err := waitRunning(context.Background(), c.CoreV1().Pods("default"), pendingPod(), "img", 5*time.Second, nil)
	wantReason(t, err, ReasonPodDeleted)
}
