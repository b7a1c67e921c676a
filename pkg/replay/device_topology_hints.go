package replay

// The device manager's topology hints (devicemanager/topology_hints.go): for each device-plugin
// resource a container (or pod) asks, the NUMA masks holding enough free devices, the narrowest
// preferred; nil (no preference) for a resource none of whose devices has topology; an empty
// list (no NUMA node fits) when not enough devices are free.

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
)

// GetTopologyHints is the container-scope hint provider: the container's own requests, the
// devices its pod's init containers hand on counted as available.
func (m *DeviceManager) GetTopologyHints(pod *v1.Pod, c *v1.Container) map[string][]TopologyHint {
	m.updateAllocatedDevices()
	hints := map[string][]TopologyHint{}
	for resource, requested := range m.containerDeviceRequest(c) {
		held := m.podDevices.containerDevices(string(pod.UID), c.Name, resource)
		hints[resource] = m.resourceHints(resource, requested, held, m.devicesToReuse[string(pod.UID)][resource])
	}
	return hints
}

// GetPodTopologyHints is the pod-scope hint provider: the pod's requests (init containers'
// largest against the sum of the others, as the scheduler counts them), no reuse.
func (m *DeviceManager) GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint {
	m.updateAllocatedDevices()
	hints := map[string][]TopologyHint{}
	for resource, requested := range m.podDeviceRequest(pod) {
		hints[resource] = m.resourceHints(resource, requested, m.podDevices.podDevices(string(pod.UID), resource), nil)
	}
	return hints
}

// resourceHints are one resource's hints, as both scopes build them: none (nil) without
// topology; for devices already held (a kubelet restart) the same hints again, or no NUMA node
// fits when the request changed; else the masks over the free (and reusable) devices, or no
// NUMA node fits when too few are free.
func (m *DeviceManager) resourceHints(resource string, requested int, held, reusable sets.Set[string]) []TopologyHint {
	switch {
	case !m.deviceHasTopologyAlignment(resource):
		return nil
	case held.Len() > 0 && held.Len() != requested:
		return []TopologyHint{}
	case held.Len() > 0:
		return m.generateDeviceTopologyHints(resource, held, sets.New[string](), requested)
	}
	available := m.availableDevices(resource)
	if available.Union(reusable).Len() < requested {
		return []TopologyHint{}
	}
	return m.generateDeviceTopologyHints(resource, available, reusable, requested)
}

// deviceHasTopologyAlignment: some device of the resource (healthy or not) names a NUMA node.
func (m *DeviceManager) deviceHasTopologyAlignment(resource string) bool {
	for _, d := range m.allDevices[resource] {
		if d.hasTopology() {
			return true
		}
	}
	return false
}

// availableDevices are the healthy devices no container holds.
func (m *DeviceManager) availableDevices(resource string) sets.Set[string] {
	return m.healthy[resource].Difference(m.allocated[resource])
}

// generateDeviceTopologyHints: every NUMA mask whose free (and reusable) devices cover the
// request; preferred when as narrow as the narrowest mask the resource's devices (taken or
// not) could cover it with. Reusable devices must all be in the mask.
func (m *DeviceManager) generateDeviceTopologyHints(resource string, available, reusable sets.Set[string], request int) []TopologyHint {
	nodes := m.numaNodes
	if m.release.has(DeviceHintsOnDeviceNodes) {
		if withDevices := m.deviceNUMANodes(resource); len(withDevices) > 0 {
			nodes = withDevices
		}
	}
	minAffinitySize := len(nodes)
	hints := []TopologyHint{}
	anySet := func(mask BitMask, ids []int) bool { return slices.ContainsFunc(ids, mask.IsSet) }
	iterateBitMasks(nodes, func(mask BitMask) {
		inMask := 0
		for _, d := range m.allDevices[resource] {
			if anySet(mask, d.numaIDs()) {
				inMask++
			}
		}
		if inMask >= request && mask.Count() < minAffinitySize {
			minAffinitySize = mask.Count()
		}
		matching := 0
		for d := range reusable {
			dev, ok := m.allDevices[resource][d]
			if !ok || dev.Topology == nil {
				continue
			}
			if !anySet(mask, dev.numaIDs()) {
				return
			}
			matching++
		}
		for d := range available {
			if anySet(mask, m.allDevices[resource][d].numaIDs()) {
				matching++
			}
		}
		if matching < request {
			return
		}
		hints = append(hints, TopologyHint{NUMANodeAffinity: mask})
	})
	for i := range hints {
		hints[i].Preferred = hints[i].NUMANodeAffinity.Count() == minAffinitySize
	}
	return hints
}

// deviceNUMANodes are the machine's NUMA nodes that host a device of the resource, sorted
// (nodes the machine lacks are ignored, as the kubelet logs and drops them).
func (m *DeviceManager) deviceNUMANodes(resource string) []int {
	with := sets.New[int]()
	for _, d := range m.allDevices[resource] {
		with.Insert(d.numaIDs()...)
	}
	return sets.List(with.Intersection(sets.New(m.numaNodes...)))
}

// podDeviceRequest is getPodDeviceRequest: the pod's limits (no overhead) of device-plugin
// resources.
func (m *DeviceManager) podDeviceRequest(pod *v1.Pod) map[string]int {
	out := map[string]int{}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		if m.isDevicePluginResource(string(name)) {
			q := limits[name]
			out[string(name)] = int(q.Value())
		}
	}
	return out
}

// containerDeviceRequest is getContainerDeviceRequest: the container's limits of device-plugin
// resources.
func (m *DeviceManager) containerDeviceRequest(c *v1.Container) map[string]int {
	out := map[string]int{}
	for name, q := range c.Resources.Limits {
		if m.isDevicePluginResource(string(name)) {
			out[string(name)] = int(q.Value())
		}
	}
	return out
}
