package replay

// podDevices (devicemanager/pod_devices.go): the devices each container holds, per resource and
// NUMA node, as the checkpoint records them.

import (
	"k8s.io/apimachinery/pkg/util/sets"
)

// podDevices is pod UID -> container -> resource -> NUMA node (-1: none) -> device IDs.
type podDevices map[string]map[string]map[string]map[int64][]string

func (p podDevices) insert(pod, ctr, resource string, perNUMA map[int64][]string) {
	if p[pod] == nil {
		p[pod] = map[string]map[string]map[int64][]string{}
	}
	if p[pod][ctr] == nil {
		p[pod][ctr] = map[string]map[int64][]string{}
	}
	p[pod][ctr][resource] = perNUMA
}

func devicesOf(perNUMA map[int64][]string) sets.Set[string] {
	out := sets.New[string]()
	for _, ids := range perNUMA {
		out.Insert(ids...)
	}
	return out
}

// containerDevices is nil when the container holds no entry for the resource.
func (p podDevices) containerDevices(pod, ctr, resource string) sets.Set[string] {
	perNUMA, ok := p[pod][ctr][resource]
	if !ok {
		return nil
	}
	return devicesOf(perNUMA)
}

func (p podDevices) podDevices(pod, resource string) sets.Set[string] {
	out := sets.New[string]()
	for ctr := range p[pod] {
		out = out.Union(p.containerDevices(pod, ctr, resource))
	}
	return out
}

// devices is every resource some container has an entry for, with the devices held.
func (p podDevices) devices() map[string]sets.Set[string] {
	out := map[string]sets.Set[string]{}
	for _, ctrs := range p {
		for _, res := range ctrs {
			for resource, perNUMA := range res {
				if out[resource] == nil {
					out[resource] = sets.New[string]()
				}
				out[resource] = out[resource].Union(devicesOf(perNUMA))
			}
		}
	}
	return out
}

// addContainerAllocatedResources: the container's devices join those to reuse.
func (p podDevices) addContainerAllocatedResources(pod, ctr string, reuse map[string]sets.Set[string]) {
	for resource, perNUMA := range p[pod][ctr] {
		reuse[resource] = reuse[resource].Union(devicesOf(perNUMA))
	}
}

// removeContainerAllocatedResources: the container's devices leave those to reuse.
func (p podDevices) removeContainerAllocatedResources(pod, ctr string, reuse map[string]sets.Set[string]) {
	for resource, perNUMA := range p[pod][ctr] {
		reuse[resource] = reuse[resource].Difference(devicesOf(perNUMA))
	}
}
