// Package checkpoint mirrors pkg/kubelet/cm/devicemanager/checkpoint.
package checkpoint

import "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"

// DevicesPerNUMA is NUMA node -> device IDs (1.20+).
type DevicesPerNUMA map[int64][]string

// PodDevicesEntry is one container's allocation of one resource (1.20+).
type PodDevicesEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     DevicesPerNUMA
	AllocResp     []byte
}

// checkpointData is hashed by value; its unexported name is part of the hashed text.
type checkpointData struct {
	PodDeviceEntries  []PodDevicesEntry
	RegisteredDevices map[string][]string
}

// Data is the 1.20+ file.
type Data struct {
	Data     checkpointData
	Checksum checksum.Checksum
}

// PodDevicesEntryV1 is the 1.11-1.19 entry: a flat device list.
type PodDevicesEntryV1 struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     []string
	AllocResp     []byte
}

type checkpointDataV1 struct {
	PodDeviceEntries  []PodDevicesEntryV1
	RegisteredDevices map[string][]string
}

// DataV1 is the 1.11-1.19 file.
type DataV1 struct {
	Data     checkpointDataV1
	Checksum checksum.Checksum
}

// NewData returns the value the kubelet's reader decodes into: an empty, non-nil entry slice and
// registered-devices map (an absent key therefore hashes as "[]", a null as "<nil>").
func NewData() *Data {
	return &Data{Data: checkpointData{PodDeviceEntries: []PodDevicesEntry{}, RegisteredDevices: map[string][]string{}}}
}

// NewDataV1 is NewData for the V1 layout.
func NewDataV1() *DataV1 {
	return &DataV1{Data: checkpointDataV1{PodDeviceEntries: []PodDevicesEntryV1{}, RegisteredDevices: map[string][]string{}}}
}

// Entries returns the decoded entries (nil when the file said null).
func (d *Data) Entries() []PodDevicesEntry { return d.Data.PodDeviceEntries }

// Registered returns the registered devices.
func (d *Data) Registered() map[string][]string { return d.Data.RegisteredDevices }

// Entries returns the decoded entries (nil when the file said null).
func (d *DataV1) Entries() []PodDevicesEntryV1 { return d.Data.PodDeviceEntries }

// Registered returns the registered devices.
func (d *DataV1) Registered() map[string][]string { return d.Data.RegisteredDevices }
