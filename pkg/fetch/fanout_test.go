package fetch

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// After cancellation a Fanout starts nothing new, every node still gets a result, and every pod
// that was created is deleted before its Fetch returns.
func TestFanoutCancel(t *testing.T) {
	const nodes, limit = 12, 3
	objs, names := readyNodes(nodes)
	c := newClient(true, objs...)
	var creates atomic.Int32
	c.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		return false, nil, nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started sync.WaitGroup
	started.Add(limit)
	go func() { started.Wait(); cancel() }()
	f := newFetcher(c, func(ctx context.Context, _, _, _ string, _ []string, _, _ io.Writer) error {
		started.Done()
		<-ctx.Done()
		return ctx.Err()
	})

	results := map[string]Reason{}
	for node, err := range fanout(ctx, f, Named(names), limit) {
		results[node] = ReasonOf(err)
	}

	if len(results) != nodes {
		t.Errorf("%d results, want %d", len(results), nodes)
	}
	for n, r := range results {
		if r != ReasonCanceled {
			t.Errorf("%s: reason %q, want Canceled", n, r)
		}
	}
	if n := creates.Load(); n != limit {
		t.Errorf("%d pods created, want %d (none after cancel)", n, limit)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

func TestClientRate(t *testing.T) {
	for _, tt := range []struct {
		concurrency int
		qps         float32
		burst       int
	}{{0, 50, 10}, {1, 50, 10}, {20, 1000, 200}, {100, 5000, 1000}} {
		qps, burst := ClientRate(tt.concurrency)
		if qps != tt.qps || burst != tt.burst {
			t.Errorf("ClientRate(%d) = %v, %d; want %v, %d", tt.concurrency, qps, burst, tt.qps, tt.burst)
		}
	}
}
