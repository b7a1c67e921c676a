package decode

import (
	checkpoint "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/devcheckpoint"
)

var (
	devV1Layout = layoutOf(layoutSpec[checkpoint.DataV1, noData]{
		New: checkpoint.NewDataV1,
		Model: func(cp *checkpoint.DataV1, _ *noData) any {
			out := &DeviceState{RegisteredDevices: cp.Registered()}
			for _, e := range cp.Entries() {
				out.PodDeviceEntries = append(out.PodDeviceEntries, DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
					ResourceName: e.ResourceName, DeviceIDs: e.DeviceIDs, AllocResp: e.AllocResp})
			}
			return out
		},
	})
	devV2Layout = layoutOf(layoutSpec[checkpoint.Data, noData]{
		New: checkpoint.NewData,
		Model: func(cp *checkpoint.Data, _ *noData) any {
			out := &DeviceState{RegisteredDevices: cp.Registered()}
			for _, e := range cp.Entries() {
				out.PodDeviceEntries = append(out.PodDeviceEntries, DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
					ResourceName: e.ResourceName, DevicesPerNUMA: e.DeviceIDs, AllocResp: e.AllocResp})
			}
			return out
		},
	})
)

// The checksum sits beside Data, and the value of Data is what is hashed.
func devV1Sum(cp *checkpoint.DataV1) *checksumField { return &cp.Checksum }
func devV2Sum(cp *checkpoint.Data) *checksumField   { return &cp.Checksum }
func devV1Hashed(cp *checkpoint.DataV1) any         { return cp.Data }
func devV2Hashed(cp *checkpoint.Data) any           { return cp.Data }
