// Package state mirrors pkg/kubelet/allocation/state of kubelet 1.37+ (adds EmptyDirVolumeLimits)
// (allocated_pods_state and actuated_pods_state): a JSON document in "data" with
// fnv32a("(string)"+data) in "checksum".
package state

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// Checkpoint is the whole file.
type Checkpoint struct {
	Data     string            `json:"data"`
	Checksum checksum.Checksum `json:"checksum"`
}

// PodResourceCheckpointInfo is the document inside Data.
type PodResourceCheckpointInfo struct {
	Entries PodResourceInfoMap `json:"entries,omitempty"`
}

// PodResourceInfoMap is pod UID -> its resources.
type PodResourceInfoMap map[types.UID]PodResourceInfo

// PodResourceInfo is one pod's resources (no JSON tags: Go field names are the keys).
type PodResourceInfo struct {
	ContainerResources   map[string]v1.ResourceRequirements
	PodLevelResources    *v1.ResourceRequirements
	EmptyDirVolumeLimits map[string]*resource.Quantity
}
