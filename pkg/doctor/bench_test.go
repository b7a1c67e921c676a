package doctor

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// bigNode is a 4-socket, 8-NUMA, 512-CPU machine with 240 pinned containers, each holding one
// core and 1Gi on one NUMA node: a large real-world state.
func bigNode() replay.StartInput {
	m := &machine.Machine{Schema: machine.Schema}
	const sockets, numaPerSocket, coresPerNUMA, threads = 4, 2, 32, 2
	cores := sockets * numaPerSocket * coresPerNUMA
	for t := 0; t < threads; t++ {
		for c := 0; c < cores; c++ {
			numa := c / coresPerNUMA
			m.CPUs = append(m.CPUs, machine.CPU{ID: t*cores + c, Core: c % (numaPerSocket * coresPerNUMA), Socket: numa / numaPerSocket, NUMA: numa})
		}
	}
	for n := 0; n < sockets*numaPerSocket; n++ {
		m.NUMA = append(m.NUMA, machine.NUMANode{ID: n, Memory: 64 << 30})
	}
	reserveMi := resource.MustParse("1124Mi")
	cfg := &replay.KubeletConfig{CPUManagerPolicy: "static", MemoryManagerPolicy: "Static", KubeReserved: replay.ResourceMap{"cpu": "2"},
		SystemReserved: replay.ResourceMap{"memory": "1Gi"}, ReservedMemory: []replay.MemoryReservation{{NumaNode: 0, Limits: map[string]resource.Quantity{"memory": reserveMi}}}}
	cs := &decode.CPUState{PolicyName: "static", Entries: map[string]map[string]string{}}
	ms := &decode.MemoryState{PolicyName: "Static", MachineState: map[int]*decode.NUMANodeMemory{}, Entries: map[string]map[string][]decode.MemoryBlock{}}
	all := m.Online()
	used := cpuset.New()
	perNode := map[int]uint64{}
	for p := 0; p < 240; p++ {
		c := 8 + p // cores 8.. (the reserved CPUs sit on core 0)
		set := cpuset.New(c, c+cores)
		used = used.Union(set)
		pod := fmt.Sprintf("pod-%03d", p)
		cs.Entries[pod] = map[string]string{"app": set.String()}
		node := c / coresPerNUMA
		ms.Entries[pod] = map[string][]decode.MemoryBlock{"app": {{NUMAAffinity: []int{node}, Type: "memory", Size: 1 << 30}}}
		perNode[node]++
	}
	cs.DefaultCPUSet = all.Difference(used).String()
	for n := range m.NUMA {
		reserved := uint64(0)
		if n == 0 {
			reserved = uint64(reserveMi.Value())
		}
		alloc := m.NUMA[n].Memory - reserved
		ms.MachineState[n] = &decode.NUMANodeMemory{NumberOfAssignments: int(perNode[n]), Cells: []int{n}, MemoryMap: map[string]*decode.MemoryTable{
			"memory": {Total: m.NUMA[n].Memory, SystemReserved: reserved, Allocatable: alloc, Reserved: perNode[n] << 30, Free: alloc - perNode[n]<<30}}}
	}
	k, err := decode.ParseKubelet(decode.HomeKubelet, nil)
	if err != nil {
		panic(err)
	}
	return replay.StartInput{Machine: m, Config: cfg, Kubelet: k,
		CPU:    &decode.Report{File: "cpu_manager_state", Kind: decode.KindCPU, Verdict: decode.Valid, Decoded: decode.Model{CPU: cs}},
		Memory: &decode.Report{File: "memory_manager_state", Kind: decode.KindMemory, Verdict: decode.Valid, Decoded: decode.Model{Memory: ms}}}
}

func TestBigNodeStarts(t *testing.T) {
	p, err := replay.PredictStart(bigNode())
	if err != nil || !p.Starts {
		t.Fatalf("big healthy node: %+v %v", p, err)
	}
}

func BenchmarkPredictStartBigNode(b *testing.B) {
	in := bigNode()
	b.ReportAllocs()
	for b.Loop() {
		if p, err := replay.PredictStart(in); err != nil || !p.Starts {
			b.Fatal(p, err)
		}
	}
}

func BenchmarkDiagnoseBigNode(b *testing.B) {
	sin := bigNode()
	in := Input{Files: []*decode.Report{sin.CPU, sin.Memory}, Machine: sin.Machine, Config: sin.Config, Kubelet: &sin.Kubelet, LivePods: map[string]bool{}}
	b.ReportAllocs()
	for b.Loop() {
		Diagnose(in)
	}
}
