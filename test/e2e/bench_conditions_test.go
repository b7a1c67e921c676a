//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestBenchConditions (`make bench-conditions`): `verify --all-nodes` on
// NODESTATE_BENCH_CONDITIONS_NODES kwok nodes that carry the monitor's conditions, answered
// from them (one paginated LIST) beside --fresh (a debug pod per node), on the same cluster in
// the same run, interleaved (conditions, fresh, conditions): wall time, API requests (the API
// server's count, the harness's own subtracted) and peak RSS of each. Prints one BENCH line.
func TestBenchConditions(t *testing.T) {
	n := envInts(t, "NODESTATE_BENCH_CONDITIONS_NODES", "0")[0]
	if n == 0 {
		t.Skip("set NODESTATE_BENCH_CONDITIONS_NODES")
	}
	cpu, err := os.ReadFile(filepath.Join(cp.repoRoot, "examples", "kubelet-root", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	dir := KubeletDir(t, map[string]string{"cpu_manager_state": string(cpu)})
	names := numberedNodes("cbench", n)
	start := time.Now()
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: dir} })
	patch := conditionsPatch(0)
	var g errgroup.Group
	g.SetLimit(20)
	for _, name := range names {
		g.Go(func() error { return patchConditions(t, name, patch) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodes created and their conditions planted in %s", n, time.Since(start).Round(time.Second))
	// A debug pod per node for 10,000 nodes has taken 163 s here, and over 20 minutes on the
	// machine loaded by other jobs.
	benchRunTimeout = max(benchRunTimeout, time.Duration(n)*300*time.Millisecond)
	plugin := PluginBin(t)
	ns := NewNamespace(t, nil)
	// The conditions stay fresh through the --fresh run between, however long it takes here.
	base := []string{"verify", "--all-nodes", "-l", TestSelector(t), "-n", ns, "--no-headers", "--max-condition-age", "3h"}
	var from []benchRun
	var fresh benchRun
	for _, round := range []bool{false, true, false} {
		args := base
		if round {
			args = append(append([]string(nil), base...), "--fresh")
		}
		r := measure(t, ns, plugin, args...)
		want := map[bool]string{false: " conditions ", true: " debug-pod "}[round]
		if c := strings.Count(r.stdout, want); c != n {
			t.Fatalf("%v: %d rows from%s, want %d", args, c, want, n)
		}
		if round {
			fresh = r
		} else {
			from = append(from, r)
		}
	}
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	fromWall := (from[0].wall + from[1].wall) / 2
	line := fmt.Sprintf("conditions nodes=%d from_conditions=%.2fs fresh=%.2fs ratio=%.0f requests from_conditions=%d,%d fresh=%d rss_mib from_conditions=%.0f,%.0f fresh=%.0f",
		n, fromWall.Seconds(), fresh.wall.Seconds(), float64(fresh.wall)/float64(fromWall),
		from[0].requests, from[1].requests, fresh.requests, mib(from[0].rssKiB), mib(from[1].rssKiB), mib(fresh.rssKiB))
	fmt.Fprintln(os.Stdout, "BENCH "+line)
	t.Log(line)
	t.Logf("requests by verb: from conditions %v; fresh %v", from[0].byVerb, fresh.byVerb)
}

// numberedNodes are n node names: prefix-00000, prefix-00001, ...
func numberedNodes(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}
