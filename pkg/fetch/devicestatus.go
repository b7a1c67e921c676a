package fetch

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DeviceStatus is a node's extended resources in its status (what device plugins advertise
// through the kubelet), in whole units.
type DeviceStatus struct {
	Capacity    map[string]int64 `json:"capacity,omitempty"`
	Allocatable map[string]int64 `json:"allocatable,omitempty"`
}

// noDevices is every node without extended resources: most nodes, so a listed cluster keeps
// one pointer a node for them.
var noDevices = &DeviceStatus{}

// deviceStatus keeps the extended resources of node's status: a few entries, kept so the
// device checkpoint can be compared with what the node advertises.
func deviceStatus(node *corev1.Node) *DeviceStatus {
	keep := func(list corev1.ResourceList) map[string]int64 {
		var out map[string]int64
		for name, q := range list {
			if !IsExtendedResource(name) {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			out[string(name)] = q.Value()
		}
		return out
	}
	ds := &DeviceStatus{Capacity: keep(node.Status.Capacity), Allocatable: keep(node.Status.Allocatable)}
	if ds.Capacity == nil && ds.Allocatable == nil {
		return noDevices
	}
	return ds
}

// IsExtendedResource: a resource outside the kubernetes.io domain (cpu, memory, hugepages-*
// and the rest have none), as the scheduler's helper judges it.
func IsExtendedResource(name corev1.ResourceName) bool {
	domain, _, ok := strings.Cut(string(name), "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
