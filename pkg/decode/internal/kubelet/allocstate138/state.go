// Package state mirrors pkg/kubelet/allocation/state of kubelet 1.38.0-beta.0+
// (checkpoint.go, checkpoint_v2.go): the checkpoint gains a version; "v2" files hold, in the data
// document, the protobuf encoding of a v1.PodList (podList, base64 in JSON) and the V1 entries
// (written for older kubelets only); an unversioned file is a V1 file, which 1.38 migrates.
package state

import (
	alloc137 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate137"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// VersionV2 is checkpointVersionV2.
const VersionV2 = "v2"

// Checkpoint is the whole file; Checksum is fnv32a("(string)"+Data), as in V1.
type Checkpoint struct {
	Version  string            `json:"version,omitempty"`
	Data     string            `json:"data"`
	Checksum checksum.Checksum `json:"checksum"`
}

// CheckpointData is the V2 document inside Data.
type CheckpointData struct {
	// PodListProto is the protobuf v1.PodList, pods sorted by UID (base64 in JSON).
	PodListProto []byte `json:"podList,omitempty"`
	// Entries is the V1 document's map, kept for a rollback: 1.38 decodes it, never uses it.
	Entries PodResourceInfoMap `json:"entries,omitempty"`
}

// PodResourceInfoMap is the V1 map (its type name is in the kubelet's JSON errors).
type PodResourceInfoMap = alloc137.PodResourceInfoMap
