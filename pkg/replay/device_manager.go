package replay

// The device manager (devicemanager/manager.go): the devices each device plugin advertises, the
// checkpoint it restores at start, and the allocation it makes for each container before the
// CPU and memory managers do (it is the topology manager's first hint provider). Its hints are
// in device_topology_hints.go, its record of what each container holds in device_pod_devices.go.
//
// Where the kubelet takes "any k" devices of a Go set (devicesToAllocate), the replay takes them
// in ID order: the kubelet's pick is random among devices its decisions cannot tell apart (same
// health, topology and holders), so the replay's pick is one of several equivalent ones
// (DeviceManager.Picks says which, and whether the devices it chose among differ).

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// DeviceHealthy is the device plugin API's pluginapi.Healthy; any other health is unhealthy.
const DeviceHealthy = "Healthy"

// nodeWithoutTopology is the fake NUMA node of devices without topology (devicemanager/types.go).
const nodeWithoutTopology = -1

// Device is the device plugin API's Device message (k8s.io/kubelet
// pkg/apis/deviceplugin/v1beta1), with its JSON names.
type Device struct {
	ID     string `json:"ID"`
	Health string `json:"health"`
	// Topology is nil when the device has no NUMA affinity.
	Topology *DeviceTopology `json:"topology,omitempty"`
}

// DeviceTopology is pluginapi.TopologyInfo.
type DeviceTopology struct {
	Nodes []DeviceNUMANode `json:"nodes"`
}

// DeviceNUMANode is pluginapi.NUMANode.
type DeviceNUMANode struct {
	ID int64 `json:"ID"`
}

// numaIDs is getNUMANodeIds: the device's NUMA nodes, nil without topology.
func (d Device) numaIDs() []int {
	if d.Topology == nil {
		return nil
	}
	var ids []int
	for _, n := range d.Topology.Nodes {
		ids = append(ids, int(n.ID))
	}
	return ids
}

func (d Device) hasTopology() bool { return d.Topology != nil && len(d.Topology.Nodes) > 0 }

// DeviceInput is what the device manager knows at start: the plugins that register (each
// resource's ListAndWatch devices, registered in resource-name order) and its checkpoint.
type DeviceInput struct {
	Plugins map[string][]Device
	// Checkpoint is device-plugins/kubelet_internal_checkpoint as decode judged it; nil = no file.
	Checkpoint *decode.Report
	// NotJudged are the resources whose devices' topology is not known, with why: the manager
	// leaves them alone (not a device plugin resource to it, their checkpoint entries aside) and
	// admit says, for each pod asking for one, that it is not judged.
	NotJudged map[string]string
	// Without are pod UIDs whose checkpoint entries are left out, as if those pods had left and
	// the kubelet had freed their devices (what a stale holder costs: pkg/admit).
	Without map[string]bool
	// Deferred are resources of Plugins whose plugin has not registered when the pods come back
	// after a restart: each registers when Node.RegisterPlugin says so (never, if it does not).
	Deferred map[string]bool
}

// DeviceManager is devicemanager.ManagerImpl, as far as admission goes.
type DeviceManager struct {
	release   *releaseRules
	numaNodes []int
	affinity  *TopologyManager
	// allDevices, healthy and unhealthy are what the plugins advertise; a resource restored
	// from the checkpoint whose plugin has not registered again has empty sets.
	allDevices         map[string]map[string]Device
	healthy, unhealthy map[string]sets.Set[string]
	// allocated is allocatedDevices: what podDevices holds, plus what devicesToAllocate took.
	allocated  map[string]sets.Set[string]
	podDevices podDevices
	// endpoints: a registered resource -> its plugin is connected (false: the stopped endpoint
	// the restore makes for a checkpoint's resource, within its 5-minute grace period).
	endpoints map[string]bool
	// devicesToReuse is pod UID -> resource -> devices its init containers hand on.
	devicesToReuse map[string]map[string]sets.Set[string]
	// active is the kubelet's active pods (UpdateAllocatedDevices keeps only theirs).
	active func() map[string]map[string]bool
	// picks is pod UID -> container -> resource -> the kubelet's choice when it took any k of
	// more candidates (a Go set's order); a resource not listed was a forced pick.
	picks map[string]map[string]map[string]DevicePick
	// topologyCounts: the topology manager gives hints (policy other than none), so a device's
	// NUMA nodes tell it apart from another.
	topologyCounts bool
	// without are pod UIDs whose checkpoint entries the restore skips (DeviceInput.Without).
	without map[string]bool
	// notJudged: DeviceInput.NotJudged's resources.
	notJudged map[string]bool
	// plugins are DeviceInput.Plugins, for the plugins registering later (RegisterPlugin).
	plugins map[string][]Device
	// sourcesReady is the kubelet's sourcesReady.AllReady(): false while it starts again.
	sourcesReady func() bool
	// runtime is the container runtime's containers at start (nil: the kubelet's sources are
	// ready, so it never asks).
	runtime map[string]map[string]RuntimeContainer
}

// RuntimeContainer is what the runtime reports of one container of a pod at the kubelet's start
// (buildContainerMapAndRunningSetFromRuntime): its running and its exited instances.
type RuntimeContainer struct {
	Running, Exited int
}

// DevicePick is how the kubelet came to a container's devices of one resource.
type DevicePick int

const (
	// DevicePickForced: it took every candidate it had; no other pick was possible.
	DevicePickForced DevicePick = iota
	// DevicePickEquivalent: it took some of several candidates that agree on health, NUMA nodes
	// (when the topology manager gives hints) and holders; any of them is the same to it.
	DevicePickEquivalent
	// DevicePickArbitrary: it took some of several candidates that differ (NUMA nodes or
	// holders) at random; another run may give devices another pod would then miss.
	DevicePickArbitrary
)

// newDeviceManager is NewManagerImpl: the machine's NUMA nodes and the topology manager as the
// affinity store.
func newDeviceManager(e *env, tm *TopologyManager) *DeviceManager {
	m := &DeviceManager{release: e.release, numaNodes: e.machine.NodeIDs(), affinity: tm, notJudged: map[string]bool{},
		topologyCounts: e.cfg.TopologyPolicy() != "none", sourcesReady: func() bool { return true }}
	m.reset()
	return m
}

// reset empties what the manager knows (newManagerImpl's maps).
func (m *DeviceManager) reset() {
	m.allDevices, m.healthy, m.unhealthy = map[string]map[string]Device{}, map[string]sets.Set[string]{}, map[string]sets.Set[string]{}
	m.allocated, m.podDevices, m.endpoints = map[string]sets.Set[string]{}, podDevices{}, map[string]bool{}
	m.devicesToReuse, m.picks = map[string]map[string]sets.Set[string]{}, map[string]map[string]map[string]DevicePick{}
}

// start is Start (readCheckpoint: a checkpoint it cannot read is logged and ignored), then each
// plugin's registration (PluginConnected) and first ListAndWatch answer
// (genericDeviceUpdateCallback).
func (m *DeviceManager) start(in *DeviceInput) {
	for resource := range in.NotJudged {
		m.notJudged[resource] = true
	}
	m.without, m.plugins = in.Without, in.Plugins
	if rep := in.Checkpoint; rep != nil && rep.Verdict == decode.Valid && rep.Decoded.Devices != nil {
		m.restore(rep)
	}
	for _, resource := range slices.Sorted(maps.Keys(in.Plugins)) {
		if !in.Deferred[resource] {
			m.register(resource)
		}
	}
}

// register is a plugin's registration (PluginConnected: its endpoint replaces the stopped one
// the restore made) and its first ListAndWatch answer (genericDeviceUpdateCallback).
func (m *DeviceManager) register(resource string) {
	devices, ok := m.plugins[resource]
	if !ok || m.notJudged[resource] {
		return
	}
	m.endpoints[resource] = true
	m.updateDevices(resource, devices)
}

// isContainerAlreadyRunning: the runtime reported the container running at start. With
// DeviceRunningAnyInstance, any of its instances running counts; before, the one
// GetContainerID returns must run, which an exited instance beside it may be (taken so here).
func (m *DeviceManager) isContainerAlreadyRunning(podUID, ctr string) bool {
	c := m.runtime[podUID][ctr]
	if m.release.has(DeviceRunningAnyInstance) {
		return c.Running > 0
	}
	return c.Running > 0 && c.Exited == 0
}

// restore is readCheckpoint: the entries the restore keeps (decode's Dropped are skipped, as
// fromCheckpointData does), and each registered resource known with no device until its plugin
// registers again.
func (m *DeviceManager) restore(rep *decode.Report) {
	dropped := map[int]bool{}
	for _, d := range rep.Dropped {
		dropped[d.Index] = true
	}
	st := rep.Decoded.Devices
	for i, e := range st.PodDeviceEntries {
		if dropped[i] || m.notJudged[e.ResourceName] || m.without[e.PodUID] {
			continue
		}
		perNUMA := map[int64][]string{}
		maps.Copy(perNUMA, e.DevicesPerNUMA)
		if e.DevicesPerNUMA == nil && e.DeviceIDs != nil {
			perNUMA[0] = e.DeviceIDs // a V1 file's flat list, put on NUMA node 0
		}
		m.podDevices.insert(e.PodUID, e.ContainerName, e.ResourceName, perNUMA)
	}
	m.allocated = m.podDevices.devices()
	for resource := range st.RegisteredDevices {
		if m.notJudged[resource] {
			continue
		}
		m.healthy[resource], m.unhealthy[resource] = sets.New[string](), sets.New[string]()
		m.endpoints[resource] = false
	}
}

// updateDevices is genericDeviceUpdateCallback: the plugin's devices replace the resource's.
func (m *DeviceManager) updateDevices(resource string, devices []Device) {
	m.healthy[resource], m.unhealthy[resource] = sets.New[string](), sets.New[string]()
	m.allDevices[resource] = map[string]Device{}
	for _, d := range devices {
		m.allDevices[resource][d.ID] = d
		if d.Health == DeviceHealthy {
			m.healthy[resource].Insert(d.ID)
		} else {
			m.unhealthy[resource].Insert(d.ID)
		}
	}
}

// Capacity is GetCapacity once the plugins registered: per resource, every device and the
// healthy ones (0 for a resource only the checkpoint names).
func (m *DeviceManager) Capacity() (capacity, allocatable map[string]int) {
	capacity, allocatable = map[string]int{}, map[string]int{}
	for resource, devs := range m.healthy {
		if _, ok := m.endpoints[resource]; ok {
			capacity[resource], allocatable[resource] = devs.Len(), devs.Len()
		}
	}
	for resource, devs := range m.unhealthy {
		if _, ok := m.endpoints[resource]; ok {
			capacity[resource] += devs.Len()
		}
	}
	return capacity, allocatable
}

// updateAllocatedDevices is UpdateAllocatedDevices: the devices of pods no longer active go
// back; allocated is rebuilt only when some pod went.
func (m *DeviceManager) updateAllocatedDevices() {
	if !m.sourcesReady() {
		return // the active pods are not all known yet
	}
	active := m.active()
	var gone []string
	for pod := range m.podDevices {
		if _, ok := active[pod]; !ok {
			gone = append(gone, pod)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, pod := range gone {
		delete(m.podDevices, pod)
	}
	m.allocated = m.podDevices.devices()
}

// isDevicePluginResource: a registered resource, or one some container holds.
func (m *DeviceManager) isDevicePluginResource(resource string) bool {
	_, registered := m.healthy[resource]
	_, allocated := m.allocated[resource]
	return registered || allocated
}

// Allocate is the manager's Allocate (operation "add"): an init container's devices are handed
// on to the containers after it, a restartable one's are kept for itself.
func (m *DeviceManager) Allocate(pod *v1.Pod, c *v1.Container) error {
	uid := string(pod.UID)
	if _, ok := m.devicesToReuse[uid]; !ok {
		m.devicesToReuse[uid] = map[string]sets.Set[string]{}
	}
	for other := range m.devicesToReuse {
		if other != uid {
			delete(m.devicesToReuse, other)
		}
	}
	reuse := m.devicesToReuse[uid]
	for i := range pod.Spec.InitContainers {
		init := &pod.Spec.InitContainers[i]
		if init.Name != c.Name {
			continue
		}
		if err := m.allocateContainerResources(pod, c, reuse); err != nil {
			return err
		}
		if !IsRestartableInitContainer(init) || !m.release.has(DeviceSidecarKeeps) {
			m.podDevices.addContainerAllocatedResources(uid, c.Name, reuse)
		} else {
			m.podDevices.removeContainerAllocatedResources(uid, c.Name, reuse)
		}
		return nil
	}
	if err := m.allocateContainerResources(pod, c, reuse); err != nil {
		return err
	}
	m.podDevices.removeContainerAllocatedResources(uid, c.Name, reuse)
	return nil
}

// allocateContainerResources takes, resource by resource, the devices the container needs and
// records them (the plugin's Allocate call always answers here). The kubelet walks the limits
// map; the replay walks them by name.
func (m *DeviceManager) allocateContainerResources(pod *v1.Pod, c *v1.Container, reuse map[string]sets.Set[string]) error {
	uid := string(pod.UID)
	updated := false
	for _, name := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
		resource := string(name)
		q := c.Resources.Limits[name]
		needed := int(q.Value())
		if !m.isDevicePluginResource(resource) {
			continue
		}
		if !updated {
			m.updateAllocatedDevices()
			updated = true
		}
		devs, err := m.devicesToAllocate(uid, c.Name, resource, needed, reuse[resource])
		if err != nil {
			return err
		}
		if devs.Len() == 0 {
			continue
		}
		if _, ok := m.endpoints[resource]; !ok {
			m.allocated = m.podDevices.devices()
			return fmt.Errorf("unknown Device Plugin %s", resource)
		}
		perNUMA := map[int64][]string{}
		for _, id := range sets.List(devs) {
			d := m.allDevices[resource][id]
			if !d.hasTopology() {
				perNUMA[nodeWithoutTopology] = append(perNUMA[nodeWithoutTopology], id)
				continue
			}
			for _, n := range d.Topology.Nodes {
				perNUMA[n.ID] = append(perNUMA[n.ID], id)
			}
		}
		m.podDevices.insert(uid, c.Name, resource, perNUMA)
	}
	return nil
}

// devicesToAllocate picks the devices: reusable ones first, then those on the NUMA nodes of the
// container's affinity, then the others, then those without topology. The checks and their
// texts are the kubelet's, in its order.
func (m *DeviceManager) devicesToAllocate(podUID, ctr, resource string, required int, reusable sets.Set[string]) (sets.Set[string], error) {
	needed := required
	held := m.podDevices.containerDevices(podUID, ctr, resource)
	if held != nil {
		needed -= held.Len()
		if needed != 0 {
			return nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", podUID, ctr, resource, held.Len(), required)
		}
	}
	if m.release.has(DeviceSkipsRunning) && !m.sourcesReady() && m.isContainerAlreadyRunning(podUID, ctr) {
		return nil, nil // a kubelet restart: the running container has its devices
	}
	healthy, registered := m.healthy[resource]
	if !m.release.has(DeviceHealthChecks) {
		// Before #116376 a container holding its devices needs nothing, whatever their health
		// or their plugin, and a registered resource without healthy devices is only short.
		if needed == 0 {
			return nil, nil
		}
		if !registered {
			return nil, fmt.Errorf("can't allocate unregistered device %s", resource)
		}
	} else {
		switch {
		case !registered:
			return nil, fmt.Errorf("cannot allocate unregistered device %s", resource)
		case healthy.Len() == 0:
			return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", resource)
		case !healthy.IsSuperset(held):
			return nil, fmt.Errorf("previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s", resource)
		case needed == 0:
			return nil, nil
		}
	}
	allocated := sets.New[string]()
	takeFrom := func(devices sets.Set[string]) bool {
		if m.allocated[resource] == nil {
			m.allocated[resource] = sets.New[string]()
		}
		candidates := sets.List(devices.Difference(allocated))
		if len(candidates) > needed {
			m.markPick(podUID, ctr, resource, m.pickAmong(resource, candidates))
		}
		for _, d := range candidates {
			m.allocated[resource].Insert(d)
			allocated.Insert(d)
			needed--
			if needed == 0 {
				return true
			}
		}
		return false
	}
	if takeFrom(reusable) {
		return allocated, nil
	}
	available := m.healthy[resource].Difference(m.allocated[resource])
	if available.Len() < needed {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", resource, needed, available.Len())
	}
	aligned, unaligned, noAffinity := m.filterByAffinity(podUID, ctr, resource, available)
	// GetPreferredAllocation: the plugins replayed answer no preference (a plugin without the
	// call), so the kubelet's own order decides.
	if _, ok := m.endpoints[resource]; !ok {
		return nil, fmt.Errorf("endpoint not found in cache for a registered resource: %s", resource)
	}
	if needed < aligned.Len() {
		if takeFrom(aligned) {
			return allocated, nil
		}
		return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, required-needed)
	}
	for _, from := range []sets.Set[string]{aligned, unaligned, noAffinity} {
		if takeFrom(from) {
			return allocated, nil
		}
	}
	return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, required-needed)
}

func (m *DeviceManager) markPick(pod, ctr, resource string, pick DevicePick) {
	if m.picks[pod] == nil {
		m.picks[pod] = map[string]map[string]DevicePick{}
	}
	if m.picks[pod][ctr] == nil {
		m.picks[pod][ctr] = map[string]DevicePick{}
	}
	m.picks[pod][ctr][resource] = max(m.picks[pod][ctr][resource], pick)
}

// pickAmong says whether the candidates the kubelet takes some of are all alike to it: same
// health, NUMA nodes (when the topology manager gives hints) and holders.
func (m *DeviceManager) pickAmong(resource string, candidates []string) DevicePick {
	holders := m.holders(resource, nil)
	signature := func(id string) string {
		sig := fmt.Sprint(m.healthy[resource].Has(id), holders[id])
		if m.topologyCounts {
			// As a set: the kubelet never looks at their order (mask.AnySet, filterByAffinity's
			// per-node sets), so [1,0] is [0,1] to it.
			sig += fmt.Sprint(slices.Sorted(slices.Values(m.allDevices[resource][id].numaIDs())))
		}
		return sig
	}
	first := signature(candidates[0])
	for _, id := range candidates[1:] {
		if signature(id) != first {
			return DevicePickArbitrary
		}
	}
	return DevicePickEquivalent
}

// holders is device ID -> the containers holding it ("<pod UID>/<container>", sorted), of the
// pods in active (every pod when nil).
func (m *DeviceManager) holders(resource string, active map[string]map[string]bool) map[string][]string {
	out := map[string][]string{}
	for pod, ctrs := range m.podDevices {
		if _, ok := active[pod]; active != nil && !ok {
			continue
		}
		for ctr, res := range ctrs {
			for id := range devicesOf(res[resource]) {
				out[id] = append(out[id], pod+"/"+ctr)
			}
		}
	}
	for _, h := range out {
		slices.Sort(h)
	}
	return out
}

// Picks are, per resource, how the kubelet came to the container's devices when it had a choice
// (a resource not listed was a forced pick).
func (m *DeviceManager) Picks(podUID, ctr string) map[string]DevicePick {
	return maps.Clone(m.picks[podUID][ctr])
}

// filterByAffinity splits the available devices: on a NUMA node of the container's affinity,
// on another node, without topology. A device on several nodes goes with its first node in
// the kubelet's order (affinity nodes first, the fake node -1 last), so with the affinity
// whenever one of its nodes is in it. A device without topology is on node -1, and so is one
// whose plugin names node -1 itself (manager.go:773-786 files it under perNodeDevices[-1],
// :841 takes that as without topology): after the devices on any other node, the machine's or
// not.
func (m *DeviceManager) filterByAffinity(podUID, ctr, resource string, available sets.Set[string]) (aligned, unaligned, noAffinity sets.Set[string]) {
	hint := m.affinity.GetAffinity(podUID, ctr)
	aligned, unaligned, noAffinity = sets.New[string](), sets.New[string](), sets.New[string]()
	if !m.deviceHasTopologyAlignment(resource) || hint.NUMANodeAffinity == 0 {
		return aligned, unaligned, available.Clone()
	}
	for d := range available {
		nodes := m.allDevices[resource][d].numaIDs()
		switch {
		case slices.ContainsFunc(nodes, hint.NUMANodeAffinity.IsSet):
			aligned.Insert(d)
		case slices.ContainsFunc(nodes, func(n int) bool { return n != nodeWithoutTopology }):
			unaligned.Insert(d)
		default:
			noAffinity.Insert(d)
		}
	}
	return aligned, unaligned, noAffinity
}

// Devices is GetDevices: the container's devices per resource, sorted (nil when none).
func (m *DeviceManager) Devices(podUID, ctr string) map[string][]string {
	var out map[string][]string
	for resource, perNUMA := range m.podDevices[podUID][ctr] {
		if len(perNUMA) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[resource] = sets.List(devicesOf(perNUMA))
	}
	return out
}

// DeviceNUMANodes is, per resource, each of the container's devices with the NUMA nodes it
// sits on, as the checkpoint records them (an empty list: the device has no topology).
func (m *DeviceManager) DeviceNUMANodes(podUID, ctr string) map[string]map[string][]int {
	var out map[string]map[string][]int
	for resource, perNUMA := range m.podDevices[podUID][ctr] {
		for node, ids := range perNUMA {
			if out == nil {
				out = map[string]map[string][]int{}
			}
			if out[resource] == nil {
				out[resource] = map[string][]int{}
			}
			for _, id := range ids {
				if out[resource][id] == nil {
					out[resource][id] = []int{}
				}
				if node != nodeWithoutTopology {
					out[resource][id] = append(out[resource][id], int(node))
					slices.Sort(out[resource][id])
				}
			}
		}
	}
	return out
}

// DeviceStatus is one device as the next allocation finds it.
type DeviceStatus struct {
	ID string
	// NUMANodes are the device's (nil: no topology).
	NUMANodes []int
	Healthy   bool
	// Free: healthy and not allocated, so the next allocation may take it.
	Free bool
	// Holders are the active pods' containers holding it ("<pod UID>/<container>"); a device
	// allocated with no holder is kept by allocatedDevices from an allocation that failed after
	// taking it, until a pod leaves.
	Holders []string
}

// Survey is every device of every resource the manager knows, as the next allocation finds it
// (after UpdateAllocatedDevices, without changing the manager), sorted by ID.
func (m *DeviceManager) Survey() map[string][]DeviceStatus {
	active := m.active()
	allocated := m.allocated
	for pod := range m.podDevices {
		if _, ok := active[pod]; !ok {
			live := podDevices{}
			for p, ctrs := range m.podDevices {
				if _, ok := active[p]; ok {
					live[p] = ctrs
				}
			}
			allocated = live.devices()
			break
		}
	}
	out := map[string][]DeviceStatus{}
	for resource, devs := range m.allDevices {
		holders := m.holders(resource, active)
		for _, id := range slices.Sorted(maps.Keys(devs)) {
			st := DeviceStatus{ID: id, NUMANodes: devs[id].numaIDs(), Healthy: m.healthy[resource].Has(id)}
			st.Free = st.Healthy && !allocated[resource].Has(id)
			st.Holders = holders[id]
			out[resource] = append(out[resource], st)
		}
	}
	return out
}

// CheckpointHolders are the pod UIDs the device checkpoint gives devices, with, per resource,
// the devices each holds (the entries the restore keeps).
func CheckpointHolders(rep *decode.Report) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	if rep == nil || rep.Verdict != decode.Valid || rep.Decoded.Devices == nil {
		return out
	}
	dropped := map[int]bool{}
	for _, d := range rep.Dropped {
		dropped[d.Index] = true
	}
	for i, e := range rep.Decoded.Devices.PodDeviceEntries {
		if dropped[i] {
			continue
		}
		ids := e.DeviceIDs
		for _, perNode := range e.DevicesPerNUMA {
			ids = append(slices.Clone(ids), perNode...)
		}
		if out[e.PodUID] == nil {
			out[e.PodUID] = map[string][]string{}
		}
		out[e.PodUID][e.ResourceName] = slices.Compact(slices.Sorted(slices.Values(append(out[e.PodUID][e.ResourceName], ids...))))
	}
	return out
}

// Assignments is podDevices: pod UID -> container -> resource -> sorted device IDs.
func (m *DeviceManager) Assignments() map[string]map[string]map[string][]string {
	out := map[string]map[string]map[string][]string{}
	for pod, ctrs := range m.podDevices {
		out[pod] = map[string]map[string][]string{}
		for ctr, res := range ctrs {
			out[pod][ctr] = map[string][]string{}
			for resource, perNUMA := range res {
				out[pod][ctr][resource] = sets.List(devicesOf(perNUMA))
			}
		}
	}
	return out
}

// owners are the pods and containers the checkpoint gives devices (they run).
func (m *DeviceManager) owners() map[string][]string {
	out := map[string][]string{}
	for pod, ctrs := range m.podDevices {
		out[pod] = slices.Sorted(maps.Keys(ctrs))
	}
	return out
}
