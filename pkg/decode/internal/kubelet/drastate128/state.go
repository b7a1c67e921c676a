// Package state mirrors pkg/kubelet/cm/dra/state of kubelet 1.28-1.29 (dra_manager_state era
// v1b): claims carry resource.k8s.io/v1alpha2 ResourceHandles (k8s.io/api v0.28/v0.29 shape), and
// a checksum that fails is retried as the 1.27 text, rebuilt without the handles.
package state

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drav1alpha2v029"
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
	DriverName      string
	ClassName       string
	ClaimUID        types.UID
	ClaimName       string
	Namespace       string
	PodUIDs         sets.Set[string]
	ResourceHandles []v1alpha2.ResourceHandle
	CDIDevices      map[string][]string
}

// DRAManagerCheckpointWithoutResourceHandles is the kubelet's copy of the 1.27 layout, used only
// to re-hash a checkpoint whose own checksum failed.
type DRAManagerCheckpointWithoutResourceHandles struct {
	Version  string                                   `json:"version"`
	Entries  ClaimInfoStateListWithoutResourceHandles `json:"entries,omitempty"`
	Checksum checksum.Checksum                        `json:"checksum"`
}

// ClaimInfoStateListWithoutResourceHandles is the 1.27 claim list.
type ClaimInfoStateListWithoutResourceHandles []ClaimInfoStateWithoutResourceHandles

// ClaimInfoStateWithoutResourceHandles is the 1.27 claim.
type ClaimInfoStateWithoutResourceHandles struct {
	DriverName string
	ClassName  string
	ClaimUID   types.UID
	ClaimName  string
	Namespace  string
	PodUIDs    sets.Set[string]
	CDIDevices map[string][]string
}

// NewDRAManagerCheckpoint is what the kubelet decodes into: version "v1" and an empty, non-nil
// entry list.
func NewDRAManagerCheckpoint() *DRAManagerCheckpoint {
	return &DRAManagerCheckpoint{Version: "v1", Entries: ClaimInfoStateList{}}
}

// WithoutResourceHandles rebuilds the decoded checkpoint as verifyChecksumWithoutResourceHandles
// does: version forced to "v1", a non-nil entry list, the handles dropped, checksum 0.
func (dc *DRAManagerCheckpoint) WithoutResourceHandles() *DRAManagerCheckpointWithoutResourceHandles {
	entries := ClaimInfoStateListWithoutResourceHandles{}
	for _, e := range dc.Entries {
		entries = append(entries, ClaimInfoStateWithoutResourceHandles{
			DriverName: e.DriverName, ClassName: e.ClassName, ClaimUID: e.ClaimUID, ClaimName: e.ClaimName,
			Namespace: e.Namespace, PodUIDs: e.PodUIDs, CDIDevices: e.CDIDevices,
		})
	}
	return &DRAManagerCheckpointWithoutResourceHandles{Version: "v1", Entries: entries}
}
