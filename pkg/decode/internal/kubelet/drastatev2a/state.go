// Package state mirrors pkg/kubelet/cm/dra/state of kubelet 1.31-1.34 (dra_manager_state era v2a).
// The file is {"Data": <JSON document>, "Checksum": crc32(Data)}; no spew is involved, but the
// type names appear in encoding/json's errors, so they are the kubelet's.
package state

import (
	"encoding/json"
	"hash/crc32"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Checkpoint is the whole file (no JSON tags: "Data" and "Checksum").
type Checkpoint struct {
	Data     string
	Checksum uint32
}

// CheckpointData is the document inside Data; the kubelet checks neither kind nor apiVersion.
type CheckpointData struct {
	metav1.TypeMeta
	ClaimInfoStateList ClaimInfoStateList
}

// ClaimInfoStateList is the list of prepared claims.
type ClaimInfoStateList []ClaimInfoState

// ClaimInfoState is one prepared claim.
type ClaimInfoState struct {
	ClaimUID    types.UID
	ClaimName   string
	Namespace   string
	PodUIDs     sets.Set[string]
	DriverState map[string]DriverState
}

// DriverState is what one driver prepared for the claim.
type DriverState struct {
	Devices []Device
}

// Device is one prepared device.
type Device struct {
	PoolName     string
	DeviceName   string
	RequestNames []string
	CDIDeviceIDs []string
}

// NewCheckpoint returns what GetOrCreate decodes into: NewCheckpoint(nil), i.e. the empty
// document and its checksum, which an absent "Data" or "Checksum" key leaves in place.
func NewCheckpoint() *Checkpoint {
	data, _ := json.Marshal(&CheckpointData{
		TypeMeta: metav1.TypeMeta{Kind: "DRACheckpoint", APIVersion: "checkpoint.dra.kubelet.k8s.io/v1"},
	})
	return &Checkpoint{Data: string(data), Checksum: crc32.ChecksumIEEE(data)}
}
