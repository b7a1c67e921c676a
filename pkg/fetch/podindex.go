package fetch

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// configMirrorAnnotation is on a static pod's mirror pod and holds the UID the kubelet knows
// the static pod by, the one its checkpoints use (kubetypes.ConfigMirrorAnnotationKey).
const configMirrorAnnotation = "kubernetes.io/config.mirror"

// PodRef names a pod.
type PodRef struct {
	Namespace, Name string
}

func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// ContainerRef names a container of a pod.
type ContainerRef struct {
	Namespace, Pod, Container string
}

func (r ContainerRef) String() string { return r.Namespace + "/" + r.Pod + "/" + r.Container }

// PodIndex names the IDs that checkpoints hold: pod UIDs, and container IDs (CPU manager state
// v1 keys containers by ID). The zero value and nil are empty indexes.
type PodIndex struct {
	Pods       map[string]PodRef       // pod UID -> pod
	Containers map[string]ContainerRef // container ID without its runtime scheme -> container
	// ContainerNames lists, per pod UID, the names of the pod's containers (init and
	// ephemeral ones too), so doctor can tell a container gone from a live pod.
	ContainerNames map[string]map[string]bool
	// Statuses lists, per pod UID, its containers' IDs and whether they run.
	Statuses map[string][]ContainerStatus
	// Sandboxes are the pods whose sandbox the runtime runs (node-local, from its bundles; nil
	// elsewhere): pods the kubelet has not finished with.
	Sandboxes map[string]bool
	// Running are the pods that hold node resources (not Succeeded or Failed, not this
	// plugin's debug pods), kept to their names and resources: the "other pods" of the
	// kubelet's node-resource predicate.
	Running []*corev1.Pod
	// Active holds the UIDs the kubelet knows the pods not Succeeded or Failed by (a static
	// pod's too): the pods its managers count active (GetActivePods).
	Active map[string]bool
	// Debug holds the UIDs of this plugin's own debug pods: those listed with its label, and
	// the one Fetch created to read the node, which the kubelet's files still list (1.37
	// keeps it in actuated_pods_state for about a minute after deletion).
	Debug map[string]bool
	// Unlisted: the node's pods could not be listed, so the index names none and knows of none
	// gone (an empty index otherwise says the API server has no pod there).
	Unlisted bool
	// DebugNamespace is the namespace Fetch made its debug pod in ("" when none): a pod gone
	// from the API server that a 1.38+ V2 allocation file still names there with PodNamePrefix
	// is one of this plugin's earlier debug pods (see DebugPodNamed).
	DebugNamespace string
}

// DebugPod reports whether uid is one of this plugin's own debug pods.
func (ix *PodIndex) DebugPod(uid string) bool {
	return ix != nil && ix.Debug[uid]
}

// DebugPodNamed reports whether a pod the API server no longer lists, named namespace/name by
// the kubelet's own file (1.38+ V2 podList), is one of this plugin's debug pods: the kubelet
// keeps a deleted pod in actuated_pods_state until its container GC (every minute), and the
// admission policy lets only pods named with PodNamePrefix run in the debug namespace.
func (ix *PodIndex) DebugPodNamed(namespace, name string) bool {
	return ix != nil && ix.DebugNamespace != "" && namespace == ix.DebugNamespace && strings.HasPrefix(name, PodNamePrefix)
}

// Pod names a pod UID.
func (ix *PodIndex) Pod(uid string) (PodRef, bool) {
	if ix == nil {
		return PodRef{}, false
	}
	r, ok := ix.Pods[uid]
	return r, ok
}

// Container names a container ID, with or without its scheme ("containerd://...").
func (ix *PodIndex) Container(id string) (ContainerRef, bool) {
	if ix == nil {
		return ContainerRef{}, false
	}
	r, ok := ix.Containers[stripScheme(id)]
	return r, ok
}

// IndexNodePods indexes the pods bound to node with ONE field-selected list, instead of a
// request per ID. The list is served from the API server's watch cache as it is
// (resourceVersion "0"), without first asking etcd for its current revision as a consistent
// read does: the kubelet learned every pod its files name from a watch served by that cache,
// before it wrote them and long before this list, so the cache holds them.
func IndexNodePods(ctx context.Context, client kubernetes.Interface, node string) (*PodIndex, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("spec.nodeName", node).String(),
		ResourceVersion: "0",
	})
	if err != nil {
		return nil, ExplainError(err, "")
	}
	// Filter again: cheap, and fake clientsets ignore field selectors.
	pods := list.Items[:0]
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			pods = append(pods, p)
		}
	}
	return NewPodIndex(pods), nil
}

// NewPodIndex indexes pods, e.g. from one cluster-wide list when reading many nodes.
func NewPodIndex(pods []corev1.Pod) *PodIndex {
	ix := &PodIndex{Pods: map[string]PodRef{}, Containers: map[string]ContainerRef{}, Debug: map[string]bool{}, Active: map[string]bool{},
		ContainerNames: map[string]map[string]bool{}, Statuses: map[string][]ContainerStatus{}}
	for i := range pods {
		ix.add(&pods[i])
	}
	return ix
}

// add indexes one pod.
func (ix *PodIndex) add(p *corev1.Pod) {
	ref := PodRef{Namespace: p.Namespace, Name: p.Name}
	names := containerNames(&p.Spec)
	if p.UID != "" {
		ix.Pods[string(p.UID)] = ref
		if names != nil {
			ix.ContainerNames[string(p.UID)] = names
		}
		if p.Labels[LabelManagedBy] == ManagedBy {
			ix.Debug[string(p.UID)] = true
		}
	}
	if uid := p.Annotations[configMirrorAnnotation]; uid != "" {
		ix.Pods[uid] = ref
		if names != nil {
			ix.ContainerNames[uid] = names
		}
	}
	// The kubelet names a static pod's cgroup by the UID it knows it by, the annotation's.
	for _, uid := range []string{string(p.UID), p.Annotations[configMirrorAnnotation]} {
		if st := containerStatuses(p); uid != "" && len(st) > 0 {
			ix.Statuses[uid] = st
		}
	}
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		for _, uid := range []string{string(p.UID), p.Annotations[configMirrorAnnotation]} {
			if uid != "" {
				ix.Active[uid] = true
			}
		}
		if p.Labels[LabelManagedBy] != ManagedBy {
			ix.Running = append(ix.Running, resourcesOnly(p))
		}
	}
	for _, statuses := range [][]corev1.ContainerStatus{
		p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses,
	} {
		for _, cs := range statuses {
			if id := stripScheme(cs.ContainerID); id != "" {
				ix.Containers[id] = ContainerRef{Namespace: p.Namespace, Pod: p.Name, Container: cs.Name}
			}
		}
	}
}

// resourcesOnly is the part of a pod its resource requests need: names, containers' resources,
// overhead and pod-level resources; and what a restart's re-admission reads (the kubelet's order
// is creation time; a pod's owners say whether a controller makes it again).
func resourcesOnly(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{}
	out.Name, out.Namespace, out.UID = p.Name, p.Namespace, p.UID
	out.CreationTimestamp, out.OwnerReferences = p.CreationTimestamp, p.OwnerReferences
	out.Spec.Overhead, out.Spec.Resources = p.Spec.Overhead, p.Spec.Resources
	keep := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
		}
		return out
	}
	out.Spec.InitContainers, out.Spec.Containers = keep(p.Spec.InitContainers), keep(p.Spec.Containers)
	return out
}

// containerNames is nil for a pod without containers (only a partial object can be): its
// containers are unknown, not gone.
func containerNames(spec *corev1.PodSpec) map[string]bool {
	if len(spec.Containers) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, c := range spec.InitContainers {
		names[c.Name] = true
	}
	for _, c := range spec.Containers {
		names[c.Name] = true
	}
	for _, c := range spec.EphemeralContainers {
		names[c.Name] = true
	}
	return names
}

// stripScheme turns "containerd://abc" into "abc"; the checkpoints store bare IDs.
func stripScheme(id string) string {
	if _, bare, ok := strings.Cut(id, "://"); ok {
		return bare
	}
	return id
}
