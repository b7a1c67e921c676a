package nodestate

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// BenchmarkAllNodes reads 100 live nodes (fake API server, exec answering with the
// examples/admit-node checkpoints) as verify does, then with admit's replay of one pod in each
// node's worker, and with doctor's: the ratios are what admit and doctor --all-nodes add to
// verify --all-nodes in process.
func BenchmarkAllNodes(b *testing.B) {
	dir := filepath.Join(repo, "examples/admit-node")
	dc, _, err := LoadDoctorConfig(filepath.Join(dir, "machine.json"), filepath.Join(dir, "kubelet-config.yaml"), "")
	if err != nil {
		b.Fatal(err)
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		content, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			b.Fatal(err)
		}
		_ = tw.WriteHeader(&tar.Header{Name: f, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(content)
	}
	_ = tw.Close()
	exec := func(_ context.Context, _, _, _ string, _ []string, stdout, stderr io.Writer) error {
		defer io.WriteString(stderr, fetch.CollectEnd)
		_, err := stdout.Write(archive.Bytes())
		return err
	}
	var objects []runtime.Object
	for i := 0; i < 100; i++ {
		objects = append(objects, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%03d", i)}, Status: corev1.NodeStatus{
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30"), corev1.ResourcePods: resource.MustParse("110")},
		}})
	}
	db := guaranteedPod("db", "", "6", "4Gi")
	db.Status = corev1.PodStatus{}
	for _, tc := range []struct {
		name    string
		engines Engines
	}{
		{"verify", Engines{}},
		{"admit", Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: []*corev1.Pod{db}}}},
		{"doctor", Engines{Doctor: &DoctorConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				client := runningPodsClient(objects...)
				r, err := New(context.Background(), Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Exec: exec, Concurrency: 20, Engines: tc.engines})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for res, err := range r.Results(context.Background()) {
					if err != nil {
						b.Fatal(err)
					}
					if res.Err != nil || (tc.engines.Admit != nil && (res.Admit == nil || len(res.Admit.Admissions) != 1)) {
						b.Fatalf("%s: %v %+v", res.Node, res.Err, res.Admit)
					}
					n++
				}
				if n != 100 {
					b.Fatal(n)
				}
			}
		})
	}
}
