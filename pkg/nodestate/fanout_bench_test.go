package nodestate

import (
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// BenchmarkFanoutNode is one node of make bench-fanout's nostart state, in process: what each
// verb's worker does with a node once its exec returned (the dumps parsed, the files judged,
// the claims got, then doctor's diagnosis or admit's replay). The node is read once through
// the verb's Runner (fake API server) with an exec that answers with what the verb's own exec
// command printed on this host over examples/kubelet-root (its files, this machine's sysfs);
// each iteration works on a copy of that read. The sub-benchmarks side by side are what
// doctor and admit add to verify per node.
func BenchmarkFanoutNode(b *testing.B) {
	config, err := replay.ParseKubeletConfig([]byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	pod := guaranteedPod("bench-pinned", "", "1", "100Mi")
	pod.Status = corev1.PodStatus{}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n000"}, Status: corev1.NodeStatus{
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
	}}
	for _, tc := range []struct {
		name    string
		engines Engines
	}{
		{"verify", Engines{}},
		{"doctor", Engines{Doctor: &DoctorConfig{KubeletConfig: config}}},
		{"admit", Engines{Admit: &AdmitConfig{KubeletConfig: config, Pods: []*corev1.Pod{pod}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			newRunner := func(execFn fetch.ExecFunc) *Runner {
				client := runningPodsClient(node)
				r, err := New(context.Background(), Config{Nodes: []string{node.Name}, Client: client, RESTConfig: &rest.Config{}, Exec: execFn, Engines: tc.engines})
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			stdout, stderr := hostExec(b, newRunner(nil).ExecCommand())
			r := newRunner(func(_ context.Context, _, _, _ string, _ []string, out, errOut io.Writer) error {
				if _, err := errOut.Write(stderr); err != nil {
					return err
				}
				_, err := out.Write(stdout)
				return err
			})
			var read *NodeResult
			for res, err := range r.Results(context.Background()) {
				if err != nil || res.Err != nil {
					b.Fatalf("reading the node: %v %v", err, res.Err)
				}
				read = res
			}
			b.ReportAllocs()
			for b.Loop() {
				snap := *read.Snapshot
				snap.Files = maps.Clone(snap.Files)
				res := r.processNode(context.Background(), &NodeResult{Node: read.Node, Where: read.Where, Snapshot: &snap})
				if (tc.engines.Doctor != nil && res.Doctor == nil) || (tc.engines.Admit != nil && res.Admit == nil) {
					b.Fatalf("%s: no engine result", res.Node)
				}
			}
		})
	}
}

// hostExec runs a verb's exec command on this host, in a copy of examples/kubelet-root (as
// kwok runs it in make bench-fanout), and returns what it printed.
func hostExec(b testing.TB, command []string) (stdout, stderr []byte) {
	b.Helper()
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repo, "examples/kubelet-root"))); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("the exec command on this host: %v\n%s", err, errOut.String())
	}
	return out.Bytes(), errOut.Bytes()
}
