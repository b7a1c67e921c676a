package nodestate

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/version"
)

// NodeRead is the node reader's read: what `kubectl-nodestate node-read` does in a debug pod
// that runs the plugin's own image (DebugPod.Reader ReaderBinary).
type NodeRead = nodelocal.NodeRead

// NodeReadVerb is the node reader's command name, which the debug pod's exec runs.
const NodeReadVerb = fetch.NodeReadVerb

// NodeReadInPod is the node reader's read as the debug pod sees the node: the kubelet root dir
// mounted as its working directory, sysfs and procfs its own (not namespaced for the devices
// and NUMA nodes it reads).
func NodeReadInPod() NodeRead {
	return NodeRead{RootDir: ".", SysRoot: "/sys", ProcRoot: "/proc", PodResourcesTimeout: nodelocal.PodResourcesTimeout}
}

// ReaderImage is the plugin's image of this very build, the binary reader's default: the reader
// in the pod and the client reading its sections are one version (the PodResources section's
// parser refuses another's fields). A development build's version names no published image;
// give one with --image.
func ReaderImage() string { return fetch.ReaderImageRepo + ":" + version.Get().Version }
