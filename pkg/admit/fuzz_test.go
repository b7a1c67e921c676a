package admit

import (
	"encoding/json"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// FuzzPredict: whatever a node's CPU and memory checkpoints and the pods hold, the admission
// replay neither panics nor hangs, and admits nothing on a kubelet that would not start.
func FuzzPredict(f *testing.F) {
	set, err := vectorpack.ReadFile(filepath.Join(admissionVectorsDir, "v1.37.1"+vectorpack.Ext))
	if err != nil {
		f.Fatal(err)
	}
	name := "s1n1c4t2c__free-1__static-dan__r-core0__tm-best-effort-container__mem-Static__seed-two__2pods"
	c, ok := set.Case(name)
	if !ok {
		f.Fatalf("seed case %s missing", name)
	}
	base := caseInput(f, c, set.MetaString("kubelet"), deviceSet(set.Name))
	cpu, mem, pod := c.Files["cpu_manager_state"], c.Files["memory_manager_state"], c.Files["pod.json"]
	f.Add(cpu, mem, pod)
	f.Add([]byte(nil), []byte(nil), []byte(`{"metadata":{"name":"x","uid":"u"},"spec":{"initContainers":[{"name":"i","restartPolicy":"Always","resources":{"requests":{"cpu":"3","memory":"1Gi"},"limits":{"cpu":"3","memory":"1Gi"}}}],"containers":[{"name":"a","resources":{"requests":{"cpu":"1e6","memory":"1Gi"},"limits":{"cpu":"1e6","memory":"1Gi"}}}]}}`))
	f.Fuzz(func(t *testing.T, cpu, mem, podJSON []byte) {
		var p v1.Pod
		if json.Unmarshal(podJSON, &p) != nil {
			return
		}
		in := base
		in.CPU = decode.Decode(decode.KindCPU, cpu, decode.Options{Kubelet: &in.Kubelet})
		in.Memory = decode.Decode(decode.KindMemory, mem, decode.Options{Kubelet: &in.Kubelet})
		if len(cpu) == 0 {
			in.CPU = nil
		}
		if len(mem) == 0 {
			in.Memory = nil
		}
		in.Pods = []*v1.Pod{&p, &p}
		res, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		if !res.KubeletStart.Starts && len(res.Admissions) != 0 {
			t.Fatal("admissions on a kubelet that does not start")
		}
	})
}
