package nodestate

import (
	"context"
	"errors"
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
	dir := filepath.Join(repo, "examples/admit-node")
	dc, _, err := LoadDoctorConfig(filepath.Join(dir, "machine.json"), filepath.Join(dir, "kubelet-config.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
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
	pciAsked := false
	exec := fakeNodeExec(map[string][]byte{"device-plugins/kubelet_internal_checkpoint": cp}, func(cmd []string) string {
		if !strings.Contains(strings.Join(cmd, " "), machine.PCIScript) {
			return ""
		}
		pciAsked = true
		return machine.PCIHeader + "\n0000:3b:02.0/numa_node:0\n0000:3b:02.1/numa_node:0\n0000:af:02.0/numa_node:1\n0000:af:02.1/numa_node:1\n0000:00:1f.0/numa_node:-1\n" + machine.PCIEnd + "\n"
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
	if !pciAsked || res.Admit == nil || res.Admit.Err != nil {
		t.Fatalf("PCI dump asked %v; admit %+v", pciAsked, res.Admit)
	}
	want := map[string]string{"intel.com/sriov_netdevice": TopologyFromSysfs}
	for r, src := range res.Admit.DeviceTopology {
		if w, ok := want[r]; ok && src != w || !ok && !strings.Contains(src, "is not a PCI address") {
			t.Errorf("%s: topology %q", r, src)
		}
	}
	// Restricted, pod scope: the two free VFs of NUMA node 0 (af:02.1 is held, af:02.0 alone on node 1).
	vfs := res.Admit.Admissions[0]
	if !vfs.Admitted || !reflect.DeepEqual(vfs.Containers[0].Devices, map[string][]string{"intel.com/sriov_netdevice": {"0000:3b:02.0", "0000:3b:02.1"}}) {
		t.Errorf("vfs: admitted %v %s, containers %+v", vfs.Admitted, vfs.Message, vfs.Containers)
	}
	if gpu := res.Admit.Admissions[1]; len(gpu.Unreplayed) != 1 || !strings.Contains(gpu.Unreplayed[0], "nvidia.com/gpu not judged") {
		t.Errorf("vfs-and-gpu: unreplayed %q", gpu.Unreplayed)
	}
	if notes := strings.Join(res.Admit.Notes, "\n"); !strings.Contains(notes, "devices intel.com/sriov_netdevice: 4, IDs from the device checkpoint") ||
		!strings.Contains(notes, "devices nvidia.com/gpu: not judged") {
		t.Errorf("notes:\n%s", notes)
	}
}
