package decode

import (
	checkpoint "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/devcheckpoint"
)

var (
	devV1Layout = &layout{
		New: func() any { return checkpoint.NewDataV1() },
		Model: func(v, _ any) any {
			cp := v.(*checkpoint.DataV1)
			out := &DeviceState{RegisteredDevices: cp.Registered()}
			for _, e := range cp.Entries() {
				out.PodDeviceEntries = append(out.PodDeviceEntries, DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
					ResourceName: e.ResourceName, DeviceIDs: e.DeviceIDs, AllocResp: e.AllocResp})
			}
			return out
		},
	}
	devV2Layout = &layout{
		New: func() any { return checkpoint.NewData() },
		Model: func(v, _ any) any {
			cp := v.(*checkpoint.Data)
			out := &DeviceState{RegisteredDevices: cp.Registered()}
			for _, e := range cp.Entries() {
				out.PodDeviceEntries = append(out.PodDeviceEntries, DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
					ResourceName: e.ResourceName, DevicesPerNUMA: e.DeviceIDs, AllocResp: e.AllocResp})
			}
			return out
		},
	}
)
