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

// FetchAll fetches nodes with at most concurrency at a time (DefaultConcurrency if < 1) and
// calls each with every result as soon as it is ready. Calls to each never overlap, so it
// needs no locking, but a slow each holds up reporting (not fetching). Once ctx is cancelled
// no new node is started; those left are reported with a ReasonCanceled error, and FetchAll
// returns only after every started Fetch has deleted its pod, so the caller may exit then.
func (f *Fetcher) FetchAll(ctx context.Context, nodes []string, concurrency int, each func(NodeResult)) {
	if concurrency < 1 {
		concurrency = DefaultConcurrency
	}
	var mu sync.Mutex // each is called from the workers, one at a time
	report := func(r NodeResult) {
		mu.Lock()
		defer mu.Unlock()
		each(r)
	}
	// A plain errgroup.Group, not WithContext: one node's failure is its result, not a reason
	// to stop the others. Go blocks while concurrency fetches run.
	canceled := func(node string) bool {
		if ctx.Err() == nil {
			return false
		}
		report(NodeResult{Node: node, Err: withNode(ctx.Err(), node, f.Options.WithDefaults().Namespace)})
		return true
	}
	var g errgroup.Group
	g.SetLimit(concurrency)
	for _, node := range nodes {
		if canceled(node) {
			continue
		}
		g.Go(func() error {
			// Cancelled while waiting for a slot: don't start a pod.
			if canceled(node) {
				return nil
			}
			files, err := f.Fetch(ctx, node)
			report(NodeResult{Node: node, Files: files, Err: err})
			return nil
		})
	}
	_ = g.Wait() // the workers return nil: errors travel in each result
}
