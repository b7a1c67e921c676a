// 1.21+: the V2 layout (device IDs per NUMA node) and GetDevices by resource.
package main

import (
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

func deviceIDs(e gen.Entry) checkpoint.DevicesPerNUMA { return checkpoint.DevicesPerNUMA(e.DeviceIDs) }

func held(m *devicemanager.ManagerImpl, pod, container, resource string) []string {
	var ids []string
	for id := range m.GetDevices(pod, container)[resource] {
		ids = append(ids, id)
	}
	return ids
}
