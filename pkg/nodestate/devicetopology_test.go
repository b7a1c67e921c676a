package nodestate

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
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
		"no checkpoint":        {nodeDeviceInput{status: counts(2, 2), pci: pci}, "device checkpoint"},
		"checkpoint is behind": {nodeDeviceInput{checkpoint: cp, status: counts(3, 3), pci: pci}, "lists 2 healthy devices, the node's status 3"},
		"unhealthy devices":    {nodeDeviceInput{checkpoint: cp, status: counts(3, 2), pci: pci}, "1 of its 3 devices are unhealthy"},
		"no PCI dump":          {nodeDeviceInput{checkpoint: cp, status: counts(2, 2), pciErr: errors.New("PCI dump: cut short")}, "cut short"},
		"address not in sysfs": {nodeDeviceInput{checkpoint: cp, status: counts(2, 2), pci: map[string]int{"0000:3b:02.0": 0}}, "0000:af:02.0 is not in"},
	} {
		got := joinNodeDevices(c.in)
		if _, ok := got.plugins[vf]; ok || !strings.Contains(got.notJudged[vf], c.want) {
			t.Errorf("%s: plugins %v, not judged %q, want it to say %q", name, got.plugins[vf], got.notJudged[vf], c.want)
		}
	}
	// Nothing known of the node's devices: the device manager is not replayed.
	if got := joinNodeDevices(nodeDeviceInput{checkpoint: cp, pci: pci}); got != nil {
		t.Errorf("without the node's status: %+v, want nil", got)
	}
	if got := joinNodeDevices(nodeDeviceInput{status: &fetch.DeviceStatus{}}); got != nil {
		t.Errorf("a node without devices: %+v, want nil", got)
	}
}
