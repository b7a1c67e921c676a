package fetch

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
)

// NodeResult is one node's outcome in FetchAll: Files or Err (an *Error), never both.
type NodeResult struct {
	Node  string
	Files *Snapshot
	Err   error
}

// Named returns nodes known only by name: fetching each reads its Node object first.
func Named(names []string) []NodeInfo {
	nodes := make([]NodeInfo, len(names))
	for i, n := range names {
		nodes[i] = NodeInfo{Name: n}
	}
	return nodes
}

// FetchAll is FetchNodes of nodes known only by name.
func (f *Fetcher) FetchAll(ctx context.Context, nodes []string, concurrency int, each func(NodeResult)) {
	f.FetchNodes(ctx, Named(nodes), concurrency, each)
}

// FetchNodes fetches nodes with at most concurrency at a time (DefaultConcurrency if < 1) and
// calls each with every result as soon as it is ready. Nodes from ListNodes are not read
// again. Every debug pod is waited for on one shared watch. Calls to each never overlap, so it
// needs no locking, but a slow each holds up reporting (not fetching). Once ctx is cancelled
// no new node is started; those left are reported with a ReasonCanceled error, and FetchNodes
// returns only after every started fetch has deleted its pod, so the caller may exit then.
func (f *Fetcher) FetchNodes(ctx context.Context, nodes []NodeInfo, concurrency int, each func(NodeResult)) {
	FetchNodesThen(ctx, f, nodes, concurrency, func(_ context.Context, r NodeResult) NodeResult { return r }, each)
}

// FetchNodesThen is FetchNodes with work done on each node's result in the node's own worker,
// before each gets work's answer: what costs time per node after the read (decoding and
// judging the files, another request about the node) then runs up to concurrency at a time,
// not one at a time in each. work sees every node, failed and canceled ones too.
func FetchNodesThen[T any](ctx context.Context, f *Fetcher, nodes []NodeInfo, concurrency int, work func(context.Context, NodeResult) T, each func(T)) {
	if concurrency < 1 {
		concurrency = DefaultConcurrency
	}
	opts := f.Options.WithDefaults()
	var mu sync.Mutex // each is called from the workers, one at a time
	report := func(r NodeResult) {
		t := work(ctx, r)
		mu.Lock()
		defer mu.Unlock()
		each(t)
	}
	canceled := func(node string) {
		report(NodeResult{Node: node, Err: withNode(ctx.Err(), node, opts.Namespace)})
	}

	// One watch of the debug pods and one of their Warning events for the whole fan-out.
	// Without the shared pod watch (e.g. RBAC allows no watch across the namespace's pods), each
	// fetch watches its own pod and its events, and reports what went wrong.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var pw *podWatch
	if len(nodes) > 0 && f.Validate() == nil {
		var err error
		if pw, err = newPodWatch(wctx, f.Client.CoreV1().Pods(opts.Namespace), opts.Image, ""); err == nil {
			pw.watchEvents(wctx, f.Client.CoreV1().Events(opts.Namespace), opts)
		}
	}

	var g errgroup.Group
	g.SetLimit(concurrency)
	for _, node := range nodes {
		if ctx.Err() != nil {
			canceled(node.Name)
			continue
		}
		g.Go(func() error {
			// Go may have waited for a slot past a cancellation.
			if ctx.Err() != nil {
				canceled(node.Name)
				return nil
			}
			files, err := f.fetch(ctx, node, pw)
			report(NodeResult{Node: node.Name, Files: files, Err: err})
			return nil
		})
	}
	_ = g.Wait()
}
