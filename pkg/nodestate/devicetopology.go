package nodestate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Where a resource's devices and their NUMA nodes came from (admit's deviceTopology). A resource
// whose devices came from several sources names each, joined by " + ", in this order.
const (
	TopologyFromFile = "--devices file"
	// TopologyFromPodResources: the kubelet's PodResources API (GetAllocatableResources), the
	// healthy devices with the NUMA nodes their plugin sent, which is what the device manager's
	// hints read; a healthy device it leaves out had a Topology of zero nodes.
	TopologyFromPodResources = "PodResources"
	// TopologyFromCheckpoint: an allocated device's NUMA nodes as the kubelet recorded them at
	// allocation (the device checkpoint's DevicesPerNUMA keys, the plugin's nodes).
	TopologyFromCheckpoint = "device checkpoint"
	// TopologyFromNVIDIA: the NVIDIA device plugins' own rule, replayed: the driver's GPU
	// (procfs: UUID or minor -> Bus Location), that address's sysfs numa_node, none below 0.
	TopologyFromNVIDIA = "NVIDIA driver"
	// TopologyFromSysfs: a PCI-addressed device's sysfs numa_node, which is what plugins that
	// name devices by address usually report: an assumption, the source text says so.
	TopologyFromSysfs = "sysfs (assumed: its plugin reports numa_node)"
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

// topologySources are the per-device sources in the order a resource's source names them.
var topologySources = []string{TopologyFromPodResources, TopologyFromCheckpoint, TopologyFromNVIDIA, TopologyFromSysfs}

// deviceUnhealthy is the device plugin API's pluginapi.Unhealthy.
const deviceUnhealthy = "Unhealthy"

// whatAnswers names the sources that know every device's NUMA nodes.
const whatAnswers = "PodResources (the node reader, --reader=binary) or --devices FILE would answer it"

// nodeDevices is what a node's device manager would see: each resource's devices (the plugins'
// ListAndWatch), the resources whose devices cannot be known and why, and where each came from.
type nodeDevices struct {
	plugins   map[string][]replay.Device
	notJudged map[string]string
	sources   map[string]string
	// counts are, per resource, how many devices each source placed, and how many are unhealthy
	// (key deviceUnhealthy), for the notes.
	counts map[string]map[string]int
}

// nodeDeviceInput is everything the join reads; each nil when not read.
type nodeDeviceInput struct {
	// file is --devices FILE: its resources are taken as given.
	file map[string][]replay.Device
	// checkpoint is the device checkpoint decoded (valid), or nil.
	checkpoint *decode.DeviceState
	// status is the node's status counts of its extended resources (live, or recorded by collect).
	status *fetch.DeviceStatus
	// podResources is the kubelet's PodResources API as the node reader read it (its Error says
	// why it could not), or podResourcesErr why its section is not there or not valid.
	podResources    *machine.PodResources
	podResourcesErr error
	// pci is each PCI device's NUMA node (sysfs), or pciErr why not.
	pci    map[string]int
	pciErr error
	// nvidia is the NVIDIA driver's GPUs (empty: no driver), or nvidiaErr why not known.
	nvidia    []machine.NVIDIAGPU
	nvidiaErr error
	// topologyNone: topologyManagerPolicy none.
	topologyNone bool
}

// joinNodeDevices builds the device plugins' devices of a node, per resource, from what the node
// says of them, never guessing a NUMA node:
//   - IDs and health: the kubelet's device checkpoint lists each resource's healthy devices
//     (writeCheckpoint writes healthyDevices, after every plugin update); the node's status
//     counts them (allocatable) and the unhealthy ones (capacity minus allocatable). The two
//     must agree, or one of them is older than the plugin's last update. Unhealthy devices are
//     in no file and not in PodResources, yet their NUMA nodes count in the device manager's
//     hints (generateDeviceTopologyHints' minimum affinity size): they are named only where
//     the NVIDIA driver lists every GPU (nvidiaUnhealthy).
//   - NUMA nodes, per device, from the first source that knows them: PodResources (the
//     kubelet's own view: it wins over any rule about a plugin), the device checkpoint (an
//     allocated device's nodes as recorded at allocation), the NVIDIA plugins' rule (procfs
//     and sysfs), sysfs for a PCI-addressed device (an assumption about its plugin). A rule
//     the checkpoint contradicts for one allocated device of a resource is not used for the
//     resource's others: their plugin does not follow it.
//
// A resource with a device whose NUMA nodes cannot be known is not judged, with the reason;
// --devices FILE resources are taken as given. Nil: no device known on the node (no file, no
// node status): the device manager is not replayed.
func joinNodeDevices(in nodeDeviceInput) *nodeDevices {
	out := &nodeDevices{plugins: map[string][]replay.Device{}, notJudged: map[string]string{}, sources: map[string]string{}, counts: map[string]map[string]int{}}
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
	x := indexNode(in)
	for _, r := range slices.Sorted(maps.Keys(resources)) {
		if _, given := in.file[r]; given {
			continue
		}
		devs, source, counts, why := resourceDevices(r, in, x)
		switch {
		case why != "":
			out.notJudged[r], out.sources[r] = why, TopologyNotKnown+why
		case source == TopologyNotRegistered:
			out.sources[r] = source
		default:
			out.plugins[r], out.sources[r], out.counts[r] = devs, source, counts
		}
	}
	return out
}

// nodeIndex is the input's lookups, built once for every resource.
type nodeIndex struct {
	// pr is PodResources' allocatable devices, by resource and ID, with their NUMA nodes as
	// listed (the kubelet lists a device once per node; nil: no topology); nil when not read,
	// and prWhy why.
	pr    map[string]map[string][]int64
	prWhy string
	// allocated is, by resource and ID, the NUMA nodes the checkpoint recorded the device on.
	allocated map[string]map[string][]int64
	// byUUID and byMinor are the NVIDIA driver's GPUs.
	byUUID  map[string]machine.NVIDIAGPU
	byMinor map[int]machine.NVIDIAGPU
}

func indexNode(in nodeDeviceInput) nodeIndex {
	x := nodeIndex{allocated: map[string]map[string][]int64{}}
	switch {
	case in.podResources != nil && in.podResources.Error == "":
		x.pr, x.prWhy = map[string]map[string][]int64{}, "PodResources lists healthy devices only"
		for _, g := range in.podResources.Allocatable {
			if x.pr[g.Resource] == nil {
				x.pr[g.Resource] = map[string][]int64{}
			}
			for _, id := range g.IDs {
				nodes, seen := x.pr[g.Resource][id]
				for _, n := range g.NUMANodes {
					if !slices.Contains(nodes, n) {
						nodes = append(nodes, n)
					}
				}
				if !seen || nodes != nil {
					x.pr[g.Resource][id] = nodes
				}
			}
		}
	case in.podResources != nil:
		x.prWhy = "PodResources: " + in.podResources.Error
	case in.podResourcesErr != nil:
		x.prWhy = in.podResourcesErr.Error()
	default:
		x.prWhy = "PodResources not read (only the node reader, --reader=binary, asks it)"
	}
	if in.checkpoint != nil {
		for _, e := range in.checkpoint.PodDeviceEntries {
			// A V1 file's flat list records no NUMA node.
			for node, ids := range e.DevicesPerNUMA {
				if x.allocated[e.ResourceName] == nil {
					x.allocated[e.ResourceName] = map[string][]int64{}
				}
				for _, id := range ids {
					if !slices.Contains(x.allocated[e.ResourceName][id], node) {
						x.allocated[e.ResourceName][id] = append(x.allocated[e.ResourceName][id], node)
					}
				}
			}
		}
		for _, byID := range x.allocated {
			for id := range byID {
				slices.Sort(byID[id])
			}
		}
	}
	if in.nvidia != nil {
		x.byUUID, x.byMinor = map[string]machine.NVIDIAGPU{}, map[int]machine.NVIDIAGPU{}
		for _, g := range in.nvidia {
			x.byUUID[g.UUID], x.byMinor[g.Minor] = g, g
		}
	}
	return x
}

// resourceDevices is one resource's devices, where their NUMA nodes came from (its
// deviceTopology) and how many each source placed, or why they cannot be known.
func resourceDevices(resource string, in nodeDeviceInput, x nodeIndex) ([]replay.Device, string, map[string]int, string) {
	if in.checkpoint == nil {
		return nil, "", nil, "the device checkpoint (device-plugins/kubelet_internal_checkpoint) was not read or is not valid, so the devices' IDs are not known; give them with --devices FILE"
	}
	registered, listed := in.checkpoint.RegisteredDevices[resource]
	ids := slices.Compact(slices.Sorted(slices.Values(registered)))
	healthy, all := int(in.status.Allocatable[resource]), int(in.status.Capacity[resource])
	if !listed {
		if all == 0 {
			return nil, TopologyNotRegistered, nil, ""
		}
		return nil, "", nil, fmt.Sprintf("the node's status counts %d devices the device checkpoint does not list: the checkpoint is older than the plugin's registration (read again)", all)
	}
	if healthy != len(ids) {
		return nil, "", nil, fmt.Sprintf("the device checkpoint lists %d healthy devices, the node's status %d: one is older than the plugin's last update (read again)", len(ids), healthy)
	}
	if pr := x.pr[resource]; x.pr != nil {
		for _, id := range slices.Sorted(maps.Keys(pr)) {
			if !slices.Contains(ids, id) {
				return nil, "", nil, fmt.Sprintf("PodResources lists device %s as healthy, the device checkpoint does not: one is older than the plugin's last update (read again)", clipID(id))
			}
		}
	}
	devices := make([]replay.Device, 0, all)
	for _, id := range ids {
		devices = append(devices, replay.Device{ID: id, Health: replay.DeviceHealthy})
	}
	if all > healthy && !in.topologyNone {
		unhealthy, why := nvidiaUnhealthy(resource, ids, all-healthy, in, x)
		if why != "" {
			return nil, "", nil, fmt.Sprintf("%d of its %d devices are unhealthy: the kubelet records the IDs of healthy devices only (PodResources too), and the NUMA nodes of all count in its hints; %s", all-healthy, all, why)
		}
		for _, id := range unhealthy {
			devices = append(devices, replay.Device{ID: id, Health: deviceUnhealthy})
		}
	}
	if len(devices) == 0 {
		return []replay.Device{}, TopologyNoDevices, nil, ""
	}
	placed, counts, why := placeDevices(resource, devices, in, x)
	switch {
	case why == "":
		var names []string
		for _, s := range topologySources {
			if counts[s] > 0 {
				names = append(names, s)
			}
		}
		return placed, strings.Join(names, " + "), counts, ""
	case in.topologyNone:
		return devices[:len(ids)], TopologyNotNeeded, nil, ""
	}
	return nil, "", nil, why
}

// placement is what one source says of one device's NUMA nodes.
type placement struct {
	known    bool
	topology *replay.DeviceTopology
	// why it is not known.
	why string
}

// topologyOf is a device's Topology from NUMA node IDs as a plugin sent them; an empty list is
// a Topology of zero nodes, which the device manager tells from none (its hints skip a reused
// device without topology, and drop a mask for one with zero nodes).
func topologyOf(nodes []int64) *replay.DeviceTopology {
	t := &replay.DeviceTopology{Nodes: []replay.DeviceNUMANode{}}
	for _, n := range nodes {
		t.Nodes = append(t.Nodes, replay.DeviceNUMANode{ID: n})
	}
	return t
}

// placeDevices gives each device its NUMA nodes from the first source that knows them, and
// counts what each source placed; or says which devices are not known and why.
func placeDevices(resource string, devices []replay.Device, in nodeDeviceInput, x nodeIndex) ([]replay.Device, map[string]int, string) {
	allocated := x.allocated[resource]
	// GKE's plugin reports NUMA nodes only with --topology (off by default): an allocated GPU
	// shows which.
	gke := gkeTopologyFlag(allocated, in, x)
	rules := []struct {
		source string
		place  func(id string) placement
	}{
		{TopologyFromNVIDIA, func(id string) placement {
			p := nvidiaPlacement(id, in, x)
			if p.known && p.topology != nil && isGKEID(id) {
				switch gke {
				case "off":
					p.topology = nil
				case "":
					p = placement{why: "GKE's plugin reports a GPU's NUMA node only when run with --topology (off by default), and no allocated GPU shows which"}
				}
			}
			return p
		}},
		{TopologyFromSysfs, func(id string) placement {
			if _, _, _, isNVIDIA := nvidiaGPU(id, x); isNVIDIA {
				return placement{} // the rule above is its plugin's
			}
			return sysfsPlacement(id, in)
		}},
	}
	// A rule the checkpoint contradicts for an allocated device of this resource is not its
	// plugin's: disproved says so, by source, and the rule places none of the resource's.
	disproved := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(allocated)) {
		for _, r := range rules {
			if p := r.place(id); p.known && !sameNodes(p.topology, allocated[id]) && disproved[r.source] == "" {
				disproved[r.source] = fmt.Sprintf("its plugin does not follow the %s rule: device %s was allocated on NUMA node(s) %s, the rule says %s",
					r.source, clipID(id), nodeList(allocated[id]), topologyText(p.topology))
			}
		}
	}

	out := make([]replay.Device, 0, len(devices))
	counts := map[string]int{}
	var unknown []string
	for _, d := range devices {
		if d.Health != replay.DeviceHealthy {
			counts[deviceUnhealthy]++
		}
		var p placement
		var whys []string
		source := ""
		if x.pr != nil && d.Health == replay.DeviceHealthy {
			// Healthy and not listed: its Topology has zero nodes (the kubelet lists a healthy
			// device once per node it has, once without a topology).
			p, source = placement{known: true, topology: topologyOf([]int64{})}, TopologyFromPodResources
			if nodes, listed := x.pr[resource][d.ID]; listed && nodes != nil {
				p.topology = topologyOf(nodes)
			} else if listed {
				p.topology = nil
			}
		}
		if nodes, ok := allocated[d.ID]; ok && !p.known {
			_, _, _, isNVIDIA := nvidiaGPU(d.ID, x)
			switch {
			case len(nodes) > 1 || nodes[0] != -1:
				p, source = placement{known: true, topology: topologyOf(nodes)}, TopologyFromCheckpoint
			case isNVIDIA:
				// NVIDIA's and GKE's plugins send no topology or one node, never zero nodes
				// or {ID: -1}: -1 is none.
				p, source = placement{known: true}, TopologyFromCheckpoint
			default:
				whys = append(whys, "the device checkpoint records it on no NUMA node, which is no topology, one of zero nodes or {ID: -1}: the device manager tells them apart")
			}
		}
		for _, r := range rules {
			if p.known {
				break
			}
			if why := disproved[r.source]; why != "" {
				whys = append(whys, why)
				continue
			}
			if q := r.place(d.ID); q.known {
				p, source = q, r.source
			} else if q.why != "" {
				whys = append(whys, q.why)
			}
		}
		if !p.known {
			why := "no source knows it"
			if len(whys) > 0 {
				why = strings.Join(whys, "; ")
			}
			unknown = append(unknown, fmt.Sprintf("%s (%s)", clipID(d.ID), why))
			continue
		}
		d.Topology = p.topology
		counts[source]++
		out = append(out, d)
	}
	if len(unknown) > 0 {
		more := ""
		if len(unknown) > 1 {
			more = fmt.Sprintf(" and %d more", len(unknown)-1)
		}
		return nil, nil, fmt.Sprintf("%d of its %d devices have no known NUMA nodes: %s%s; %s; %s", len(unknown), len(devices), unknown[0], more, x.prWhy, whatAnswers)
	}
	return out, counts, ""
}

// sameNodes says whether a topology is what the checkpoint recorded (sorted nodes; -1 for none
// or zero nodes).
func sameNodes(t *replay.DeviceTopology, recorded []int64) bool {
	var nodes []int64
	if t == nil || len(t.Nodes) == 0 {
		nodes = []int64{-1}
	}
	if t != nil {
		for _, n := range t.Nodes {
			nodes = append(nodes, n.ID)
		}
	}
	slices.Sort(nodes)
	return slices.Equal(slices.Compact(nodes), recorded)
}

func nodeList(nodes []int64) string {
	s := make([]string, 0, len(nodes))
	for _, n := range nodes {
		s = append(s, strconv.FormatInt(n, 10))
	}
	return strings.Join(s, ",")
}

func topologyText(t *replay.DeviceTopology) string {
	if t == nil {
		return "none"
	}
	s := make([]int64, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		s = append(s, n.ID)
	}
	return nodeList(s)
}

// nvidiaGPU is the driver's GPU a device ID names, as the NVIDIA device plugin (GPU-<uuid>, and
// <uuid>::<n> for a time-sliced or MPS replica: NVIDIA/k8s-device-plugin internal/rm) and GKE's
// (nvidia<minor>: container-engine-accelerators pkg/gpu/nvidia) name it. isMIG: a MIG device
// (MIG-<uuid>, nvidia<minor>/gi<n>), whose GPU procfs does not name. ok false: not an NVIDIA ID.
func nvidiaGPU(id string, x nodeIndex) (gpu machine.NVIDIAGPU, listed, isMIG, ok bool) {
	uuid, replica, hasReplica := strings.Cut(id, "::")
	switch {
	case strings.HasPrefix(id, "MIG-"):
		return gpu, false, true, true
	case machine.IsNVIDIAGPUUUID(uuid) && (!hasReplica || isDecimal(replica)):
		gpu, listed = x.byUUID[uuid]
		return gpu, listed, false, true
	case isGKEID(id):
		minor, _ := strconv.Atoi(strings.TrimPrefix(id, "nvidia"))
		gpu, listed = x.byMinor[minor]
		return gpu, listed, false, true
	case strings.HasPrefix(id, "nvidia") && strings.Contains(id, "/gi"):
		base, gi, _ := strings.Cut(id, "/gi")
		return gpu, false, isGKEID(base) && isDecimal(gi), isGKEID(base) && isDecimal(gi)
	}
	return gpu, false, false, false
}

// isGKEID: GKE's whole GPU, nvidia<minor>.
func isGKEID(id string) bool {
	m, ok := strings.CutPrefix(id, "nvidia")
	return ok && isDecimal(m) && len(m) <= 3
}

func isDecimal(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// nvidiaPlacement is the NVIDIA plugins' rule: the GPU's sysfs numa_node, none below 0
// (nvmlDevice.GetNumaNode; GKE's setDevice).
func nvidiaPlacement(id string, in nodeDeviceInput, x nodeIndex) placement {
	gpu, listed, isMIG, ok := nvidiaGPU(id, x)
	switch {
	case !ok:
		return placement{}
	case isMIG:
		return placement{why: "a MIG device: the driver's procfs does not name its GPU"}
	case in.nvidia == nil:
		why := "not read"
		if in.nvidiaErr != nil {
			why = in.nvidiaErr.Error()
		}
		return placement{why: "the NVIDIA driver's GPUs (procfs): " + why}
	case !listed:
		return placement{why: "the NVIDIA driver lists no such GPU"}
	case in.pci == nil:
		return placement{why: "its GPU's NUMA node (sysfs): " + errText(in.pciErr)}
	}
	node, ok := in.pci[gpu.BusID]
	if !ok {
		return placement{why: fmt.Sprintf("its GPU %s is not in the node's /sys/bus/pci/devices", gpu.BusID)}
	}
	if node == machine.NoNUMANode {
		return placement{known: true}
	}
	return placement{known: true, topology: topologyOf([]int64{int64(node)})}
}

// sysfsPlacement is a PCI-addressed device's sysfs numa_node, none for -1, as plugins that name
// devices by address (SR-IOV, most NIC and accelerator plugins) usually report it. An assumption:
// SR-IOV's excludeTopology, and plugins that send no topology, differ.
func sysfsPlacement(id string, in nodeDeviceInput) placement {
	if !machine.IsPCIAddress(id) {
		return placement{why: "not a PCI address, and no rule of its plugin is known: its NUMA node is known to its device plugin only"}
	}
	if in.pci == nil {
		return placement{why: "the PCI devices' NUMA nodes (sysfs): " + errText(in.pciErr)}
	}
	node, ok := in.pci[id]
	switch {
	case !ok:
		return placement{why: fmt.Sprintf("device %s is not in the node's /sys/bus/pci/devices", id)}
	case node == machine.NoNUMANode:
		return placement{known: true}
	}
	return placement{known: true, topology: topologyOf([]int64{int64(node)})}
}

func errText(err error) string {
	if err == nil {
		return "not read"
	}
	return err.Error()
}

// gkeTopologyFlag is what an allocated GKE GPU of the resource shows of its plugin's --topology:
// "on" (recorded on its sysfs node), "off" (recorded on none, though sysfs has one), or "" when
// no allocated GPU with a NUMA node shows it.
func gkeTopologyFlag(allocated map[string][]int64, in nodeDeviceInput, x nodeIndex) string {
	for _, id := range slices.Sorted(maps.Keys(allocated)) {
		if !isGKEID(id) {
			continue
		}
		p := nvidiaPlacement(id, in, x)
		if !p.known || p.topology == nil {
			continue
		}
		switch {
		case sameNodes(p.topology, allocated[id]):
			return "on"
		case sameNodes(nil, allocated[id]):
			return "off"
		}
	}
	return ""
}

// nvidiaUnhealthy names a whole-GPU NVIDIA resource's unhealthy devices: the driver lists every
// GPU, so with healthy the resource's healthy IDs, the GPUs no resource lists as healthy are its
// unhealthy ones when there are exactly n of them (each unhealthy device is a GPU of the driver's,
// so n of them among exactly n candidates are those). Replicas and MIG devices are not GPUs one
// for one: not named. why says why not.
func nvidiaUnhealthy(resource string, healthy []string, n int, in nodeDeviceInput, x nodeIndex) ([]string, string) {
	known := slices.Concat(healthy, slices.Collect(maps.Keys(x.allocated[resource])))
	scheme := ""
	for _, id := range known {
		s := ""
		switch {
		case machine.IsNVIDIAGPUUUID(id):
			s = "uuid"
		case isGKEID(id):
			s = "minor"
		default:
			return nil, fmt.Sprintf("device %s is not a whole NVIDIA GPU, so no list of the node's names its unhealthy ones; %s", clipID(id), whatAnswers)
		}
		if scheme != "" && s != scheme {
			return nil, "its devices mix NVIDIA's two ID schemes; " + whatAnswers
		}
		scheme = s
	}
	switch {
	case scheme == "":
		return nil, "no device of it is known to name the others; " + whatAnswers
	case in.nvidia == nil:
		return nil, "the NVIDIA driver's GPUs (procfs): " + errText(in.nvidiaErr) + "; " + whatAnswers
	}
	name := func(g machine.NVIDIAGPU) string {
		if scheme == "minor" {
			return "nvidia" + strconv.Itoa(g.Minor)
		}
		return g.UUID
	}
	// GPUs another resource lists as healthy are not this one's.
	taken := map[string]bool{}
	for r, ids := range in.checkpoint.RegisteredDevices {
		for _, id := range ids {
			if gpu, listed, _, _ := nvidiaGPU(id, x); listed && r != resource {
				taken[name(gpu)] = true
			}
		}
	}
	var candidates []string
	for _, g := range in.nvidia {
		if id := name(g); !slices.Contains(healthy, id) && !taken[id] {
			candidates = append(candidates, id)
		}
	}
	for _, id := range healthy {
		if gpu, listed, _, _ := nvidiaGPU(id, x); !listed || name(gpu) != id {
			return nil, fmt.Sprintf("the NVIDIA driver does not list its device %s; %s", clipID(id), whatAnswers)
		}
	}
	if len(candidates) != n {
		return nil, fmt.Sprintf("the NVIDIA driver lists %d GPUs no resource has healthy, not %d; %s", len(candidates), n, whatAnswers)
	}
	return candidates, ""
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
		case src == TopologyNotNeeded:
			out = append(out, fmt.Sprintf("devices %s: %d, IDs from the device checkpoint, healthy as the node's status counts them (the kubelet records healthy devices only); NUMA nodes %s",
				r, len(d.plugins[r]), TopologyNotNeeded))
		default:
			c := d.counts[r]
			health := ""
			if c[deviceUnhealthy] > 0 {
				health = fmt.Sprintf(" (%d unhealthy: the NVIDIA driver's GPUs that no resource has healthy)", c[deviceUnhealthy])
			}
			var from []string
			for _, s := range topologySources {
				if c[s] > 0 {
					from = append(from, fmt.Sprintf("%d from %s", c[s], s))
				}
			}
			out = append(out, fmt.Sprintf("devices %s: %d%s, IDs from the device checkpoint; NUMA nodes: %s", r, len(d.plugins[r]), health, strings.Join(from, ", ")))
		}
	}
	return out
}
