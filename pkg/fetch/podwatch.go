package fetch

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// podWatch is ONE watch on the debug pods of a namespace, shared by every Fetch of a fan-out:
// a watch per pod costs the API server a WATCH request and a watcher per node. It hands each
// pod's changes to the Fetch waiting for that pod, by name, and judges them with startState.
//
// It is also where other per-pod signals can end a wait early: fail ends one pod's wait with
// an error (e.g. a check fed by the pod's Warning events).
type podWatch struct {
	pods  corev1client.PodInterface
	image string

	mu      sync.Mutex
	waiters map[string]*podWaiter // pod name -> its Fetch's waiter
	broken  chan struct{}         // closed when the watch cannot be restarted

	rv string // resume point, owned by run
}

// podWaiter is one pod's wait: last is the newest state seen, done is closed once err (nil
// for Running) is final.
type podWaiter struct {
	last *corev1.Pod
	done chan struct{}
	err  error
	// missed: the watch never told, the wait timed out and a read of the pod found it running.
	missed bool
}

// newPodWatch starts the shared watch of the managed pods in the namespace of pods, from rv
// ("" for now). It runs until ctx ends.
func newPodWatch(ctx context.Context, pods corev1client.PodInterface, image, rv string) (*podWatch, error) {
	pw := &podWatch{pods: pods, image: image, waiters: map[string]*podWaiter{}, rv: rv, broken: make(chan struct{})}
	w, err := pw.watch(ctx)
	if err != nil {
		return nil, err
	}
	go pw.run(ctx, w)
	return pw, nil
}

func (pw *podWatch) watch(ctx context.Context) (watch.Interface, error) {
	return pw.pods.Watch(ctx, metav1.ListOptions{
		LabelSelector:       ManagedSelector,
		ResourceVersion:     pw.rv,
		AllowWatchBookmarks: true,
	})
}

// add registers the pod name about to be created, before the create, so no event is missed.
func (pw *podWatch) add(name string) *podWaiter {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pwr := &podWaiter{done: make(chan struct{})}
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

// run consumes the watch, and watches again when the server ends it (its own timeout, a
// restart), from the last resourceVersion seen; when that has expired, from now, after
// re-reading every pod still waited for.
func (pw *podWatch) run(ctx context.Context, w watch.Interface) {
	for {
		expired := pw.consume(ctx, w)
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetryDelay):
		}
		if expired {
			pw.rv = ""
			pw.resync(ctx)
		}
		var err error
		if w, err = pw.watch(ctx); err != nil {
			// Waits go on with a watch of their own pod.
			close(pw.broken)
			return
		}
	}
}

// consume dispatches events until the watch ends; it reports whether the resume point expired.
func (pw *podWatch) consume(ctx context.Context, w watch.Interface) (expired bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.rv = pod.ResourceVersion
			switch ev.Type {
			case watch.Added, watch.Modified:
				pw.observe(pod, false)
			case watch.Deleted:
				pw.observe(pod, true)
			}
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
	case <-pw.broken:
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
