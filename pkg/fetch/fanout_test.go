package fetch

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func TestFetchAllBoundsConcurrency(t *testing.T) {
	const nodes, limit = 40, 5
	objs, names := readyNodes(nodes)
	c := newClient(true, objs...)

	var inFlight, maxInFlight atomic.Int32
	exec := tarExec(nodeFS{"cpu_manager_state": "x"})
	f := newFetcher(c, func(ctx context.Context, ns, pod, cn string, cmd []string, o, e io.Writer) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		return exec(ctx, ns, pod, cn, cmd, o, e)
	})

	seen := map[string]int{}
	var inEach atomic.Bool
	f.FetchAll(context.Background(), names, limit, func(r NodeResult) {
		if !inEach.CompareAndSwap(false, true) {
			t.Error("each called concurrently")
		}
		defer inEach.Store(false)
		if r.Err != nil || r.Files == nil || r.Files.Node != r.Node {
			t.Errorf("%s: files %v, err %v", r.Node, r.Files, r.Err)
		}
		seen[r.Node]++
	})

	if len(seen) != nodes {
		t.Errorf("%d results, want %d", len(seen), nodes)
	}
	for n, k := range seen {
		if k != 1 {
			t.Errorf("%s reported %d times", n, k)
		}
	}
	if m := maxInFlight.Load(); m > limit || m < 2 {
		t.Errorf("max in flight %d, want 2..%d", m, limit)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// After cancellation nothing new starts, every node still gets a result, and every pod that
// was created is deleted before FetchAll returns.
func TestFetchAllCancel(t *testing.T) {
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
	f.FetchAll(ctx, names, limit, func(r NodeResult) { results[r.Node] = ReasonOf(r.Err) })

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

// FetchNodesThen's work runs in the workers, several nodes at once (here all four must be in
// work together, or none gets out), while each still gets the answers one at a time.
func TestFetchNodesThenWorksConcurrently(t *testing.T) {
	const nodes = 4
	objs, names := readyNodes(nodes)
	f := newFetcher(newClient(true, objs...), tarExec(nodeFS{"cpu_manager_state": "x"}))
	var arrived sync.WaitGroup
	arrived.Add(nodes)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	work := func(_ context.Context, r NodeResult) string {
		arrived.Done()
		select {
		case <-all:
			return r.Node
		case <-time.After(10 * time.Second):
			return "alone: " + r.Node
		}
	}
	var inEach atomic.Bool
	var got []string
	FetchNodesThen(context.Background(), f, Named(names), nodes, work, func(s string) {
		if !inEach.CompareAndSwap(false, true) {
			t.Error("each called concurrently")
		}
		defer inEach.Store(false)
		got = append(got, s)
	})
	if len(got) != nodes {
		t.Fatalf("%d results, want %d", len(got), nodes)
	}
	for _, s := range got {
		if strings.HasPrefix(s, "alone") {
			t.Errorf("work ran %s", s)
		}
	}
}
