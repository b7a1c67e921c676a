package nodestate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// cgroupHostDir mounts the host's cgroup filesystem where cgroup.Script reads it in the pod.
var cgroupHostDir = fetch.HostDir{Name: "cgroup", Path: cgroup.HostPath, MountPath: cgroup.MountPath}

// readCgroups parses a node's cgroup dump (cgroup.Script's) and finds in it the containers of
// the node's pods (nil offline: then only the pods' directories are known).
func readCgroups(dump []byte, pods *fetch.PodIndex) (*cgroup.Node, error) {
	if dump == nil {
		return nil, fmt.Errorf("the node printed no cgroup dump")
	}
	d, err := cgroup.Parse(dump)
	if err != nil {
		return nil, err
	}
	var refs []cgroup.PodRef
	if pods != nil {
		for _, uid := range slices.Sorted(maps.Keys(pods.Statuses)) {
			ref := cgroup.PodRef{UID: uid}
			for _, c := range pods.Statuses[uid] {
				ref.Containers = append(ref.Containers, cgroup.ContainerRef{Name: c.Name, ID: c.ID, Running: c.Running})
			}
			refs = append(refs, ref)
		}
	}
	return cgroup.Resolve(d, refs), nil
}
