package admit

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// restartSeedCase is a shipped device case of the real v1.37.1 (CPU policy none, topology
// best-effort/container): its checkpoint gives the seed pod uid-seed-a/app gpu-0 and gpu-1 (NUMA
// node 0) and its plugins advertise 4 GPUs. The restart re-admits the seed, then pod p (1 GPU).
func restartSeedCase(t *testing.T, kubelet string) Input {
	t.Helper()
	const name = "s1n2c4t2__g3-gpu1__gpu2pn+vf4pn__cpu-none__tm-best-effort-container__mem-None__seed-gpus-n0"
	if restartSet == nil {
		set, err := vectorpack.ReadFile(filepath.Join(admissionVectorsDir, "v1.37.1-devices.vectors.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		restartSet = set
	}
	c, ok := restartSet.Case(name)
	if !ok {
		t.Fatalf("no case %s", name)
	}
	in := caseInput(t, c, restartSet.MetaString("kubelet"), true)
	var seed v1.Pod
	if err := json.Unmarshal(c.Files["setup/seed0.json"], &seed); err != nil {
		t.Fatal(err)
	}
	in.Pods = append([]*v1.Pod{&seed}, in.Pods...)
	in.Kubelet.Version = version.MustParseSemantic(kubelet)
	return in
}

// restartSet is the shipped set restartSeedCase reads, read once.
var restartSet *vectorpack.Set

const gpu = "nvidia.com/gpu"

func restartFates(t *testing.T, in Input) RestartResult {
	t.Helper()
	res, err := PredictRestart(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fates) != len(in.Pods) {
		t.Fatalf("%d fates for %d pods", len(res.Fates), len(in.Pods))
	}
	return res
}

const noHealthyGPU = "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"

// A kubelet restart before its GPU plugin registers again: the running seed keeps its GPUs where
// the kubelet skips running containers while its sources are not ready (#118635: 1.25.14,
// 1.26.9, 1.27.6, 1.28 on), and is refused by the patch before; the new pod p waits on the
// plugin either way.
func TestRestartRunningPodByPatch(t *testing.T) {
	for kubelet, seedBack := range map[string]bool{"v1.37.1": true, "v1.28.0": true, "v1.27.6": true, "v1.27.5": false, "v1.26.9": true, "v1.26.8": false, "v1.25.14": true, "v1.25.13": false} {
		in := restartSeedCase(t, kubelet)
		in.Restart = &Restart{Kind: RestartKubelet, Running: map[string]map[string]bool{"uid-seed-a": {"app": true}}, Register: map[string]int{gpu: 99}}
		res := restartFates(t, in)
		seed, p := res.Fates[0], res.Fates[1]
		if seedBack {
			if seed.Fate != FateComesBack {
				t.Errorf("%s: seed %s %q, want it back", kubelet, seed.Fate, seed.Message)
			} else if got := res.Admissions[0].Containers[0].Devices[gpu]; !slices.Equal(got, []string{"gpu-0", "gpu-1"}) {
				t.Errorf("%s: seed back with %v, want its checkpoint's gpu-0, gpu-1", kubelet, got)
			}
		} else if seed.Fate != FateWaitsOnPlugin || seed.Message != noHealthyGPU || !slices.Equal(seed.WaitsOn, []string{gpu}) {
			t.Errorf("%s: seed %+v, want it waiting on %s (%q)", kubelet, seed, gpu, noHealthyGPU)
		}
		if p.Fate != FateWaitsOnPlugin || p.Reason != "UnexpectedAdmissionError" || p.Message != noHealthyGPU || !slices.Equal(p.WaitsOn, []string{gpu}) {
			t.Errorf("%s: pod p %+v, want it waiting on %s", kubelet, p, gpu)
		}
	}
}

// With the sources ready the kubelet checks a running container as any other (no skip).
func TestRestartSourcesReadyChecksRunning(t *testing.T) {
	in := restartSeedCase(t, "v1.37.1")
	in.Restart = &Restart{Kind: RestartKubelet, SourcesReady: true, Running: map[string]map[string]bool{"uid-seed-a": {"app": true}}, Register: map[string]int{gpu: 99}}
	if seed := restartFates(t, in).Fates[0]; seed.Fate != FateWaitsOnPlugin || seed.Message != noHealthyGPU {
		t.Errorf("seed %+v, want refused until the plugin registers", seed)
	}
}

// A container restarted before the kubelet did has an exited instance beside the running one:
// from #135485 (1.34.7, 1.35.4, 1.36 on) it counts as running; before, GetContainerID may return
// the exited one, and the replay takes that draw.
func TestRestartExitedInstanceByPatch(t *testing.T) {
	for kubelet, seedBack := range map[string]bool{"v1.37.1": true, "v1.36.0": true, "v1.35.4": true, "v1.35.3": false, "v1.34.7": true, "v1.34.6": false, "v1.33.6": false} {
		in := restartSeedCase(t, kubelet)
		in.Restart = &Restart{Kind: RestartKubelet, Running: map[string]map[string]bool{"uid-seed-a": {"app": true}},
			Exited: map[string]map[string]bool{"uid-seed-a": {"app": true}}, Register: map[string]int{gpu: 99}}
		if got := restartFates(t, in).Fates[0].Fate == FateComesBack; got != seedBack {
			t.Errorf("%s: seed back=%v, want %v", kubelet, got, seedBack)
		}
	}
}

// A reboot: nothing runs, so the seed and p both wait on the GPU plugin; registered between
// them, the seed is refused and p is admitted; registered first, both come back, the seed on
// its own GPUs.
func TestRestartRebootPluginOrder(t *testing.T) {
	for after, want := range map[int][2]string{0: {FateComesBack, FateComesBack}, 1: {FateWaitsOnPlugin, FateComesBack}, 2: {FateWaitsOnPlugin, FateWaitsOnPlugin}} {
		in := restartSeedCase(t, "v1.37.1")
		in.Restart = &Restart{Kind: RestartReboot, Register: map[string]int{gpu: after}}
		res := restartFates(t, in)
		for i, f := range res.Fates {
			if f.Fate != want[i] {
				t.Errorf("plugin after %d re-admissions: pod %s %s %q, want %s", after, f.Pod, f.Fate, f.Message, want[i])
			}
		}
		if after == 0 {
			if got := res.Admissions[0].Containers[0].Devices[gpu]; !slices.Equal(got, []string{"gpu-0", "gpu-1"}) {
				t.Errorf("seed back with %v, want its checkpoint's gpu-0, gpu-1", got)
			}
		}
	}
}

// The two checks issue 44 found held by no test: devices a container holds that its plugin now
// says are unhealthy, and a held container whose request changed.
func TestRestartHeldDevicesChecks(t *testing.T) {
	in := restartSeedCase(t, "v1.37.1")
	devs := *in.Devices
	devs.Plugins = map[string][]replay.Device{}
	for r, ds := range in.Devices.Plugins {
		devs.Plugins[r] = slices.Clone(ds)
	}
	for i := range devs.Plugins[gpu] {
		if devs.Plugins[gpu][i].ID == "gpu-1" {
			devs.Plugins[gpu][i].Health = "Unhealthy"
		}
	}
	in.Devices = &devs
	in.Restart = &Restart{Kind: RestartReboot}
	seed := restartFates(t, in).Fates[0]
	if want := "Allocate failed due to previously allocated devices are no longer healthy; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"; seed.Fate != FateRefused || seed.Message != want {
		t.Errorf("seed holding an unhealthy GPU: %+v, want refused %q", seed, want)
	}
	// Its plugin registering late: refused either way, in other words as it registers first.
	in.Restart = &Restart{Kind: RestartReboot, Register: map[string]int{gpu: 99}}
	seed = restartFates(t, in).Fates[0]
	unhealthyHeld := "Allocate failed due to previously allocated devices are no longer healthy; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"
	if seed.Fate != FateRefused || seed.Message != noHealthyGPU || len(seed.WaitsOn) != 0 || seed.IfRegistered == nil ||
		seed.IfRegistered.Message != unhealthyHeld || seed.IfRegistered.StatusMessage != "Pod was rejected: "+unhealthyHeld {
		t.Errorf("seed holding an unhealthy GPU, plugin late: %+v (if registered %+v), want refused %q, and %q had it registered first", seed, seed.IfRegistered, noHealthyGPU, unhealthyHeld)
	}

	in = restartSeedCase(t, "v1.37.1")
	changed := in.Pods[0].DeepCopy()
	q := resource.MustParse("1")
	changed.Spec.Containers[0].Resources.Limits[gpu], changed.Spec.Containers[0].Resources.Requests[gpu] = q, q
	in.Pods[0] = changed
	for _, r := range []*Restart{{Kind: RestartReboot}, {Kind: RestartKubelet, Running: map[string]map[string]bool{"uid-seed-a": {"app": true}}}} {
		in.Restart = r
		seed := restartFates(t, in).Fates[0]
		if want := `Allocate failed due to pod "uid-seed-a" container "app" changed request for resource "nvidia.com/gpu" from 2 to 1, which is unexpected`; seed.Fate != FateRefused || seed.Message != want {
			t.Errorf("%s: seed asking 1 GPU of its 2: %+v, want refused %q", r.Kind, seed, want)
		}
	}
	// Under restricted the device manager hints nothing for a container holding another count
	// than it asks (topology_hints.go:56-59), so the topology manager refuses it first; hints
	// from the devices held would fit 1 GPU and reach the allocation's error instead.
	cfg := *in.Config
	cfg.TopologyManagerPolicy = "restricted"
	in.Config = &cfg
	in.Restart = &Restart{Kind: RestartReboot}
	if seed := restartFates(t, in).Fates[0]; seed.Fate != FateRefused || seed.Reason != "TopologyAffinityError" {
		t.Errorf("restricted: seed asking 1 GPU of its 2: %+v, want refused TopologyAffinityError", seed)
	}
}

// Before #116376 (1.25.10, 1.26.5, 1.27.2) a container holding its devices needs nothing: after
// a reboot the seed comes back whatever its plugin, and p, short of registered devices, reads
// the older texts.
func TestRestartBeforeHealthChecks(t *testing.T) {
	for kubelet, old := range map[string]bool{"v1.27.1": true, "v1.27.2": false, "v1.26.4": true, "v1.26.5": false, "v1.25.9": true, "v1.25.10": false} {
		in := restartSeedCase(t, kubelet)
		in.Restart = &Restart{Kind: RestartReboot, Register: map[string]int{gpu: 99}}
		res := restartFates(t, in)
		seed, p := res.Fates[0], res.Fates[1]
		if got := seed.Fate == FateComesBack; got != old {
			t.Errorf("%s: seed %s %q, want back=%v", kubelet, seed.Fate, seed.Message, old)
		}
		want := noHealthyGPU
		if old {
			want = "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
		}
		if p.Fate != FateWaitsOnPlugin || p.Message != want {
			t.Errorf("%s: pod p %s %q, want waiting on the plugin: %q", kubelet, p.Fate, p.Message, want)
		}
	}
	// A plugin gone past its grace period: the checkpoint holds the seed's GPU entries but no
	// longer registers the resource; the older text.
	c, ok := restartSet.Case("s2n2c4t2__plugin-gone-5min__gpu1__gone__cpu-static__tm-none-container__mem-None")
	if !ok {
		t.Fatal("no plugin-gone case")
	}
	for kubelet, want := range map[string]string{"v1.37.1": "cannot", "v1.27.1": "can't"} {
		in := caseInput(t, c, "v1.37.1", true)
		in.Kubelet.Version = version.MustParseSemantic(kubelet)
		got, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		if msg := "Allocate failed due to " + want + " allocate unregistered device nvidia.com/gpu, which is unexpected"; got.Admissions[0].Message != msg {
			t.Errorf("%s: %q, want %q", kubelet, got.Admissions[0].Message, msg)
		}
	}
}
