package decode

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	alloc133 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate133"
	alloc135 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate135"
	alloc137 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate137"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
	podstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/podstate"
)

// The pod resource files of in-place resize (docs/checkpoint-formats.md part B §4):
//   - pod_status_manager_state ps-v1 (1.27-1.31): allocated requests per container and resize
//     status per pod, fnv32a over the spew text (resource.Quantity internals included);
//   - pod_status_manager_state ps-v2 (1.32): {"data","checksum"}, fnv32a("(string)"+data);
//   - allocated_pods_state / actuated_pods_state (1.33+): the same envelope; the data gains
//     PodLevelResources in 1.35 (alloc-v1b) and EmptyDirVolumeLimits in 1.37 (alloc-v1c).

// PodAllocationState is pod_status_manager_state, allocated_pods_state or actuated_pods_state:
// the resources the kubelet allocated to (or actuated for) each pod.
type PodAllocationState struct {
	// RequestsOnly: the file records only the allocated requests (ps-v1, kubelet 1.27-1.31), so
	// every container's Limits are unknown rather than unset.
	RequestsOnly bool `json:"requestsOnly,omitempty"`
	// Pods is pod UID -> its resources.
	Pods map[string]PodResources `json:"pods"`
}

// PodResources is one pod's recorded resources.
type PodResources struct {
	// Containers is container name -> resources (ps-v1: the allocated requests only).
	Containers map[string]corev1.ResourceRequirements `json:"containers,omitempty"`
	// PodLevel is the pod-level resources (1.35+).
	PodLevel *corev1.ResourceRequirements `json:"podLevel,omitempty"`
	// EmptyDirVolumeLimits is emptyDir volume -> size limit (1.37+; volumes recorded without a
	// limit are left out).
	EmptyDirVolumeLimits map[string]resource.Quantity `json:"emptyDirVolumeLimits,omitempty"`
	// ResizeStatus is the pod's last resize status (ps-v1 only).
	ResizeStatus string `json:"resizeStatus,omitempty"`
}

var (
	podStatusV1Layout = layoutOf(layoutSpec[podstate.PodResourceAllocationCheckpoint, noData]{
		New: podstate.NewPodResourceAllocationCheckpoint,
		Model: func(cp *podstate.PodResourceAllocationCheckpoint, _ *noData) any {
			out := &PodAllocationState{RequestsOnly: true, Pods: map[string]PodResources{}}
			for uid, containers := range cp.AllocationEntries {
				p := out.Pods[uid]
				for name, requests := range containers {
					if p.Containers == nil {
						p.Containers = map[string]corev1.ResourceRequirements{}
					}
					p.Containers[name] = corev1.ResourceRequirements{Requests: requests}
				}
				out.Pods[uid] = p
			}
			for uid, status := range cp.ResizeStatusEntries {
				p := out.Pods[uid]
				p.ResizeStatus = string(status)
				out.Pods[uid] = p
			}
			return out
		},
	})
	podStatusV2Layout = layoutOf(layoutSpec[podstate.Checkpoint, podstate.PodResourceAllocationInfo]{
		// restoreState decodes into NewCheckpoint(nil): data "null" with its checksum, which an
		// absent key leaves in place.
		New: func() *podstate.Checkpoint {
			return &podstate.Checkpoint{Data: "null", Checksum: checksum.Checksum(fnv32a(stringPrefix, []byte("null")))}
		},
		Data:      func(cp *podstate.Checkpoint) string { return cp.Data },
		DataError: "failed to get pod resource allocation info: %w", AfterVerify: true,
		Model: func(_ *podstate.Checkpoint, d *podstate.PodResourceAllocationInfo) any {
			out := &PodAllocationState{Pods: map[string]PodResources{}}
			for uid, containers := range d.AllocationEntries {
				out.Pods[uid] = PodResources{Containers: containers}
			}
			return out
		},
	})

	// The allocation files' data document grows era by era: one model reads the newest type, into
	// which an older document re-encodes without loss (what the older layout dropped stays absent).
	allocV1aLayout = allocLayout[alloc133.Checkpoint, alloc133.PodResourceCheckpointInfo](allocV1aEnvelope)
	allocV1bLayout = allocLayout[alloc135.Checkpoint, alloc135.PodResourceCheckpointInfo](allocV1bEnvelope)
	allocV1cLayout = allocLayout[alloc137.Checkpoint, alloc137.PodResourceCheckpointInfo](allocV1cEnvelope)
)

func allocLayout[T, P any](envelope func(*T) (string, uint64)) *layout {
	return layoutOf(layoutSpec[T, P]{
		New:       func() *T { return new(T) },
		Data:      func(cp *T) string { data, _ := envelope(cp); return data },
		DataError: "failed to get pod resource information: %w", AfterVerify: true,
		Model: func(_ *T, d *P) any { return allocModel(reencode[alloc137.PodResourceCheckpointInfo](d)) },
	})
}

func allocModel(d *alloc137.PodResourceCheckpointInfo) *PodAllocationState {
	out := &PodAllocationState{Pods: map[string]PodResources{}}
	for uid, p := range d.Entries {
		r := PodResources{Containers: p.ContainerResources, PodLevel: p.PodLevelResources}
		for vol, limit := range p.EmptyDirVolumeLimits {
			if limit == nil {
				continue
			}
			if r.EmptyDirVolumeLimits == nil {
				r.EmptyDirVolumeLimits = map[string]resource.Quantity{}
			}
			r.EmptyDirVolumeLimits[vol] = *limit
		}
		out.Pods[string(uid)] = r
	}
	return out
}

// The typed accessors of the era table.
func podStatusV1Sum(cp *podstate.PodResourceAllocationCheckpoint) *checksumField { return &cp.Checksum }
func podStatusV2Envelope(cp *podstate.Checkpoint) (string, uint64) {
	return cp.Data, uint64(cp.Checksum)
}
func allocV1aEnvelope(cp *alloc133.Checkpoint) (string, uint64) { return cp.Data, uint64(cp.Checksum) }
func allocV1bEnvelope(cp *alloc135.Checkpoint) (string, uint64) { return cp.Data, uint64(cp.Checksum) }
func allocV1cEnvelope(cp *alloc137.Checkpoint) (string, uint64) { return cp.Data, uint64(cp.Checksum) }

// allocDataHasPodKey: some pod entry of the data document has key (matched as encoding/json
// does), a mark of the layout that added it.
func allocDataHasPodKey(key string) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool {
		for _, pod := range d.allocPods.get(d.allocPodEntries) {
			if lookupFold(pod, key) != nil {
				return true
			}
		}
		return false
	}
}

// allocPodEntries is every pod entry of the data document.
func (d *shapeDoc) allocPodEntries() []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, pod := range objectMap(lookupFold(d.dataDocument(), "entries"), true) {
		out = append(out, pod)
	}
	return out
}
