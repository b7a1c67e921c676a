package fetch

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// resumingWatch keeps one watch of a fan-out open until its context ends, for the shared watches
// of the debug pods and of their Warning events. When the server ends the watch (its own
// timeout, a restart) it watches again from the last resourceVersion seen, bookmarks included;
// when that has expired (410 Gone) it calls expired and watches from "" (the server then first
// replays the objects that exist, so an object changed in the gap is seen again). A reopen that
// fails for a transient reason is retried with backoff; if a watch is refused, broken is closed
// and it stops.
//
// Not client-go's tools/watch.RetryWatcher: it needs a resourceVersion to start from (a LIST
// first, and the events rule of deploy/rbac.yaml grants watch only), it ends on a 410 in an
// event and keeps retrying the same expired version when the watch call itself answers 410, so
// the relist above would still be ours to write.
type resumingWatch struct {
	open    func(ctx context.Context, rv string) (watch.Interface, error)
	handle  func(watch.EventType, any) // Added, Modified and Deleted events
	expired func(ctx context.Context)  // may be nil
	broken  chan struct{}
	rv      string // resume point, owned by run
}

// startWatch opens the first watch, from rv, and consumes it in the background until ctx ends.
func startWatch(ctx context.Context, rv string, open func(context.Context, string) (watch.Interface, error),
	handle func(watch.EventType, any), expired func(context.Context)) (*resumingWatch, error) {
	rw := &resumingWatch{open: open, handle: handle, expired: expired, broken: make(chan struct{}), rv: rv}
	w, err := open(ctx, rv)
	if err != nil {
		return nil, err
	}
	go rw.run(ctx, w)
	return rw, nil
}

func (rw *resumingWatch) run(ctx context.Context, w watch.Interface) {
	for {
		expired := rw.consume(ctx, w)
		w.Stop()
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetryDelay):
		}
		if expired {
			rw.rv = ""
			if rw.expired != nil {
				rw.expired(ctx)
			}
		}
		// An API server restarting refuses connections for a few seconds: open again with
		// backoff until it answers or the fan-out ends; only a refusal breaks the watch.
		err := retryTransient(ctx, 0, func(ctx context.Context) (err error) {
			w, err = rw.open(ctx, rw.rv)
			return err
		})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			close(rw.broken)
			return
		}
	}
}

// consume dispatches events until the watch ends; it reports whether the resume point expired.
func (rw *resumingWatch) consume(ctx context.Context, w watch.Interface) (expired bool) {
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
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				rw.rv = m.GetResourceVersion()
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				rw.handle(ev.Type, ev.Object)
			}
		}
	}
}
