package render

import "github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"

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

// isDebugPod reports whether names says uid is one of this plugin's debug pods.
func isDebugPod(names PodNames, uid string) bool {
	d, ok := names.(DebugPods)
	return ok && d.DebugPod(uid)
}

// DebugPodMark follows the POD cell of this plugin's own debug pods in tables.
const DebugPodMark = " (nodestate debug pod)"

// podName resolves a pod UID to its namespace and name ("" when unknown).
func podName(names PodNames, uid string) (namespace, name string) {
	if names != nil {
		if ns, n, ok := names.Pod(uid); ok {
			return ns, n
		}
	}
	return "", ""
}

// podCell is how a row shows its pod: namespace/name when the name is known, else the UID.
func podCell(namespace, name, uid string) string {
	if name == "" {
		return uid
	}
	return namespace + "/" + name
}

// Source is one node's (or one directory's) decoded files with the names to show them by.
type Source struct {
	Node  string
	Names PodNames
	// Cgroups is what the node's cgroups show its containers run on (nil: not read).
	Cgroups *cgroup.Node
}
