// Package state mirrors pkg/kubelet/cm/dra/state of kubelet 1.27 (dra_manager_state era v1a):
// claims without resource handles, checksum over the spew text of the whole checkpoint.
package state

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// DRAManagerCheckpoint is the whole file.
type DRAManagerCheckpoint struct {
	Version  string             `json:"version"`
	Entries  ClaimInfoStateList `json:"entries,omitempty"`
	Checksum checksum.Checksum  `json:"checksum"`
}

// ClaimInfoStateList is the list of prepared claims.
type ClaimInfoStateList []ClaimInfoState

// ClaimInfoState is one prepared claim (no JSON tags: Go field names are the keys).
type ClaimInfoState struct {
	DriverName string
	ClassName  string
	ClaimUID   types.UID
	ClaimName  string
	Namespace  string
	PodUIDs    sets.Set[string]
	CDIDevices map[string][]string
}

// NewDRAManagerCheckpoint is what the kubelet decodes into: version "v1" and an empty, non-nil
// entry list (an absent "entries" hashes as "[]", a null as "<nil>").
func NewDRAManagerCheckpoint() *DRAManagerCheckpoint {
	return &DRAManagerCheckpoint{Version: "v1", Entries: ClaimInfoStateList{}}
}
