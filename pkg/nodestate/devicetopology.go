package nodestate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Where a resource's devices and their NUMA nodes came from (admit's deviceTopology).
const (
	TopologyFromFile  = "--devices file"
	TopologyFromSysfs = "sysfs"
	// TopologyNotNeeded: under topologyManagerPolicy none the device manager takes devices
	// whatever their NUMA nodes, so the replay needs only their IDs and health.
	TopologyNotNeeded = "not read (topologyManagerPolicy none: the device manager takes devices whatever their NUMA nodes)"
	// TopologyNotRegistered: the node's status keeps a resource its device manager dropped
	// (capacity 0 after the plugin's grace period) that the checkpoint no longer lists: no
	// plugin serves it, the device manager leaves it alone, and the node-resource predicate
	// refuses a pod asking for it.
	TopologyNotRegistered = "not registered (the device checkpoint does not list it, the node's status counts 0)"
	// TopologyNoDevices: registered with no device (its plugin gone, within its grace period,
	// or not back since the kubelet restarted): the device manager's, nothing to place.
	TopologyNoDevices = "no devices (registered: its plugin gone, or not back since the kubelet started)"
	// TopologyNotKnown starts the reason a resource is not judged.
	TopologyNotKnown = "not known: "
)

// nodeDevices is what a node's device manager would see: each resource's devices (the plugins'
// ListAndWatch), the resources whose devices cannot be known and why, and where each came from.
type nodeDevices struct {
	plugins   map[string][]replay.Device
	notJudged map[string]string
	sources   map[string]string
}

// nodeDeviceInput is everything the join reads; each nil when not read.
type nodeDeviceInput struct {
	// file is --devices FILE: its resources are taken as given.
	file map[string][]replay.Device
	// checkpoint is the device checkpoint decoded (valid), or nil.
	checkpoint *decode.DeviceState
	// status is the node's status counts of its extended resources (live, or recorded by collect).
	status *fetch.DeviceStatus
	// pci is each PCI device's NUMA node (sysfs), or pciErr why not.
	pci    map[string]int
	pciErr error
	// topologyNone: topologyManagerPolicy none.
	topologyNone bool
}

// joinNodeDevices builds the device plugins' devices of a node that no plugin can be asked
// about from the debug pod (its image has no gRPC client for the PodResources socket):
//   - IDs and health: the kubelet's device checkpoint lists each resource's healthy devices
//     (writeCheckpoint writes healthyDevices, after every plugin update); the node's status
//     counts them (allocatable) and the unhealthy ones (capacity minus allocatable). The two
//     must agree, or one of them is older than the plugin's last update.
//   - NUMA nodes: sysfs's numa_node for a device whose ID is a PCI address, as device plugins
//     that name devices by address (SR-IOV, most NIC and accelerator plugins) report it.
//
// A resource whose devices cannot all be known is not judged, with the reason: unhealthy
// devices (their IDs are in no file, and their NUMA nodes count in the device manager's
// hints), IDs that are not PCI addresses, an address sysfs does not list. --devices FILE
// resources are taken as given. Nil: no device known on the node (no file, no node status):
// the device manager is not replayed.
func joinNodeDevices(in nodeDeviceInput) *nodeDevices {
	out := &nodeDevices{plugins: map[string][]replay.Device{}, notJudged: map[string]string{}, sources: map[string]string{}}
	for r, devs := range in.file {
		out.plugins[r], out.sources[r] = devs, TopologyFromFile
	}
	if in.status == nil {
		if in.file == nil {
			return nil
		}
		return out
	}
	resources := map[string]bool{}
	for r := range in.status.Capacity {
		resources[r] = true
	}
	if in.checkpoint != nil {
		for r := range in.checkpoint.RegisteredDevices {
			resources[r] = true
		}
	}
	if in.file == nil && len(resources) == 0 {
		return nil
	}
	for _, r := range slices.Sorted(maps.Keys(resources)) {
		if _, given := in.file[r]; given {
			continue
		}
		devs, source, why := checkpointDevices(r, in)
		switch {
		case why != "":
			out.notJudged[r], out.sources[r] = why, TopologyNotKnown+why
		case source == TopologyNotRegistered:
			out.sources[r] = source
		default:
			out.plugins[r], out.sources[r] = devs, source
		}
	}
	return out
}

// checkpointDevices is one resource's devices from the checkpoint, the node's status and sysfs,
// or why they cannot be known.
func checkpointDevices(resource string, in nodeDeviceInput) ([]replay.Device, string, string) {
	if in.checkpoint == nil {
		return nil, "", "the device checkpoint (device-plugins/kubelet_internal_checkpoint) was not read or is not valid, so the devices' IDs are not known; give them with --devices FILE"
	}
	registered, listed := in.checkpoint.RegisteredDevices[resource]
	ids := slices.Sorted(slices.Values(registered))
	healthy, all := int(in.status.Allocatable[resource]), int(in.status.Capacity[resource])
	if !listed {
		if all == 0 {
			return nil, TopologyNotRegistered, ""
		}
		return nil, "", fmt.Sprintf("the node's status counts %d devices the device checkpoint does not list: the checkpoint is older than the plugin's registration (read again)", all)
	}
	if healthy != len(ids) {
		return nil, "", fmt.Sprintf("the device checkpoint lists %d healthy devices, the node's status %d: one is older than the plugin's last update (read again)", len(ids), healthy)
	}
	if all > healthy && !in.topologyNone {
		return nil, "", fmt.Sprintf("%d of its %d devices are unhealthy: the kubelet records the IDs of healthy devices only, and the NUMA nodes of all count in its hints", all-healthy, all)
	}
	if len(ids) == 0 {
		return []replay.Device{}, TopologyNoDevices, ""
	}
	devices := make([]replay.Device, 0, len(ids))
	for _, id := range ids {
		devices = append(devices, replay.Device{ID: id, Health: replay.DeviceHealthy})
	}
	placed, why := pciTopology(devices, in)
	switch {
	case why == "":
		return placed, TopologyFromSysfs, ""
	case in.topologyNone:
		return devices, TopologyNotNeeded, ""
	}
	return nil, "", why
}

// pciTopology is devices, each with its NUMA node from sysfs (none for numa_node -1, as device
// plugins leave such a device without topology), or why that cannot be known.
func pciTopology(devices []replay.Device, in nodeDeviceInput) ([]replay.Device, string) {
	for _, d := range devices {
		if !machine.IsPCIAddress(d.ID) {
			return nil, fmt.Sprintf("device ID %q is not a PCI address: its NUMA node is known to its device plugin only (the kubelet's PodResources API, which the debug pod cannot reach); give the devices with --devices FILE", clipID(d.ID))
		}
	}
	if in.pci == nil {
		why := "not read"
		if in.pciErr != nil {
			why = in.pciErr.Error()
		}
		return nil, "the PCI devices' NUMA nodes (sysfs): " + why
	}
	out := make([]replay.Device, 0, len(devices))
	for _, d := range devices {
		node, ok := in.pci[d.ID]
		if !ok {
			return nil, fmt.Sprintf("device %s is not in the node's /sys/bus/pci/devices", d.ID)
		}
		if node != machine.NoNUMANode {
			d.Topology = &replay.DeviceTopology{Nodes: []replay.DeviceNUMANode{{ID: int64(node)}}}
		}
		out = append(out, d)
	}
	return out, ""
}

// clipID keeps a device ID from a node's file short in a message.
func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "..."
	}
	return strings.ToValidUTF8(id, "?")
}

// deviceTopologyNotes are the lines that say, per resource, where its devices came from.
func deviceTopologyNotes(d *nodeDevices) []string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(d.sources)) {
		src := d.sources[r]
		switch {
		case strings.HasPrefix(src, TopologyNotKnown):
			out = append(out, fmt.Sprintf("devices %s: not judged: %s", r, strings.TrimPrefix(src, TopologyNotKnown)))
		case src == TopologyFromFile:
			out = append(out, fmt.Sprintf("devices %s: %d from --devices FILE, with their health and NUMA nodes as given", r, len(d.plugins[r])))
		case src == TopologyNotRegistered, src == TopologyNoDevices:
			out = append(out, fmt.Sprintf("devices %s: %s", r, src))
		default:
			out = append(out, fmt.Sprintf("devices %s: %d, IDs from the device checkpoint, healthy as the node's status counts them (the kubelet records healthy devices only); NUMA nodes %s",
				r, len(d.plugins[r]), map[string]string{TopologyFromSysfs: "from sysfs (/sys/bus/pci/devices/<ID>/numa_node)", TopologyNotNeeded: TopologyNotNeeded}[src]))
		}
	}
	return out
}
