//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestBenchAdmit: what `admit --all-nodes` costs beside `verify --all-nodes`, in the same run,
// interleaved (verify, admit, admit, verify), on NODESTATE_BENCH_ADMIT_NODES kwok nodes holding
// examples/admit-node's checkpoints; admit is given their machine and config, so its fetch is
// verify's and the difference is the replay (without them, admit reads each node's sysfs and
// kubelet config in the same exec, as doctor does). Prints one BENCH line:
//
//	NODESTATE_BENCH_ADMIT_NODES=100 hack/e2e.sh -run TestBenchAdmit -v
func TestBenchAdmit(t *testing.T) {
	n := envInts(t, "NODESTATE_BENCH_ADMIT_NODES", "0")[0]
	if n == 0 {
		t.Skip("set NODESTATE_BENCH_ADMIT_NODES")
	}
	example := filepath.Join(cp.repoRoot, "examples/admit-node")
	files := repoDirFiles(t, "examples/admit-node")
	dir := KubeletDir(t, files)
	names := numberedNodes("admb", n)
	CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: dir} })
	plugin := PluginBin(t)
	ns := NewNamespace(t, nil)
	sel := TestSelector(t)
	base := []string{"--all-nodes", "-l", sel, "-n", ns, "-o", "json"}
	verify := append([]string{"verify"}, base...)
	pod := filepath.Join(example, "pod-db.yaml")
	admit := append([]string{"admit", "-f", pod, "--machine", filepath.Join(example, "machine.json"),
		"--kubelet-config", filepath.Join(example, "kubelet-config.yaml")}, base...)
	runs := map[string][]benchRun{}
	for _, round := range [][]string{{"verify", "admit"}, {"admit", "verify"}} {
		for _, name := range round {
			args := map[string][]string{"verify": verify, "admit": admit}[name]
			r := measure(t, ns, plugin, args...)
			if name == "admit" && strings.Count(r.stdout, `"admitted": true`) != n {
				t.Fatalf("admit: %d of %d nodes admit the pod:\n%.2000s", strings.Count(r.stdout, `"admitted": true`), n, r.stdout)
			}
			runs[name] = append(runs[name], r)
		}
	}
	perNode := func(rs []benchRun) float64 {
		var req int64
		for _, r := range rs {
			req += r.requests
		}
		return float64(req) / float64(len(rs)) / float64(n)
	}
	v, a := meanWall(runs["verify"]), meanWall(runs["admit"])
	line := fmt.Sprintf("admit nodes=%d verify=%.2fs admit=%.2fs ratio=%.3f requests_per_node verify=%.2f admit=%.2f",
		n, v, a, a/v, perNode(runs["verify"]), perNode(runs["admit"]))
	fmt.Fprintln(os.Stdout, "BENCH "+line)
	t.Log(line)
}
