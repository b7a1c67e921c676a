package admit

import (
	"fmt"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// bigAdmission is a 2-socket, 4-NUMA, 256-CPU machine without checkpoints and 24 Guaranteed
// pods of 8 CPUs and 4Gi admitted one after another, under the given CPU options.
func bigAdmission(b *testing.B, cpuOptions string, pods int) Input {
	m := &machine.Machine{Schema: machine.Schema}
	const sockets, numaPerSocket, coresPerNUMA, threads = 2, 2, 32, 2
	cores := sockets * numaPerSocket * coresPerNUMA
	for t := 0; t < threads; t++ {
		for c := 0; c < cores; c++ {
			numa := c / coresPerNUMA
			m.CPUs = append(m.CPUs, machine.CPU{ID: t*cores + c, Core: c % (numaPerSocket * coresPerNUMA), Socket: numa / numaPerSocket, NUMA: numa})
		}
	}
	for n := 0; n < sockets*numaPerSocket; n++ {
		m.NUMA = append(m.NUMA, machine.NUMANode{ID: n, Memory: 256 << 30, Distances: []uint64{10, 12, 20, 20}})
	}
	cfg, err := replay.ParseKubeletConfig([]byte(`{"cpuManagerPolicy":"static","reservedSystemCPUs":"0,128","cpuManagerPolicyOptions":` + cpuOptions + `,
		"memoryManagerPolicy":"Static","reservedMemory":[{"numaNode":0,"limits":{"memory":"100Mi"}}],
		"topologyManagerPolicy":"best-effort","topologyManagerScope":"pod"}`))
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Machine: m, Config: cfg, Kubelet: kubelet(b, "v1.37.1")}
	for i := 0; i < pods; i++ {
		in.Pods = append(in.Pods, guaranteed(fmt.Sprintf("p%02d", i), "8", "4Gi"))
	}
	return in
}

// BenchmarkAdmit: the start replay alone, then 24 stacked admissions packed and distributed
// across NUMA nodes (ratios side by side in one run).
func BenchmarkAdmit(b *testing.B) {
	for _, tc := range []struct {
		name, options string
		pods          int
	}{
		{"start-only", `{"full-pcpus-only":"true"}`, 0},
		{"24-pods-packed", `{"full-pcpus-only":"true"}`, 24},
		{"24-pods-distributed", `{"full-pcpus-only":"true","distribute-cpus-across-numa":"true"}`, 24},
	} {
		in := bigAdmission(b, tc.options, tc.pods)
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := Predict(in)
				if err != nil || !res.KubeletStart.Starts {
					b.Fatal(err, res.KubeletStart)
				}
				for _, a := range res.Admissions {
					if !a.Admitted {
						b.Fatalf("%s: %s %s", a.Pod, a.Reason, a.Message)
					}
				}
			}
		})
	}
}
