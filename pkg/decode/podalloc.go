package decode

import (
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

const (
	wrapPodStatus = "could not restore state from checkpoint: %[1]s, please drain this node and delete pod allocation checkpoint file %[2]q before restarting Kubelet"
	wrapPodInfo   = "could not restore state from checkpoint: %[1]s, please drain this node and delete pod resource information checkpoint file %[2]q before restarting Kubelet"
	// 1.35+ open actuated_pods_state in kuberuntime, which wraps the state error once more.
	wrapActuated = "failed to initialize actuated state checkpoint: " + wrapPodInfo
)

var (
	podStatusV1Layout = &layout{
		New: func() any { return podstate.NewPodResourceAllocationCheckpoint() },
		Model: func(v, _ any) any {
			cp := v.(*podstate.PodResourceAllocationCheckpoint)
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
	}
	podStatusV2Layout = &layout{
		// restoreState decodes into NewCheckpoint(nil): data "null" with its checksum, which an
		// absent key leaves in place.
		New: func() any {
			return &podstate.Checkpoint{Data: "null", Checksum: checksum.Checksum(fnv32a(stringPrefix, []byte("null")))}
		},
		Payload: func(v any) (any, error) {
			data := &podstate.PodResourceAllocationInfo{}
			return data, unmarshalPayload(v.(*podstate.Checkpoint).Data, data)
		},
		PayloadError: "failed to get pod resource allocation info: %w", PayloadAfterVerify: true,
		Model: func(_, payload any) any {
			d := payload.(*podstate.PodResourceAllocationInfo)
			out := &PodAllocationState{Pods: map[string]PodResources{}}
			for uid, containers := range d.AllocationEntries {
				out.Pods[uid] = PodResources{Containers: containers}
			}
			return out
		},
	}

	allocV1aLayout = &layout{
		New: func() any { return &alloc133.Checkpoint{} },
		Payload: func(v any) (any, error) {
			data := &alloc133.PodResourceCheckpointInfo{}
			return data, unmarshalPayload(v.(*alloc133.Checkpoint).Data, data)
		},
		PayloadError: "failed to get pod resource information: %w", PayloadAfterVerify: true,
		Model: func(_, payload any) any {
			out := &PodAllocationState{Pods: map[string]PodResources{}}
			for uid, p := range payload.(*alloc133.PodResourceCheckpointInfo).Entries {
				out.Pods[string(uid)] = PodResources{Containers: p.ContainerResources}
			}
			return out
		},
	}
	allocV1bLayout = &layout{
		New: func() any { return &alloc135.Checkpoint{} },
		Payload: func(v any) (any, error) {
			data := &alloc135.PodResourceCheckpointInfo{}
			return data, unmarshalPayload(v.(*alloc135.Checkpoint).Data, data)
		},
		PayloadError: "failed to get pod resource information: %w", PayloadAfterVerify: true,
		Model: func(_, payload any) any {
			out := &PodAllocationState{Pods: map[string]PodResources{}}
			for uid, p := range payload.(*alloc135.PodResourceCheckpointInfo).Entries {
				out.Pods[string(uid)] = PodResources{Containers: p.ContainerResources, PodLevel: p.PodLevelResources}
			}
			return out
		},
	}
	allocV1cLayout = &layout{
		New: func() any { return &alloc137.Checkpoint{} },
		Payload: func(v any) (any, error) {
			data := &alloc137.PodResourceCheckpointInfo{}
			return data, unmarshalPayload(v.(*alloc137.Checkpoint).Data, data)
		},
		PayloadError: "failed to get pod resource information: %w", PayloadAfterVerify: true,
		Model: func(_, payload any) any {
			out := &PodAllocationState{Pods: map[string]PodResources{}}
			for uid, p := range payload.(*alloc137.PodResourceCheckpointInfo).Entries {
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
		},
	}
)

// allocDataHasPodKey: some pod entry of the data document has key (matched as encoding/json
// does), a mark of the layout that added it.
func allocDataHasPodKey(key string) func(jsonObject) bool {
	return func(top jsonObject) bool {
		doc := dataDocument(top)
		for _, pod := range objectMap(lookupFold(doc, "entries")) {
			if lookupFold(pod, key) != nil {
				return true
			}
		}
		return false
	}
}
