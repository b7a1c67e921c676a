package render

import (
	"sort"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// notRunning is the cgroup cell of a container none of whose pod's containers runs.
const notRunning = "(not running)"

// cgroupValue is what the node's cgroups show for one container: the file's value (pick), or
// notRunning when its pod has no container cgroup; "" when unknown (not read, not found).
func cgroupValue(n *nodestate.CgroupNode, uid, ctr string, pick func(*nodestate.ContainerCgroup) nodestate.CgroupValue) string {
	if n == nil || n.Version == 0 {
		return ""
	}
	if c := n.Containers[uid][ctr]; c != nil {
		return pick(c).Raw
	}
	if p := n.Pods[uid]; (p == nil || p.Children == 0) && !n.Cut {
		return notRunning
	}
	return ""
}

// sharedCgroupCPUs is what the cgroups of the containers without exclusive CPUs hold: their
// distinct cpuset.cpus, " / " between them.
func sharedCgroupCPUs(n *nodestate.CgroupNode, exclusive map[string]map[string]string) string {
	if n == nil {
		return ""
	}
	seen := map[string]bool{}
	for uid, ctrs := range n.Containers {
		for name, c := range ctrs {
			if _, ok := exclusive[uid][name]; !ok {
				seen[c.CPUs.Raw] = true
			}
		}
	}
	vals := make([]string, 0, len(seen))
	for v := range seen {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	return strings.Join(vals, " / ")
}

func cpusOf(c *nodestate.ContainerCgroup) nodestate.CgroupValue { return c.CPUs }
func memsOf(c *nodestate.ContainerCgroup) nodestate.CgroupValue { return c.Mems }
