//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveScale runs `kubectl nodestate verify --all-nodes` over many simulated nodes
// (NODESTATE_E2E_PLUGIN_SCALE_NODES, e.g. 1000; `make e2e-scale`), once per concurrency in
// NODESTATE_E2E_SCALE_CONCURRENCY order, in one run so the wall times compare. Every node holds
// the example kubelet dir (7 valid files); every file must come back valid and no pod remain.
func TestLiveScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NODESTATE_E2E_PLUGIN_SCALE_NODES"))
	if n < 1 {
		t.Skip("set NODESTATE_E2E_PLUGIN_SCALE_NODES (make e2e-scale) for the scale run")
	}
	// The default, and 100 (docs/performance.md: the sweep that chose the default).
	concurrencies := []int{cmdutil.DefaultConcurrency}
	if cmdutil.DefaultConcurrency != 100 {
		concurrencies = append(concurrencies, 100)
	}
	files := repoDirFiles(t, "examples/kubelet-root")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("big-%04d", i)
	}
	start := time.Now()
	CreateNodes(t, names, func(string) NodeOptions {
		return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: KubeletDir(t, files)}
	})
	t.Logf("%d nodes created and Ready in %s", n, time.Since(start).Round(time.Millisecond))

	ns := NewNamespace(t, nil)
	for _, c := range concurrencies {
		r := RunKubectl(t, "nodestate", "verify", "--all-nodes", "-l", TestSelector(t), "-n", ns,
			"--concurrency", strconv.Itoa(c), "-o", "json")
		if r.ExitCode != 0 {
			t.Fatalf("concurrency %d: %s", c, r)
		}
		var out struct {
			Items []struct {
				Node    string `json:"node"`
				Verdict string `json:"verdict"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatal(err)
		}
		nodes := map[string]bool{}
		for _, it := range out.Items {
			if it.Verdict != "valid" {
				t.Errorf("node %s: verdict %s", it.Node, it.Verdict)
			}
			nodes[it.Node] = true
		}
		if len(nodes) != n || len(out.Items) != n*len(files) {
			t.Fatalf("concurrency %d: %d nodes, %d rows; want %d nodes, %d rows", c, len(nodes), len(out.Items), n, n*len(files))
		}
		t.Logf("SCALE nodes=%d concurrency=%d wall=%s (%.1f nodes/s)", n, c, r.Duration.Round(time.Millisecond), float64(n)/r.Duration.Seconds())
		WaitNoManagedPods(t, ns, 30*time.Second)
	}
}
