package nodestate

// PodNames resolves the pod UIDs and container IDs in checkpoints to names. A nil PodNames (or
// one that does not know an ID) leaves the raw IDs in place.
type PodNames interface {
	// Pod returns namespace/name of the pod with this UID.
	Pod(uid string) (namespace, name string, ok bool)
	// Container returns the pod and container holding this container ID (V1 CPU files).
	Container(id string) (namespace, pod, container string, ok bool)
}

// DebugPods is implemented by a PodNames that knows this plugin's own debug pods: the pods
// view marks them, so they are not taken for workloads. (Only that view can list them: the
// debug pod is BestEffort, so the CPU, memory and device managers record nothing for it.)
type DebugPods interface {
	DebugPod(uid string) bool
}

// DebugPodNames is implemented by a PodNames that can tell, by namespace and name alone, a
// debug pod the API server no longer lists but a 1.38+ V2 allocation file still names.
type DebugPodNames interface {
	DebugPodNamed(namespace, name string) bool
}
