package nodestate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchPods is the node of the benchmarks: 250 Guaranteed pods of 2 containers (500), each
// pod's app holding one CPU exclusively and its sidecar in the shared pool, every cgroup as
// the checkpoint says.
const benchPods = 250

func benchContainers() []testContainer {
	var ctrs []testContainer
	for i := range benchPods {
		pod := fmt.Sprintf("%08x-6a5f-4e3d-8c2b-%012x", i, i*7919)
		ctrs = append(ctrs,
			testContainer{pod, "app", fmt.Sprintf("%064x", 2*i+1), fmt.Sprint(2 + i), fmt.Sprint(2 + i)},
			testContainer{pod, "sidecar", fmt.Sprintf("%064x", 2*i+2), "", "0-1"})
	}
	return ctrs
}

// benchConfig is the benchmarks' kubelet config: the static CPU policy, CPU 0 reserved.
const benchConfig = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"

// benchNode writes the node into dir with a kubelet config for the restart check; the machine
// is this host's (/sys, /proc), which the state does not fit, so the restart check also
// searches for a fix: its slowest path.
func benchNode(tb testing.TB, dir string) LocalConfig {
	lc := writeNode(tb, dir, "0-1", benchContainers())
	if err := os.WriteFile(filepath.Join(lc.RootDir, KubeletConfigFile), []byte(benchConfig), 0o644); err != nil {
		tb.Fatal(err)
	}
	return lc
}

// BenchmarkCheckNode500 runs each node-local check on a node of 500 containers, as the Node
// Problem Detector runs it every 30 s with a 5 s timeout: time per check (ns/op, and ms/check),
// memory allocated per check, and the heap in use after it (MB-heap). The binary's peak RSS
// is measured by hack/bench-nodecheck.sh (make bench-nodecheck).
func BenchmarkCheckNode500(b *testing.B) {
	lc := benchNode(b, b.TempDir())
	for _, c := range NodeChecks {
		b.Run(string(c), func(b *testing.B) {
			b.ReportAllocs()
			var res []CheckResult
			for b.Loop() {
				var err error
				if res, err = CheckNode(context.Background(), lc, c); err != nil {
					b.Fatal(err)
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/check")
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap")
			if c == CheckCgroups && !strings.HasPrefix(res[0].Summary, "cgroups agree with the CPU and memory state (500 containers)") {
				b.Fatalf("the bench node is not what it should be: %+v", res[0])
			}
		})
	}
}

// TestWriteBenchNode writes the benchmarks' node into $NODESTATE_BENCH_NODE_DIR and prints the
// node-check flags that read it, for hack/bench-nodecheck.sh; skipped without it.
func TestWriteBenchNode(t *testing.T) {
	dir := os.Getenv("NODESTATE_BENCH_NODE_DIR")
	if dir == "" {
		t.Skip("NODESTATE_BENCH_NODE_DIR not set")
	}
	lc := benchNode(t, dir)
	fmt.Printf("FLAGS --kubelet-root-dir %s --cgroup-root %s --containerd-state %s --kubelet-version %s\n",
		lc.RootDir, lc.CgroupRoot, filepath.Join(dir, "containerd"), lc.KubeletVersion)
}
