package fetch

import (
	"context"
)

// Named returns nodes known only by name: fetching each reads its Node object first.
func Named(names []string) []NodeInfo {
	nodes := make([]NodeInfo, len(names))
	for i, n := range names {
		nodes[i] = NodeInfo{Name: n}
	}
	return nodes
}

// A Fanout fetches many nodes, each waiting for its debug pod on one shared watch of the pods
// and one of their Warning events, instead of a watch pair per node. The caller runs the
// fetches, as many at once as it likes (nodestate bounds them), and Closes the Fanout after the
// last.
type Fanout struct {
	f    *Fetcher
	pw   *podWatch
	stop context.CancelFunc
}

// Fanout starts the shared watches for fetches under ctx. Without them (e.g. RBAC allows no
// watch across the namespace's pods), each fetch watches its own pod and its events, and
// reports what went wrong.
func (f *Fetcher) Fanout(ctx context.Context) *Fanout {
	opts := f.Options.WithDefaults()
	wctx, stop := context.WithCancel(ctx)
	fo := &Fanout{f: f, stop: stop}
	if f.Validate() == nil {
		pw, err := newPodWatch(wctx, f.Client.CoreV1().Pods(opts.Namespace), opts.Image, "")
		if err == nil {
			pw.watchEvents(wctx, f.Client.CoreV1().Events(opts.Namespace), opts)
			fo.pw = pw
		}
	}
	return fo
}

// Fetch is Fetcher.Fetch of a node from ListNodes (not read again) or only named, on the
// shared watches. Once ctx is cancelled it starts nothing and returns a ReasonCanceled error.
func (fo *Fanout) Fetch(ctx context.Context, node NodeInfo) (*Snapshot, error) {
	if ctx.Err() != nil {
		return nil, withNode(ctx.Err(), node.Name, fo.f.Options.WithDefaults().Namespace)
	}
	return fo.f.fetch(ctx, node, fo.pw)
}

// Close stops the shared watches.
func (fo *Fanout) Close() { fo.stop() }
