package admit

import (
	"fmt"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
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

// BenchmarkRestartFromFiles: doctor's reboot outlook on a node known by its files only: 100 pods
// each holding 1 of 128 GPUs (4 NUMA nodes) in the device checkpoint, rebuilt, then re-admitted
// with no plugin registered, in UID order and reversed, each refused pod tried again with its
// plugin first (what node-check restart costs a node per run).
func BenchmarkRestartFromFiles(b *testing.B) {
	in := bigAdmission(b, "{}", 0)
	cfg, err := replay.ParseKubeletConfig([]byte(`{"topologyManagerPolicy":"best-effort"}`))
	if err != nil {
		b.Fatal(err)
	}
	in.Config = cfg
	const pods, gpus = 100, 128
	dev := &decode.DeviceState{RegisteredDevices: map[string][]string{}}
	for g := 0; g < gpus; g++ {
		dev.RegisteredDevices["nvidia.com/gpu"] = append(dev.RegisteredDevices["nvidia.com/gpu"], fmt.Sprintf("gpu-%03d", g))
	}
	for p := 0; p < pods; p++ {
		dev.PodDeviceEntries = append(dev.PodDeviceEntries, decode.DeviceEntry{PodUID: fmt.Sprintf("uid-%03d", p), ContainerName: "app",
			ResourceName: "nvidia.com/gpu", DevicesPerNUMA: map[int64][]string{int64(p % 4): {fmt.Sprintf("gpu-%03d", p)}}})
	}
	checkpoint := &decode.Report{Kind: decode.KindDevices, Verdict: decode.Valid, Decoded: decode.Model{Devices: dev}}
	b.ReportAllocs()
	for b.Loop() {
		rb := RebuildPods(RebuildInput{Devices: checkpoint})
		plugins, _ := FilePlugins(checkpoint)
		run := in
		run.Devices = &replay.DeviceInput{Plugins: plugins, Checkpoint: checkpoint}
		run.Restart = &Restart{Kind: RestartReboot, Register: map[string]int{"nvidia.com/gpu": pods + 1}}
		res, err := PredictRestartRebuilt(run, rb)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fates) != pods || res.Fates[0].Fate != FateWaitsOnPlugin {
			b.Fatalf("fates: %d, first %+v", len(res.Fates), res.Fates[0])
		}
	}
}
