package render

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// isDebugPod reports whether names says uid is one of this plugin's debug pods.
func isDebugPod(names nodestate.PodNames, uid string) bool {
	d, ok := names.(nodestate.DebugPods)
	return ok && d.DebugPod(uid)
}

// isDebugPodNamed: a pod named only by a 1.38+ V2 file (gone from the API server) that is one
// of this plugin's earlier debug pods.
func isDebugPodNamed(names nodestate.PodNames, namespace, name string) bool {
	d, ok := names.(nodestate.DebugPodNames)
	return ok && name != "" && d.DebugPodNamed(namespace, name)
}

// DebugPodMark follows the POD cell of this plugin's own debug pods in tables.
const DebugPodMark = " (nodestate debug pod)"

// podName resolves a pod UID to its namespace and name ("" when unknown).
func podName(names nodestate.PodNames, uid string) (namespace, name string) {
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
	Names nodestate.PodNames
	// Cgroups is what the node's cgroups show its containers run on (nil: not read).
	Cgroups *nodestate.CgroupNode
}
