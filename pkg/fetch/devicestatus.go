package fetch

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DeviceStatus is a node's extended resources in its status (what device plugins advertise
// through the kubelet), in whole units; nil maps when the node was not read live.
type DeviceStatus struct {
	Capacity    map[string]int64 `json:"capacity,omitempty"`
	Allocatable map[string]int64 `json:"allocatable,omitempty"`
}

// deviceStatus keeps the extended resources of node's status: a few entries, kept so the
// device checkpoint can be compared with what the node advertises.
func deviceStatus(node *corev1.Node) DeviceStatus {
	var ds DeviceStatus
	keep := func(list corev1.ResourceList) map[string]int64 {
		var out map[string]int64
		for name, q := range list {
			if !isExtendedResource(name) {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			out[string(name)] = q.Value()
		}
		return out
	}
	ds.Capacity, ds.Allocatable = keep(node.Status.Capacity), keep(node.Status.Allocatable)
	if ds.Capacity == nil {
		ds.Capacity = map[string]int64{}
	}
	if ds.Allocatable == nil {
		ds.Allocatable = map[string]int64{}
	}
	return ds
}

// isExtendedResource: a resource outside the kubernetes.io domain (cpu, memory, hugepages-*
// and the rest have none), as the scheduler's helper judges it.
func isExtendedResource(name corev1.ResourceName) bool {
	domain, _, ok := strings.Cut(string(name), "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
