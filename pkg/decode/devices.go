package decode

import (
	checkpoint "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/devcheckpoint"
)

// The two device checkpoint layouts differ only in how an entry records its devices: a flat
// list (V1, kubelet <= 1.19) or per NUMA node.
var (
	devV1Layout = deviceLayout(checkpoint.NewDataV1, func(e checkpoint.PodDevicesEntryV1) DeviceEntry {
		return DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName, ResourceName: e.ResourceName, DeviceIDs: e.DeviceIDs, AllocResp: e.AllocResp}
	})
	devV2Layout = deviceLayout(checkpoint.NewData, func(e checkpoint.PodDevicesEntry) DeviceEntry {
		return DeviceEntry{PodUID: e.PodUID, ContainerName: e.ContainerName, ResourceName: e.ResourceName, DevicesPerNUMA: e.DeviceIDs, AllocResp: e.AllocResp}
	})
)

// deviceCheckpoint is what both device checkpoint layouts offer: P is the pointer to C.
type deviceCheckpoint[C, E any] interface {
	*C
	Registered() map[string][]string
	Entries() []E
}

// deviceLayout is a device checkpoint layout whose entries entry turns into the model's.
func deviceLayout[C, E any, P deviceCheckpoint[C, E]](newCheckpoint func() P, entry func(E) DeviceEntry) *layout {
	return layoutOf(layoutSpec[C, noData]{
		New: func() *C { return newCheckpoint() },
		Model: func(cp *C, _ *noData) any {
			out := &DeviceState{RegisteredDevices: P(cp).Registered()}
			for _, e := range P(cp).Entries() {
				out.PodDeviceEntries = append(out.PodDeviceEntries, entry(e))
			}
			return out
		},
	})
}

// The checksum sits beside Data, and the value of Data is what is hashed.
func devV1Sum(cp *checkpoint.DataV1) *checksumField { return &cp.Checksum }
func devV2Sum(cp *checkpoint.Data) *checksumField   { return &cp.Checksum }
func devV1Hashed(cp *checkpoint.DataV1) any         { return cp.Data }
func devV2Hashed(cp *checkpoint.Data) any           { return cp.Data }
