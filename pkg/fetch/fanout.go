package fetch

import (
	"context"
	"sync"
)

// NodeResult is one node's outcome in FetchAll: Files or Err (an *Error), never both.
type NodeResult struct {
	Node  string
	Files *NodeFiles
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
	var mu sync.Mutex
	report := func(r NodeResult) {
		mu.Lock()
		defer mu.Unlock()
		each(r)
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, node := range nodes {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		// select picks at random when both are ready: check again before starting.
		if ctx.Err() != nil {
			report(NodeResult{Node: node, Err: withNode(ctx.Err(), node, f.Options.WithDefaults().Namespace)})
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			files, err := f.Fetch(ctx, node)
			report(NodeResult{Node: node, Files: files, Err: err})
		})
	}
	wg.Wait()
}
