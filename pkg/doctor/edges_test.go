package doctor

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// TestConfigFixFound: a kubelet config changed from the one a start vector's state was written
// with, in ways no vector holds; doctor must find the config change that undoes it (no other
// way being offered first), and that change, set as written, must let the replayed kubelet
// start. Each fix names every field it sets with its whole new value.
func TestConfigFixFound(t *testing.T) {
	const (
		cpuCase    = "cpu-s2c8t2n2-healthy-assigned__w1.37.1"                              // static, kubeReserved cpu 1, pod-a on 15,31
		strictCase = "cpu-s1c4t2-opt-strict-reservation-default-without-reserved__w1.37.1" // strict-cpu-reservation, kubeReserved cpu 1
		memCase    = "mem-n1-healthy-assigned__w1.37.1"                                    // Static, reservedMemory 1124Mi = systemReserved 1Gi + eviction 100Mi
	)
	for _, tc := range []struct {
		what, name string
		edit       func(*replay.KubeletConfig)
		want       string
		noFile     string // the case's checkpoint left out (the kubelet then writes a fresh one)
	}{
		// Without a file whose policy to go back to, the policy's spelling is the fix.
		{"CPU policy capitalised", cpuCase, func(c *replay.KubeletConfig) { c.CPUManagerPolicy = "Static" },
			`{"cpuManagerPolicy":"static"}`, "cpu_manager_state"},
		{"memory policy None over a Static state", memCase, func(c *replay.KubeletConfig) { c.MemoryManagerPolicy = "None" },
			`{"memoryManagerPolicy":"Static"}`, ""},
		{"memory policy in lower case", memCase, func(c *replay.KubeletConfig) { c.MemoryManagerPolicy = "static" },
			`{"memoryManagerPolicy":"Static"}`, "memory_manager_state"},
		// The CPU reservation too big: one CPU in kubeReserved, and none left in systemReserved.
		{"systemReserved cpu beyond the machine", cpuCase, func(c *replay.KubeletConfig) { c.SystemReserved = map[string]string{"cpu": "100", "memory": "1Gi"} },
			`{"kubeReserved":{"cpu":"1"},"systemReserved":{"memory":"1Gi"}}`, ""},
		// More CPUs reserved than the default set holds: only dropping the list works.
		{"reservedSystemCPUs onto the assignment", cpuCase, func(c *replay.KubeletConfig) { c.ReservedSystemCPUs = "0-30" },
			`{"reservedSystemCPUs":""}`, ""},
		// strict-cpu-reservation: the CPUs the default set lacks are the reserved ones.
		{"strict reservation grown", strictCase, func(c *replay.KubeletConfig) { c.KubeReserved = map[string]string{"cpu": "2"} },
			`{"reservedSystemCPUs":"0"}`, ""},
		// kubeReserved memory now covers what systemReserved did: systemReserved memory 0.
		{"kubeReserved memory added", memCase, func(c *replay.KubeletConfig) { c.KubeReserved = map[string]string{"memory": "1Gi"} },
			`{"reservedMemory":[{"numaNode":0,"limits":{"memory":"1124Mi"}}],"systemReserved":{"memory":"0"}}`, ""},
		// systemReserved keeps its other resources.
		{"systemReserved memory doubled", memCase, func(c *replay.KubeletConfig) { c.SystemReserved = map[string]string{"cpu": "1", "memory": "2Gi"} },
			`{"reservedMemory":[{"numaNode":0,"limits":{"memory":"1124Mi"}}],"systemReserved":{"cpu":"1","memory":"1Gi"}}`, ""},
	} {
		at := tc.what + " (" + tc.name + ")"
		r := diagnoseCaseWith(t, tc.name, decode.HomeKubelet, func(in *Input) {
			tc.edit(in.Config)
			in.Files = slices.DeleteFunc(in.Files, func(r *decode.Report) bool { return r.File == tc.noFile })
		})
		if r.KubeletStart.Starts {
			t.Errorf("%s: starts; the edit breaks nothing", at)
			continue
		}
		fix := r.KubeletStart.Fix
		if fix == nil || string(fix.Config) != tc.want {
			b, _ := json.Marshal(fix)
			t.Errorf("%s (%s): fix %s, want config %s", at, r.KubeletStart.Error, b, tc.want)
			continue
		}
		if !fix.Verified || !replayEditedStarts(t, at, tc.name, decode.HomeKubelet, tc.edit, fix.Config, tc.noFile) {
			t.Errorf("%s: fix %s (verified %v) does not start when set as written", at, fix.Config, fix.Verified)
		}
	}
}

// TestRootDirInFixes: the paths doctor tells the user to delete are under the kubelet's root
// dir, the default one when it is not given.
func TestRootDirInFixes(t *testing.T) {
	for _, root := range []string{"", "/data/kubelet"} {
		r := diagnoseCaseWith(t, "cpu-s2c8t2n2-policy-static-to-none__w1.37.1", decode.HomeKubelet, func(in *Input) { in.RootDir = root })
		want := "/var/lib/kubelet/cpu_manager_state"
		if root != "" {
			want = root + "/cpu_manager_state"
		}
		if fix := r.KubeletStart.Fix; fix == nil || fix.Delete != want || !strings.Contains(fix.Text, "delete "+want) {
			t.Errorf("root dir %q: fix %+v, want to delete %s", root, fix, want)
		}
	}
}

// TestRefusedFileFindings: a refused file is one error finding naming the judging kubelet and
// what it does then, except where the start prediction already says that refusal.
func TestRefusedFileFindings(t *testing.T) {
	refused := func(reader string, effect *decode.Refusal) *decode.Report {
		return &decode.Report{File: "device-plugins/kubelet_internal_checkpoint", Kind: decode.KindDevices, Verdict: decode.Corrupt,
			Reader: reader, Error: "checkpoint is corrupted", Refused: effect}
	}
	carryOn := &decode.Refusal{KubeletStarts: true, Effect: "the device manager continues without it"}
	for _, tc := range []struct {
		what string
		rep  *decode.Report
		want string
	}{
		{"judged by a release", refused("v1.37.1", carryOn),
			"kubelet v1.37.1 refuses this file (corrupt), so the device manager continues without it: checkpoint is corrupted"},
		{"no release named", refused("", carryOn), "the kubelet refuses this file (corrupt), so the device manager continues without it"},
		{"no effect known", refused("v1.37.1", nil), "so it is not a file the kubelet restores at start: checkpoint is corrupted"},
	} {
		// Beside a CPU state the kubelet will not start with: the device file is still said.
		r := diagnoseCaseWith(t, "cpu-s2c8t2n2-policy-static-to-none__w1.37.1", decode.HomeKubelet, func(in *Input) {
			in.Files = append(in.Files, tc.rep)
		})
		if r.KubeletStart.Starts || !hasFinding(r, "file-refused", tc.want) {
			t.Errorf("%s: no file-refused finding saying %q: %+v", tc.what, tc.want, r.Findings)
		}
	}
	// A CPU state the kubelet refuses: the start finding says it, and only it.
	r := diagnoseCaseWith(t, "cpu-s2c8t2n2-healthy-assigned__w1.37.1", decode.HomeKubelet, func(in *Input) {
		cpu := *fileOf(in.Files, decode.KindCPU)
		cpu.Verdict, cpu.Error = decode.Corrupt, "could not restore state from checkpoint: checkpoint is corrupted"
		in.Files = []*decode.Report{&cpu}
	})
	if r.KubeletStart.Starts || !strings.Contains(r.KubeletStart.Error, "checkpoint is corrupted") || hasFinding(r, "file-refused", "") {
		t.Errorf("the refusal the start prediction reports is said twice: %+v", r.Findings)
	}
}

// TestStaleContainersNeedALivePod: a container gone from a pod is said for a pod the API still
// has, or when the pods are not known but its containers are; a pod gone from the API is a
// stale pod, not a list of stale containers.
func TestStaleContainersNeedALivePod(t *testing.T) {
	containers := map[string]map[string]bool{"pod-a": {"sidecar": true}}
	for _, tc := range []struct {
		what      string
		live      map[string]bool
		container bool
	}{
		{"pods unknown", nil, true},
		{"pod live", map[string]bool{"pod-a": true}, true},
		{"pod gone", map[string]bool{}, false},
	} {
		r := diagnoseCaseWith(t, "cpu-s2c8t2n2-healthy-assigned__w1.37.1", decode.HomeKubelet, func(in *Input) {
			in.LivePods, in.LiveContainers = tc.live, containers
		})
		if got := hasFinding(r, "stale-container", "no container app"); got != tc.container {
			t.Errorf("%s: stale container said %v, want %v: %+v", tc.what, got, tc.container, r.Findings)
		}
	}
}

// TestMemoryOverNodeBoundary: a NUMA node assigned exactly its allocatable memory is full, not
// overcommitted; one byte more is.
func TestMemoryOverNodeBoundary(t *testing.T) {
	const allocatable = 1 << 30
	for _, size := range []uint64{allocatable, allocatable + 1} {
		rep := memReport(map[string]map[string][]decode.MemoryBlock{"p": {"c": {{NUMAAffinity: []int{0}, Type: "memory", Size: size}}}})
		rep.Decoded.Memory.MachineState = map[int]*decode.NUMANodeMemory{0: {MemoryMap: map[string]*decode.MemoryTable{"memory": {Allocatable: allocatable}}}}
		r := Diagnose(Input{Files: []*decode.Report{rep}})
		if got, want := hasFinding(r, "memory-over-node", "NUMA node 0"), size > allocatable; got != want {
			t.Errorf("%d bytes on a node of %d allocatable: over-node said %v, want %v", size, allocatable, got, want)
		}
	}
}

// TestDeviceFindingsOrder: the devices of an entry are judged NUMA node by NUMA node, in order.
func TestDeviceFindingsOrder(t *testing.T) {
	perNUMA := map[int64][]string{1: {"gpu-1"}, 0: {"gpu-0"}, 2: {"gpu-2"}}
	devs := &decode.DeviceState{PodDeviceEntries: []decode.DeviceEntry{
		{PodUID: podA, ContainerName: "c", ResourceName: "example.com/gpu", DevicesPerNUMA: perNUMA},
		{PodUID: podB, ContainerName: "c", ResourceName: "example.com/gpu", DevicesPerNUMA: perNUMA},
	}}
	r := Diagnose(Input{Files: []*decode.Report{{Kind: decode.KindDevices, File: "device-plugins/kubelet_internal_checkpoint", Verdict: decode.Valid,
		Decoded: decode.Model{Devices: devs}}}})
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Message)
	}
	want := []string{
		"device gpu-0 of example.com/gpu is also held by " + podA + "/c",
		"device gpu-1 of example.com/gpu is also held by " + podA + "/c",
		"device gpu-2 of example.com/gpu is also held by " + podA + "/c",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLeakedPodLevelCPUs: CPUs held at pod level (podEntries) for a pod none of whose containers
// runs are leaked like a container's (an empty one holds nothing), and the fix depends on
// whether the API was asked.
func TestLeakedPodLevelCPUs(t *testing.T) {
	ctrs := []ctrCgroup{{"b", "web", "w1", "0", "0"}}
	for _, tc := range []struct {
		live map[string]bool
		fix  string
	}{
		{nil, "if the pod is gone from the API server, the kubelet frees them at its first reconcile"},
		{map[string]bool{"b": true}, "the pod is gone from the API server: the kubelet frees them at its next reconcile"},
	} {
		rep := cpuReport("0", map[string]map[string]string{"gone": {"x": "1"}})
		rep.Decoded.CPU.PodEntries = map[string]string{"gone": "2-3", "empty": ""}
		r := Diagnose(Input{Files: []*decode.Report{rep}, LivePods: tc.live, Cgroups: cgroupNode(t, ctrs)})
		var leaked []Finding
		for _, f := range r.Findings {
			if f.Check == checkCPUsLeaked {
				leaked = append(leaked, f)
			}
		}
		if len(leaked) != 1 || leaked[0].Entry != "pod gone" ||
			!strings.Contains(leaked[0].Message, "CPUs 1-3 are held for pod gone") || !strings.HasPrefix(leaked[0].Fix, tc.fix) {
			t.Errorf("live %v: leaked findings %+v, want pod gone holding 1-3 with fix %q", tc.live, leaked, tc.fix)
		}
	}
}

// TestNodeFactsQuiet: what is not there is not reported: a resource registered with no device,
// a DRA state without claims, an unhealthy device no claim uses.
func TestNodeFactsQuiet(t *testing.T) {
	in := healthyNode()
	ds := fileOf(in.Files, decode.KindDevices).Decoded.Devices
	ds.RegisteredDevices["example.com/fpga"] = nil
	if r := Diagnose(in); len(r.Findings) != 0 {
		t.Errorf("a resource registered without devices: %+v", r.Findings)
	}

	in = healthyNode()
	fileOf(in.Files, decode.KindDRA).Decoded.DRA.Claims = nil
	in.Node.Claims = nil
	for _, s := range Diagnose(in).Skipped {
		if strings.Contains(s, "ResourceClaims") {
			t.Errorf("no prepared claim, yet skipped %q", s)
		}
	}

	in = healthyNode()
	h := fileOf(in.Files, decode.KindDRAHealth).Decoded.DRAHealth
	h.Drivers["gpu.example.com"]["node-1/gpu-0"] = decode.DRADeviceHealth{PoolName: "node-1", DeviceName: "gpu-0", Health: "Unhealthy"}
	r := Diagnose(in)
	if len(r.Findings) != 1 || strings.Contains(r.Findings[0].Message, "claims prepared") || strings.Contains(r.Findings[0].Fix, "move the pods") {
		t.Errorf("an unhealthy device no claim uses: %+v", r.Findings)
	}
}

// TestSkippedSaysWhatIsUnknown: the checks that need the machine or the API's pods are named as
// skipped exactly when those are unknown.
func TestSkippedSaysWhatIsUnknown(t *testing.T) {
	const noMachine, noPods = "CPUs and NUMA nodes outside the machine: no machine", "stale entries (pods gone from the API): the live pods are unknown"
	for _, known := range []bool{false, true} {
		r := diagnoseCaseWith(t, "cpu-s2c8t2n2-healthy-assigned__w1.37.1", decode.HomeKubelet, func(in *Input) {
			if known {
				in.LivePods = map[string]bool{"pod-a": true}
			} else {
				in.Machine = nil
			}
		})
		if slices.Contains(r.Skipped, noMachine) == known || slices.Contains(r.Skipped, noPods) == known {
			t.Errorf("machine and pods known %v: skipped %q", known, r.Skipped)
		}
	}
}

// TestPodLevelCPUOverlap: CPUs held at pod level (podEntries) conflict with another pod's
// container like a container's own, and a set that does not parse is said as a container's is.
func TestPodLevelCPUOverlap(t *testing.T) {
	rep := cpuReport("0-1", map[string]map[string]string{"a": {"app": "2-3"}})
	rep.Decoded.CPU.PodEntries = map[string]string{"b": "3-4", "c": "x"}
	r := Diagnose(Input{Files: []*decode.Report{rep}})
	if !hasFinding(r, "cpu-overlap", "exclusive CPUs 3 are also assigned to a/app") || !hasFinding(r, "cpu-unparsable", `cpuset "x" does not parse`) || len(r.Findings) != 2 {
		t.Errorf("findings %+v, want pod b's CPU 3 also assigned to a/app, and pod c's set unparsable", r.Findings)
	}
}
