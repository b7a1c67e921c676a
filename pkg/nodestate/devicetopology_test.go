package nodestate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

func onNUMA(id string, node int64) replay.Device {
	return replay.Device{ID: id, Health: replay.DeviceHealthy, Topology: &replay.DeviceTopology{Nodes: []replay.DeviceNUMANode{{ID: node}}}}
}

func TestJoinNodeDevices(t *testing.T) {
	vf := "intel.com/sriov"
	pci := map[string]int{"0000:3b:02.0": 0, "0000:3b:02.1": 0, "0000:af:02.0": 1, "0000:00:1f.0": -1}
	cp := &decode.DeviceState{RegisteredDevices: map[string][]string{
		vf:                {"0000:af:02.0", "0000:3b:02.1", "0000:3b:02.0"},
		"nvidia.com/gpu":  {"GPU-8d2a4f31", "GPU-11aa0c2e"},
		"example.com/nic": {"0000:00:1f.0"},
	}}
	status := &fetch.DeviceStatus{
		Capacity:    map[string]int64{vf: 3, "nvidia.com/gpu": 2, "example.com/nic": 1},
		Allocatable: map[string]int64{vf: 3, "nvidia.com/gpu": 2, "example.com/nic": 1},
	}
	got := joinNodeDevices(nodeDeviceInput{checkpoint: cp, status: status, pci: pci})
	wantVF := []replay.Device{onNUMA("0000:3b:02.0", 0), onNUMA("0000:3b:02.1", 0), onNUMA("0000:af:02.0", 1)}
	if !reflect.DeepEqual(got.plugins[vf], wantVF) || got.sources[vf] != TopologyFromSysfs {
		t.Errorf("PCI-addressed VFs: %+v from %q, want %+v from sysfs", got.plugins[vf], got.sources[vf], wantVF)
	}
	// numa_node -1: no NUMA affinity, as a plugin reports it.
	if want := []replay.Device{{ID: "0000:00:1f.0", Health: replay.DeviceHealthy}}; !reflect.DeepEqual(got.plugins["example.com/nic"], want) {
		t.Errorf("numa_node -1: %+v, want %+v", got.plugins["example.com/nic"], want)
	}
	// GPU UUIDs: not judged, and not handed to the device manager as if known.
	if _, ok := got.plugins["nvidia.com/gpu"]; ok || !strings.Contains(got.notJudged["nvidia.com/gpu"], "not a PCI address") ||
		!strings.HasPrefix(got.sources["nvidia.com/gpu"], TopologyNotKnown) {
		t.Errorf("GPU UUIDs: plugins %v, not judged %q, source %q", got.plugins["nvidia.com/gpu"], got.notJudged["nvidia.com/gpu"], got.sources["nvidia.com/gpu"])
	}

	// --devices FILE wins for its resources; the others still come from the node.
	file := map[string][]replay.Device{"nvidia.com/gpu": {onNUMA("GPU-8d2a4f31", 1), onNUMA("GPU-11aa0c2e", 0)}}
	got = joinNodeDevices(nodeDeviceInput{file: file, checkpoint: cp, status: status, pci: pci})
	if got.sources["nvidia.com/gpu"] != TopologyFromFile || len(got.notJudged) != 0 || got.sources[vf] != TopologyFromSysfs {
		t.Errorf("with --devices: sources %v, not judged %v", got.sources, got.notJudged)
	}

	// Under topology policy none the NUMA nodes do not count: the UUIDs are judged.
	got = joinNodeDevices(nodeDeviceInput{checkpoint: cp, status: status, pci: pci, topologyNone: true})
	if got.sources["nvidia.com/gpu"] != TopologyNotNeeded || len(got.plugins["nvidia.com/gpu"]) != 2 || got.plugins["nvidia.com/gpu"][0].Topology != nil {
		t.Errorf("policy none: %v from %q", got.plugins["nvidia.com/gpu"], got.sources["nvidia.com/gpu"])
	}
}

func TestJoinNodeDevicesNotJudged(t *testing.T) {
	vf := "intel.com/sriov"
	ids := []string{"0000:3b:02.0", "0000:af:02.0"}
	pci := map[string]int{"0000:3b:02.0": 0, "0000:af:02.0": 1}
	counts := func(capacity, allocatable int64) *fetch.DeviceStatus {
		return &fetch.DeviceStatus{Capacity: map[string]int64{vf: capacity}, Allocatable: map[string]int64{vf: allocatable}}
	}
	cp := &decode.DeviceState{RegisteredDevices: map[string][]string{vf: ids}}
	for name, c := range map[string]struct {
		in   nodeDeviceInput
		want string
	}{
		"no checkpoint":         {nodeDeviceInput{status: counts(2, 2), pci: pci}, "device checkpoint"},
		"not in the checkpoint": {nodeDeviceInput{checkpoint: &decode.DeviceState{}, status: counts(2, 2), pci: pci}, "counts 2 devices the device checkpoint does not list"},
		"checkpoint is behind":  {nodeDeviceInput{checkpoint: cp, status: counts(3, 3), pci: pci}, "lists 2 healthy devices, the node's status 3"},
		"unhealthy devices":     {nodeDeviceInput{checkpoint: cp, status: counts(3, 2), pci: pci}, "1 of its 3 devices are unhealthy"},
		"no PCI dump":           {nodeDeviceInput{checkpoint: cp, status: counts(2, 2), pciErr: errors.New("PCI dump: cut short")}, "cut short"},
		"address not in sysfs":  {nodeDeviceInput{checkpoint: cp, status: counts(2, 2), pci: map[string]int{"0000:3b:02.0": 0}}, "0000:af:02.0 is not in"},
	} {
		got := joinNodeDevices(c.in)
		if _, ok := got.plugins[vf]; ok || !strings.Contains(got.notJudged[vf], c.want) {
			t.Errorf("%s: plugins %v, not judged %q, want it to say %q", name, got.plugins[vf], got.notJudged[vf], c.want)
		}
	}
	// Dropped by the device manager after its plugin's grace period: the status still counts 0,
	// the checkpoint no longer lists it; not the device manager's (no made-up "no healthy devices").
	got := joinNodeDevices(nodeDeviceInput{checkpoint: &decode.DeviceState{RegisteredDevices: map[string][]string{}}, status: counts(0, 0), pci: pci})
	if _, ok := got.plugins[vf]; ok || got.notJudged[vf] != "" || got.sources[vf] != TopologyNotRegistered {
		t.Errorf("a dropped resource: plugins %v, not judged %q, source %q", got.plugins[vf], got.notJudged[vf], got.sources[vf])
	}
	// Registered with no device (its plugin gone, within the grace period): the device manager's.
	got = joinNodeDevices(nodeDeviceInput{checkpoint: &decode.DeviceState{RegisteredDevices: map[string][]string{vf: {}}}, status: counts(0, 0), pci: pci})
	if devs, ok := got.plugins[vf]; !ok || len(devs) != 0 || got.sources[vf] != TopologyNoDevices {
		t.Errorf("registered without devices: plugins %v (registered %v), source %q", devs, ok, got.sources[vf])
	}
	// Nothing known of the node's devices: the device manager is not replayed.
	if got := joinNodeDevices(nodeDeviceInput{checkpoint: cp, pci: pci}); got != nil {
		t.Errorf("without the node's status: %+v, want nil", got)
	}
	if got := joinNodeDevices(nodeDeviceInput{status: &fetch.DeviceStatus{}}); got != nil {
		t.Errorf("a node without devices: %+v, want nil", got)
	}
}

// On a live node admit reads the device checkpoint (kubelet-written: SR-IOV VFs by PCI address,
// GPUs by UUID, FPGAs by name), the node's status and every PCI device's NUMA node in the same
// exec, replays the VFs with their sysfs NUMA nodes, and says the others are not judged.
func TestAdmitDevicesLive(t *testing.T) {
	dc, _ := admitNode(t)
	cp, err := os.ReadFile(filepath.Join(repo, "testdata/kubelet/kubelet_internal_checkpoint/v1.37.1/multi-resource.json"))
	if err != nil {
		t.Fatal(err)
	}
	counts := corev1.ResourceList{"intel.com/sriov_netdevice": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("4"), "example.com/fpga": resource.MustParse("2"),
		corev1.ResourceCPU: resource.MustParse("30"), corev1.ResourceMemory: resource.MustParse("60Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Capacity:   counts, Allocatable: counts,
	}}
	pciAsked, nvidiaAsked := false, false
	exec := fakeNodeExec(map[string][]byte{"device-plugins/kubelet_internal_checkpoint": cp}, func(cmd []string) string {
		line := strings.Join(cmd, " ")
		if !strings.Contains(line, machine.PCIScript) {
			return ""
		}
		pciAsked, nvidiaAsked = true, strings.Contains(line, machine.NVIDIAScript)
		// The driver lists one GPU no plugin registers (GPU-0c0e...): the GPUs' NUMA nodes are the
		// checkpoint's, where every GPU is allocated.
		return machine.PCIHeader + "\n0000:3b:02.0/numa_node:0\n0000:3b:02.1/numa_node:0\n0000:af:02.0/numa_node:1\n0000:af:02.1/numa_node:1\n0000:00:1f.0/numa_node:-1\n" + machine.PCIEnd + "\n" +
			machine.NVIDIAHeader + "\n" + machine.NVIDIAEnd + "\n"
	})
	client := runningPodsClient(node)
	ask := func(name string, resources ...corev1.ResourceName) *corev1.Pod {
		q := corev1.ResourceList{}
		for _, r := range resources {
			q[r] = resource.MustParse("1")
		}
		q["intel.com/sriov_netdevice"] = resource.MustParse("2")
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: q, Limits: q}}}}}
	}
	pods := []*corev1.Pod{ask("vfs"), ask("vfs-and-gpu", "nvidia.com/gpu")}
	r, err := New(context.Background(), Config{AllNodes: true, Client: client, RESTConfig: &rest.Config{}, Exec: exec,
		Engines: Engines{Admit: &AdmitConfig{Machine: dc.Machine, KubeletConfig: dc.KubeletConfig, Pods: pods}}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, r)
	if !pciAsked || !nvidiaAsked || res.Admit == nil || res.Admit.Err != nil {
		t.Fatalf("PCI dump asked %v, NVIDIA's %v; admit %+v", pciAsked, nvidiaAsked, res.Admit)
	}
	// The held VF and every GPU (all allocated) from the checkpoint's NUMA keys; the free VFs
	// from sysfs; the FPGAs (fpga-1 held on no NUMA node, fpga-0 free) not known.
	want := map[string]string{"intel.com/sriov_netdevice": TopologyFromCheckpoint + " + " + TopologyFromSysfs, "nvidia.com/gpu": TopologyFromCheckpoint}
	for r, src := range res.Admit.DeviceTopology {
		if w, ok := want[r]; ok && src != w || !ok && !strings.Contains(src, "fpga-0 (not a PCI address") {
			t.Errorf("%s: topology %q", r, src)
		}
	}
	// Restricted, pod scope: the two free VFs of NUMA node 0 (af:02.1 is held, af:02.0 alone on node 1).
	vfs := res.Admit.Admissions[0]
	if !vfs.Admitted || !reflect.DeepEqual(vfs.Containers[0].Devices, map[string][]string{"intel.com/sriov_netdevice": {"0000:3b:02.0", "0000:3b:02.1"}}) {
		t.Errorf("vfs: admitted %v %s, containers %+v", vfs.Admitted, vfs.Message, vfs.Containers)
	}
	if gpu := res.Admit.Admissions[1]; len(gpu.Unreplayed) != 0 {
		t.Errorf("vfs-and-gpu: unreplayed %q", gpu.Unreplayed)
	}
	if notes := strings.Join(res.Admit.Notes, "\n"); !strings.Contains(notes, "devices intel.com/sriov_netdevice: 4, IDs from the device checkpoint; NUMA nodes: 1 from device checkpoint, 3 from sysfs") ||
		!strings.Contains(notes, "devices nvidia.com/gpu: 4, IDs from the device checkpoint; NUMA nodes: 4 from device checkpoint") ||
		!strings.Contains(notes, "devices example.com/fpga: not judged") {
		t.Errorf("notes:\n%s", notes)
	}
}

// A GPU node's devices as the plugins register them, each resource placed from the first
// source that knows it, never guessed. The node: three GPUs (NUMA 0, 1 and none in sysfs), an
// SR-IOV VF whose sysfs says NUMA 1.
func TestJoinNodeDevicesSources(t *testing.T) {
	const (
		u0  = "GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9" // 0000:19:00.0, NUMA 0, minor 0
		u1  = "GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001" // 0000:3b:00.0, NUMA 1, minor 1
		u2  = "GPU-5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b" // 0000:5d:00.0, numa_node -1, minor 2
		u9  = "GPU-99999999-9999-4999-8999-999999999999" // not the driver's
		mig = "MIG-4a5b6c7d-8e9f-5a0b-9c1d-2e3f4a5b6c7d"
		vf  = "0000:af:02.0"
		gpu = "nvidia.com/gpu"
	)
	nvidia := []machine.NVIDIAGPU{{UUID: u0, BusID: "0000:19:00.0", Minor: 0}, {UUID: u1, BusID: "0000:3b:00.0", Minor: 1}, {UUID: u2, BusID: "0000:5d:00.0", Minor: 2}}
	pci := map[string]int{"0000:19:00.0": 0, "0000:3b:00.0": 1, "0000:5d:00.0": -1, vf: 1, "0000:3b:02.0": 0}
	healthy := func(id string, nodes ...int64) replay.Device {
		d := replay.Device{ID: id, Health: replay.DeviceHealthy}
		if nodes != nil {
			d.Topology = topologyOf(nodes)
		}
		return d
	}
	unhealthy := func(id string, nodes ...int64) replay.Device {
		d := healthy(id, nodes...)
		d.Health = deviceUnhealthy
		return d
	}
	zeroNodes := healthy("sgx1")
	zeroNodes.Topology = &replay.DeviceTopology{Nodes: []replay.DeviceNUMANode{}}
	held := func(resource string, perNUMA map[int64][]string) decode.DeviceEntry {
		return decode.DeviceEntry{PodUID: "p", ContainerName: "c", ResourceName: resource, DevicesPerNUMA: perNUMA}
	}
	pr := func(groups ...machine.PodResourcesDevices) *machine.PodResources {
		return &machine.PodResources{Allocatable: groups}
	}
	for _, c := range []struct {
		name       string
		resource   string
		registered []string
		capacity   int64 // the node's status; allocatable is len(registered)
		allocated  []decode.DeviceEntry
		pr         *machine.PodResources
		noNVIDIA   bool
		// want: the devices and the resource's source; or a part of why it is not judged.
		want    []replay.Device
		source  string
		notKnow string
	}{
		{name: "UUIDs with topology and without (numa_node -1: none)", registered: []string{u0, u1, u2},
			want: []replay.Device{healthy(u1, 1), healthy(u2), healthy(u0, 0)}, source: TopologyFromNVIDIA},
		{name: "time-sliced replicas take their GPU's", registered: []string{u0 + "::0", u0 + "::1", u1 + "::0"},
			want: []replay.Device{healthy(u1+"::0", 1), healthy(u0+"::0", 0), healthy(u0+"::1", 0)}, source: TopologyFromNVIDIA},
		{name: "MIG without PodResources", registered: []string{mig}, notKnow: "a MIG device: the driver's procfs does not name its GPU"},
		{name: "MIG with PodResources", registered: []string{mig}, pr: pr(machine.PodResourcesDevices{Resource: gpu, IDs: []string{mig}, NUMANodes: []int64{1}}),
			want: []replay.Device{healthy(mig, 1)}, source: TopologyFromPodResources},
		{name: "MIG allocated: the checkpoint's node", registered: []string{mig}, allocated: []decode.DeviceEntry{held(gpu, map[int64][]string{1: {mig}})},
			want: []replay.Device{healthy(mig, 1)}, source: TopologyFromCheckpoint},
		{name: "MIG allocated on no node: NVIDIA's plugin sends none, never zero nodes", registered: []string{mig},
			allocated: []decode.DeviceEntry{held(gpu, map[int64][]string{-1: {mig}})}, want: []replay.Device{healthy(mig)}, source: TopologyFromCheckpoint},
		{name: "a UUID the driver does not list", registered: []string{u9}, notKnow: "the NVIDIA driver lists no such GPU"},
		{name: "the driver's GPUs not read", registered: []string{u0}, noNVIDIA: true, notKnow: "the NVIDIA driver's GPUs (procfs): not read"},
		{name: "GKE minors: numa_node -1 is none whatever --topology", registered: []string{"nvidia2"},
			want: []replay.Device{healthy("nvidia2")}, source: TopologyFromNVIDIA},
		{name: "GKE minors: --topology not shown", registered: []string{"nvidia0", "nvidia1"}, notKnow: "only when run with --topology"},
		{name: "GKE minors: an allocated GPU on its node shows --topology", registered: []string{"nvidia0", "nvidia1"},
			allocated: []decode.DeviceEntry{held(gpu, map[int64][]string{0: {"nvidia0"}})},
			want:      []replay.Device{healthy("nvidia0", 0), healthy("nvidia1", 1)}, source: TopologyFromCheckpoint + " + " + TopologyFromNVIDIA},
		{name: "GKE minors: an allocated GPU on no node shows it off", registered: []string{"nvidia0", "nvidia1"},
			allocated: []decode.DeviceEntry{held(gpu, map[int64][]string{-1: {"nvidia0"}})},
			want:      []replay.Device{healthy("nvidia0"), healthy("nvidia1")}, source: TopologyFromCheckpoint + " + " + TopologyFromNVIDIA},
		{name: "GKE MIG", registered: []string{"nvidia0/gi1"}, notKnow: "a MIG device"},
		{name: "AMD's {ID: -1} stays a topology: the resource is aligned", resource: "amd.com/gpu", registered: []string{"amdgpu_xcp_0"},
			pr:   pr(machine.PodResourcesDevices{Resource: "amd.com/gpu", IDs: []string{"amdgpu_xcp_0"}, NUMANodes: []int64{-1}}),
			want: []replay.Device{healthy("amdgpu_xcp_0", -1)}, source: TopologyFromPodResources},
		{name: "a device on two NUMA nodes, listed once per node", resource: "example.com/wide", registered: []string{"w0"},
			pr: pr(machine.PodResourcesDevices{Resource: "example.com/wide", IDs: []string{"w0"}, NUMANodes: []int64{1}},
				machine.PodResourcesDevices{Resource: "example.com/wide", IDs: []string{"w0"}, NUMANodes: []int64{0}}),
			want: []replay.Device{healthy("w0", 1, 0)}, source: TopologyFromPodResources},
		{name: "zero nodes: healthy, registered, left out of PodResources", resource: "intel.com/sgx", registered: []string{"sgx0", "sgx1"},
			pr:   pr(machine.PodResourcesDevices{Resource: "intel.com/sgx", IDs: []string{"sgx0"}}),
			want: []replay.Device{healthy("sgx0"), zeroNodes}, source: TopologyFromPodResources},
		{name: "zero nodes or {ID: -1}: the checkpoint cannot tell", resource: "intel.com/sgx", registered: []string{"sgx0"},
			allocated: []decode.DeviceEntry{held("intel.com/sgx", map[int64][]string{-1: {"sgx0"}})}, notKnow: "which is no topology, one of zero nodes or {ID: -1}"},
		{name: "PCI ID: sysfs says NUMA 1, its plugin sent none (PodResources wins)", resource: "intel.com/sriov", registered: []string{vf},
			pr:   pr(machine.PodResourcesDevices{Resource: "intel.com/sriov", IDs: []string{vf}}),
			want: []replay.Device{healthy(vf)}, source: TopologyFromPodResources},
		{name: "PCI ID: sysfs, an assumption", resource: "intel.com/sriov", registered: []string{vf},
			want: []replay.Device{healthy(vf, 1)}, source: TopologyFromSysfs},
		{name: "PCI IDs: an allocated VF on no node disproves sysfs for the pool", resource: "intel.com/sriov", registered: []string{vf, "0000:3b:02.0"},
			allocated: []decode.DeviceEntry{held("intel.com/sriov", map[int64][]string{-1: {vf}})}, notKnow: "its plugin does not follow the sysfs"},
		{name: "PodResources unreadable: the node's rules", registered: []string{u0, mig}, pr: &machine.PodResources{Error: "no PodResources socket"},
			notKnow: "no PodResources socket"},
		{name: "unhealthy GPU named by the driver's list", registered: []string{u0, u2}, capacity: 3,
			want: []replay.Device{healthy(u2), healthy(u0, 0), unhealthy(u1, 1)}, source: TopologyFromNVIDIA},
		{name: "unhealthy GPU beside PodResources", registered: []string{u0, u2}, capacity: 3,
			pr:   pr(machine.PodResourcesDevices{Resource: gpu, IDs: []string{u0}, NUMANodes: []int64{0}}, machine.PodResourcesDevices{Resource: gpu, IDs: []string{u2}}),
			want: []replay.Device{healthy(u2), healthy(u0, 0), unhealthy(u1, 1)}, source: TopologyFromPodResources + " + " + TopologyFromNVIDIA},
		{name: "unhealthy: the driver lists more GPUs than the status counts", registered: []string{u0}, capacity: 2,
			notKnow: "the NVIDIA driver lists 2 GPUs no resource has healthy, not 1"},
		{name: "unhealthy replicas are not GPUs one for one", registered: []string{u0 + "::0"}, capacity: 2, notKnow: "is not a whole NVIDIA GPU"},
		{name: "unhealthy, no driver list", registered: []string{u0}, capacity: 2, noNVIDIA: true, notKnow: "1 of its 2 devices are unhealthy"},
		{name: "PodResources lists a device the checkpoint does not", registered: []string{u0},
			pr:      pr(machine.PodResourcesDevices{Resource: gpu, IDs: []string{u0, u1}}),
			notKnow: "PodResources lists device " + u1 + " as healthy, the device checkpoint does not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.resource
			if r == "" {
				r = gpu
			}
			capacity := c.capacity
			if capacity == 0 {
				capacity = int64(len(c.registered))
			}
			in := nodeDeviceInput{
				checkpoint:   &decode.DeviceState{RegisteredDevices: map[string][]string{r: c.registered}, PodDeviceEntries: c.allocated},
				status:       &fetch.DeviceStatus{Capacity: map[string]int64{r: capacity}, Allocatable: map[string]int64{r: int64(len(c.registered))}},
				podResources: c.pr, pci: pci, nvidia: nvidia,
			}
			if c.noNVIDIA {
				in.nvidia = nil
			}
			got := joinNodeDevices(in)
			if c.notKnow != "" {
				if _, ok := got.plugins[r]; ok || !strings.Contains(got.notJudged[r], c.notKnow) || got.sources[r] != TopologyNotKnown+got.notJudged[r] ||
					!strings.Contains(got.notJudged[r], "--devices FILE") && !strings.Contains(got.notJudged[r], "read again") {
					t.Errorf("plugins %+v, not judged %q, want it to say %q and what would answer", got.plugins[r], got.notJudged[r], c.notKnow)
				}
				return
			}
			if !reflect.DeepEqual(got.plugins[r], c.want) || got.sources[r] != c.source || got.notJudged[r] != "" {
				t.Errorf("got %s from %q (%s)\nwant %s from %q", devicesText(got.plugins[r]), got.sources[r], got.notJudged[r], devicesText(c.want), c.source)
			}
		})
	}
}

func devicesText(devs []replay.Device) string {
	var b strings.Builder
	for _, d := range devs {
		fmt.Fprintf(&b, "%s/%s/%s ", d.ID, d.Health, map[bool]string{true: "nil", false: fmt.Sprint(d.Topology)}[d.Topology == nil])
	}
	return b.String()
}
