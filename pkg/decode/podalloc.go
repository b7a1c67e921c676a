package decode

import (
	"encoding/json"
	"fmt"
	"slices"

	json127 "github.com/go-json-experiment/json/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	alloc133 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate133"
	alloc135 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate135"
	alloc137 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate137"
	alloc138 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate138"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
	podstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/podstate"
)

// The pod resource files of in-place resize (docs/checkpoint-formats.md part B §4):
//   - pod_status_manager_state ps-v1 (1.27-1.31): allocated requests per container and resize
//     status per pod, fnv32a over the spew text (resource.Quantity internals included);
//   - pod_status_manager_state ps-v2 (1.32): {"data","checksum"}, fnv32a("(string)"+data);
//   - allocated_pods_state / actuated_pods_state (1.33+): the same envelope; the data gains
//     PodLevelResources in 1.35 (alloc-v1b) and EmptyDirVolumeLimits in 1.37 (alloc-v1c);
//   - 1.38.0-beta.0+ (alloc-v2): a version, and a data document holding the pods themselves
//     (protobuf v1.PodList) beside the V1 entries, written for older kubelets only.

// PodAllocationState is pod_status_manager_state, allocated_pods_state or actuated_pods_state:
// the resources the kubelet allocated to (or actuated for) each pod.
type PodAllocationState struct {
	// RequestsOnly: the file records only the allocated requests (ps-v1, kubelet 1.27-1.31), so
	// every container's Limits are unknown rather than unset.
	RequestsOnly bool `json:"requestsOnly,omitempty"`
	// Pods is pod UID -> its resources.
	Pods map[string]PodResources `json:"pods"`
	// FromPodList: the pods are the V2 file's podList, what a 1.38+ kubelet restores (each
	// PodResources has its Pod).
	FromPodList bool `json:"fromPodList,omitempty"`
	// MigratedFromV1: a 1.38+ kubelet read a V1 file: it rebuilds its pods from these entries
	// (no names; every container a regular one) and rewrites the file as V2 at once.
	MigratedFromV1 bool `json:"migratedFromV1,omitempty"`
	// EntriesDisagree is the pods (UIDs, sorted) whose V1 entries in a V2 file are not what the
	// kubelet derives from its podList: what an older kubelet restores after a rollback differs
	// from what 1.38 restored.
	EntriesDisagree []string `json:"entriesDisagree,omitempty"`
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
	// Name and Namespace are the pod's (V2 files written for an admitted pod; a pod migrated
	// from a V1 file has none).
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Pod is the pod as a 1.38+ kubelet restores it from a V2 file: UID, name, namespace, spec.
	Pod *corev1.Pod `json:"pod,omitempty"`
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

// allocV2Layout is how 1.38.0-beta.0+ read every allocation file: the checksum as before, then
// the data document by the file's version (Checkpoint.GetPodList).
var allocV2Layout = layoutOf(layoutSpec[alloc138.Checkpoint, allocV2Document]{
	New:       func() *alloc138.Checkpoint { return new(alloc138.Checkpoint) },
	Data:      func(cp *alloc138.Checkpoint) string { return cp.Data },
	Payload:   allocV2Payload,
	DataError: "failed to get pod resource information: %w", AfterVerify: true,
	Model: func(_ *alloc138.Checkpoint, d *allocV2Document) any { return allocV2Model(d) },
})

// allocV2Document is what GetPodList made of the data document: a V2 file's pods and its V1
// entries, or a V1 file's document (migrated).
type allocV2Document struct {
	Pods    *corev1.PodList
	Entries alloc137.PodResourceInfoMap
	V1      *alloc137.PodResourceCheckpointInfo
}

// allocV2Payload is Checkpoint.GetPodList (checkpoint_v2.go), its errors in its words: only
// kubelets built with Go 1.27 read this layout (builtWithGo127), so the data document is decoded
// by that encoding/json.
func allocV2Payload(cp *alloc138.Checkpoint) (*allocV2Document, error) {
	switch cp.Version {
	case alloc138.VersionV2:
		var data alloc138.CheckpointData
		if err := json127.Unmarshal([]byte(cp.Data), &data); err != nil {
			return nil, fmt.Errorf("failed to unmarshal V2 checkpoint data: %w", err)
		}
		pods := &corev1.PodList{}
		if err := pods.Unmarshal(data.PodListProto); err != nil {
			return nil, fmt.Errorf("failed to unmarshal protobuf PodList: %w", err)
		}
		return &allocV2Document{Pods: pods, Entries: data.Entries}, nil
	case "":
		var v1 alloc137.PodResourceCheckpointInfo
		if err := json127.Unmarshal([]byte(cp.Data), &v1); err != nil {
			return nil, fmt.Errorf("failed to migrate legacy V1 checkpoint: %w", err)
		}
		return &allocV2Document{V1: &v1}, nil
	}
	return nil, fmt.Errorf("unsupported checkpoint version %q: this kubelet reads legacy (unversioned) and %q checkpoints", cp.Version, alloc138.VersionV2)
}

func allocV2Model(d *allocV2Document) *PodAllocationState {
	if d.V1 != nil {
		out := allocModel(reencode[alloc137.PodResourceCheckpointInfo](d.V1))
		out.MigratedFromV1 = true
		return out
	}
	out := &PodAllocationState{Pods: map[string]PodResources{}, FromPodList: true}
	// restoreState keys the pods by UID: a later pod of the same UID replaces an earlier one.
	byUID := map[types.UID]*corev1.Pod{}
	for i := range d.Pods.Items {
		pod := &d.Pods.Items[i]
		byUID[pod.UID] = pod
	}
	for uid, pod := range byUID {
		legacy := podV1Entry(pod)
		r := PodResources{Name: pod.Name, Namespace: pod.Namespace, Pod: pod,
			Containers: legacy.ContainerResources, PodLevel: legacy.PodLevelResources}
		for _, vol := range pod.Spec.Volumes {
			// GetEmptyDirVolumeLimit: any emptyDir volume's size limit.
			if vol.EmptyDir != nil && vol.EmptyDir.SizeLimit != nil {
				if r.EmptyDirVolumeLimits == nil {
					r.EmptyDirVolumeLimits = map[string]resource.Quantity{}
				}
				r.EmptyDirVolumeLimits[vol.Name] = *vol.EmptyDir.SizeLimit
			}
		}
		out.Pods[string(uid)] = r
	}
	out.EntriesDisagree = entriesDisagree(d.Pods, d.Entries)
	return out
}

// podV1Entry is podListToV1Entries (checkpoint_v1.go) for one pod: the V1 entry the writer
// derives from it for older kubelets.
func podV1Entry(pod *corev1.Pod) alloc137.PodResourceInfo {
	info := alloc137.PodResourceInfo{ContainerResources: map[string]corev1.ResourceRequirements{}}
	for _, c := range pod.Spec.InitContainers {
		info.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	for _, c := range pod.Spec.Containers {
		info.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	for _, c := range pod.Spec.EphemeralContainers {
		info.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	if pod.Spec.Resources != nil {
		info.PodLevelResources = pod.Spec.Resources.DeepCopy()
	}
	for _, vol := range pod.Spec.Volumes {
		// Only memory-backed emptyDir volumes with a size limit: what V1 kubelets stored.
		if vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.IsZero() {
			continue
		}
		if info.EmptyDirVolumeLimits == nil {
			info.EmptyDirVolumeLimits = map[string]*resource.Quantity{}
		}
		limit := *vol.EmptyDir.SizeLimit
		info.EmptyDirVolumeLimits[vol.Name] = &limit
	}
	return info
}

// entriesDisagree is the pods whose stored V1 entry differs from the one derived from podList
// (both ways: a pod only one side has), compared as the kubelet compares resources (semantic
// equality: quantities by value, nil and empty alike).
func entriesDisagree(pods *corev1.PodList, entries alloc137.PodResourceInfoMap) []string {
	derived := alloc137.PodResourceInfoMap{}
	for i := range pods.Items {
		derived[pods.Items[i].UID] = podV1Entry(&pods.Items[i])
	}
	var out []string
	for uid, want := range derived {
		if got, ok := entries[uid]; !ok || !apiequality.Semantic.DeepEqual(got, want) {
			out = append(out, string(uid))
		}
	}
	for uid := range entries {
		if _, ok := derived[uid]; !ok {
			out = append(out, string(uid))
		}
	}
	slices.Sort(out)
	return out
}

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
func allocV2Envelope(cp *alloc138.Checkpoint) (string, uint64)  { return cp.Data, uint64(cp.Checksum) }

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
