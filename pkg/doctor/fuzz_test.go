package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// FuzzDiagnose: whatever a node's CPU and memory files hold, once decoded as valid or not,
// doctor's start prediction and findings neither panic nor build what the files only name (a
// hostile CPU range), on a real case's machine and config.
func FuzzDiagnose(f *testing.F) {
	for _, name := range []string{"cpu-s2c8t2n2-healthy-assigned__w1.25.16", "cpu-s2c8t2n2-healthy-assigned__w1.37.1", "mem-n2hp-healthy-assigned__w1.37.1"} {
		cpu, _ := os.ReadFile(filepath.Join(startVectorsDir, "cases", name, "cpu_manager_state"))
		mem, _ := os.ReadFile(filepath.Join(startVectorsDir, "cases", name, "memory_manager_state"))
		f.Add(cpu, mem, uint8(0))
		f.Add(cpu, mem, uint8(3))
	}
	versions := []string{"v1.25.16", "v1.27.0", "v1.31.14", "v1.34.10", "v1.36.0", decode.HomeKubelet}
	base := map[string]StartInput{}
	for _, v := range versions {
		base[v] = startCase(f, filepath.Join(startVectorsDir, "cases", "mem-n2hp-healthy-assigned__w1.37.1"), nil, v)
	}
	f.Fuzz(func(t *testing.T, cpu, mem []byte, version uint8) {
		in := base[versions[int(version)%len(versions)]]
		in.CPU = decode.Decode(decode.KindCPU, cpu, decode.Options{Kubelet: &in.Kubelet})
		in.Memory = decode.Decode(decode.KindMemory, mem, decode.Options{Kubelet: &in.Kubelet})
		if _, err := PredictStart(in); err != nil {
			t.Fatal(err)
		}
		Diagnose(Input{Machine: in.Machine, Config: in.Config, Kubelet: &in.Kubelet, Files: []*decode.Report{in.CPU, in.Memory}})
	})
}
