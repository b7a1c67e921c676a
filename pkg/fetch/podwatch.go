package fetch

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// podWatch is ONE watch on the debug pods of a namespace, shared by every Fetch of a fan-out:
// a watch per pod costs the API server a WATCH request and a watcher per node. It hands each
// pod's changes to the Fetch waiting for that pod, by name, and judges them with startState.
//
// With watchEvents it also holds ONE watch on the namespace's Warning events about pods, and
// hands each to the waiter of the pod it is about, judged by EventError (a failed mount,
// sandbox or admission ends the wait at once). fail ends one pod's wait with an error from any
// other signal.
type podWatch struct {
	pods  corev1client.PodInterface
	image string

	mu      sync.Mutex
	waiters map[string]*podWaiter // pod name -> its Fetch's waiter

	w *resumingWatch
	// events says how the waits learn of the pods' Warning events (see watchEvents).
	events eventSource
	opts   Options // for EventError
}

// eventSource is where a Fetch on the shared pod watch gets its pod's Warning events from.
type eventSource int

const (
	eventsPerPod eventSource = iota // a watch of its own pod's events (the shared one could not start)
	eventsShared                    // the shared events watch, through podWaiter.failed
	eventsNone                      // none: events may not be watched (deploy/rbac.yaml makes it optional)
)

// maxPendingEvents bounds the Warning events kept for a pod whose create has not returned yet.
const maxPendingEvents = 8

// podWaiter is one pod's wait: last is the newest state seen, done is closed once err (nil
// for Running) is final.
type podWaiter struct {
	last *corev1.Pod
	done chan struct{}
	err  error
	// missed: the watch never told, the wait timed out and a read of the pod found it running.
	missed bool

	// created is the create's answer (its UID tells this pod's events from an earlier pod's
	// of the same name); events about the name that came before it are pending.
	created *corev1.Pod
	pending []*corev1.Event
	// failed gets the first Warning event that means the pod will never run (shared events).
	failed chan *Error
}

// newPodWatch starts the shared watch of the managed pods in the namespace of pods, from rv
// ("" for now). It runs until ctx ends.
func newPodWatch(ctx context.Context, pods corev1client.PodInterface, image, rv string) (*podWatch, error) {
	pw := &podWatch{pods: pods, image: image, waiters: map[string]*podWaiter{}}
	open := func(ctx context.Context, rv string) (watch.Interface, error) {
		return pods.Watch(ctx, metav1.ListOptions{LabelSelector: ManagedSelector, ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	handle := func(typ watch.EventType, obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			pw.observe(pod, typ == watch.Deleted)
		}
	}
	w, err := startWatch(ctx, rv, open, handle, pw.resync)
	if err != nil {
		return nil, err
	}
	pw.w = w
	return pw, nil
}

// watchEvents starts the shared watch of the Warning events about pods in the namespace of
// events (the part of EventError's test the API server can apply: events support field
// selectors on involvedObject.kind and type). It watches from "": the server first replays the
// Warning events that exist (dropped: no pod waits yet, or of an earlier pod's UID), then sends
// new ones. The events rule of deploy/rbac.yaml grants watch, not the list a resourceVersion to
// start from would need.
//
// Without it each Fetch watches its own pod's events, as a single Fetch does; when events may
// not be watched at all, the waits just run to their timeout.
func (pw *podWatch) watchEvents(ctx context.Context, events corev1client.EventInterface, opts Options) {
	pw.opts = opts.WithDefaults()
	selector := fields.Set{"involvedObject.kind": "Pod", "type": corev1.EventTypeWarning}.AsSelector().String()
	open := func(ctx context.Context, rv string) (watch.Interface, error) {
		return events.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	handle := func(typ watch.EventType, obj any) {
		if ev, ok := obj.(*corev1.Event); ok && typ != watch.Deleted {
			pw.event(ev)
		}
	}
	_, err := startWatch(ctx, "", open, handle, nil)
	switch {
	case err == nil:
		pw.events = eventsShared
	case apierrors.IsForbidden(err):
		pw.events = eventsNone
	default:
		pw.events = eventsPerPod
	}
}

// add registers the pod name about to be created, before the create, so no event is missed.
func (pw *podWatch) add(name string) *podWaiter {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pwr := &podWaiter{done: make(chan struct{}), failed: make(chan *Error, 1)}
	pw.waiters[name] = pwr
	return pwr
}

// remove forgets a pod once its Fetch no longer waits for it.
func (pw *podWatch) remove(name string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	delete(pw.waiters, name)
}

// fail ends the wait for the pod name with err, unless it already ended. It is the hook for
// per-pod checks beside the pod's status (e.g. its events).
func (pw *podWatch) fail(name string, err error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if w, ok := pw.waiters[name]; ok {
		w.finish(err)
	}
}

// finish sets the outcome once; callers hold pw.mu.
func (w *podWaiter) finish(err error) {
	select {
	case <-w.done:
	default:
		w.err = err
		close(w.done)
	}
}

// observe judges a pod's new state for its waiter.
func (pw *podWatch) observe(pod *corev1.Pod, deleted bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w, ok := pw.waiters[pod.Name]
	if !ok {
		return
	}
	if deleted {
		w.finish(podDeleted())
		return
	}
	w.last = pod
	if done, err := startState(pod, pw.image); done || err != nil {
		w.finish(nilIfNoError(err))
	}
}

// event judges a Warning event for the waiter of the pod it names; until that pod's create has
// answered (its UID), it is kept.
func (pw *podWatch) event(ev *corev1.Event) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w, ok := pw.waiters[ev.InvolvedObject.Name]
	if !ok {
		return
	}
	if w.created == nil {
		if len(w.pending) < maxPendingEvents {
			w.pending = append(w.pending, ev)
		}
		return
	}
	w.judge(ev, pw.opts)
}

// judge sends the failure ev means, if any, unless one was sent; callers hold pw.mu.
func (w *podWaiter) judge(ev *corev1.Event, opts Options) {
	if fe := EventError(ev, w.created, opts); fe != nil {
		select {
		case w.failed <- fe:
		default:
		}
	}
}

// resync re-reads the pods still waited for, one GET each: after an expired watch, events
// may have been lost, and these are few (at most the concurrency).
func (pw *podWatch) resync(ctx context.Context) {
	pw.mu.Lock()
	names := make(map[string]bool, len(pw.waiters))
	for name, w := range pw.waiters {
		names[name] = w.last != nil // created and seen; else perhaps not created yet
	}
	pw.mu.Unlock()
	for name, seen := range names {
		pod, err := pw.pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && seen:
			pw.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}, true)
		case err == nil:
			pw.observe(pod, false)
		}
	}
}

// wait waits for the created pod (registered with add) to run, fail or be deleted, for a
// failure on failed (the pod's Warning events, see EventError), or for timeout. The create
// response is judged first: it may already be final.
func (pw *podWatch) wait(ctx context.Context, w *podWaiter, created *corev1.Pod, timeout time.Duration, failed <-chan *Error) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pw.mu.Lock()
	w.created = created
	for _, ev := range w.pending {
		w.judge(ev, pw.opts)
	}
	w.pending = nil
	if w.last == nil {
		w.last = created
		if done, err := startState(created, pw.image); done || err != nil {
			w.finish(nilIfNoError(err))
		}
	}
	pw.mu.Unlock()
	select {
	case <-w.done:
		return w.err
	case fe := <-failed:
		// Through fail, so a state already final wins over a later event.
		pw.fail(created.Name, fe)
		select {
		case <-w.done:
			return w.err
		default:
			return fe
		}
	case <-pw.w.broken:
		// The shared watch is gone for good: wait on this pod alone.
		return waitRunning(parent, pw.pods, created, pw.image, timeout, failed)
	case <-ctx.Done():
	}
	// Before reporting a timeout, read the pod once: the shared watch may have lost it.
	if parent.Err() == nil {
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
		pod, err := pw.pods.Get(gctx, created.Name, metav1.GetOptions{})
		gcancel()
		if apierrors.IsNotFound(err) {
			return podDeleted()
		}
		if err == nil {
			pw.observe(pod, false)
			select {
			case <-w.done:
				w.missed = w.err == nil
				return w.err
			default:
			}
		}
	}
	pw.mu.Lock()
	last := w.last
	pw.mu.Unlock()
	return waitEnded(parent, last, timeout)
}
