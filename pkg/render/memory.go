package render

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Memory is one node's memory manager state.
type Memory struct {
	Source
	State *nodestate.MemoryState
}

// MemoryNode is one node's memory view for json/yaml.
type MemoryNode struct {
	Node        string            `json:"node,omitempty"`
	Policy      string            `json:"policy"`
	NUMANodes   []NUMAMemoryRow   `json:"numaNodes"`
	Assignments []MemoryAssignRow `json:"assignments"`
}

// NUMAMemoryRow is one resource on one NUMA node, in bytes.
type NUMAMemoryRow struct {
	NUMANode       int    `json:"numaNode"`
	Resource       string `json:"resource"`
	Total          uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
	Cells          []int  `json:"cells"`
	Assignments    int    `json:"assignments"`
}

// MemoryAssignRow is one block held by a container (or a pod, for pod-level resources).
type MemoryAssignRow struct {
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	PodUID    string `json:"podUID"`
	Container string `json:"container,omitempty"`
	Type      string `json:"type"`
	Size      uint64 `json:"size"`
	NUMANodes []int  `json:"numaNodes"`
	// CgroupMems is the container's cgroup cpuset.mems as the node has it ("(not running)"
	// when none of its pod's containers runs).
	CgroupMems string `json:"cgroupMems,omitempty"`
}

// MemoryNodes builds the per-node views.
func MemoryNodes(in []Memory) []MemoryNode {
	var out []MemoryNode
	for _, n := range in {
		s := n.State
		mn := MemoryNode{Node: n.Node, Policy: s.PolicyName}
		for id, numa := range s.MachineState {
			for res, t := range numa.MemoryMap {
				mn.NUMANodes = append(mn.NUMANodes, NUMAMemoryRow{NUMANode: id, Resource: res, Total: t.Total,
					SystemReserved: t.SystemReserved, Allocatable: t.Allocatable, Reserved: t.Reserved, Free: t.Free,
					Cells: numa.Cells, Assignments: numa.NumberOfAssignments})
			}
		}
		sort.Slice(mn.NUMANodes, func(i, j int) bool {
			a, b := mn.NUMANodes[i], mn.NUMANodes[j]
			return a.NUMANode < b.NUMANode || (a.NUMANode == b.NUMANode && a.Resource < b.Resource)
		})
		add := func(uid, container string, blocks []nodestate.MemoryBlock) {
			ns, name := podName(n.Names, uid)
			for _, b := range blocks {
				row := MemoryAssignRow{Namespace: ns, Pod: name, PodUID: uid,
					Container: container, Type: b.Type, Size: b.Size, NUMANodes: b.NUMAAffinity}
				if container != "" {
					row.CgroupMems = cgroupValue(n.Cgroups, uid, container, memsOf)
				}
				mn.Assignments = append(mn.Assignments, row)
			}
		}
		for uid, containers := range s.Entries {
			for c, blocks := range containers {
				add(uid, c, blocks)
			}
		}
		for uid, blocks := range s.PodEntries {
			add(uid, "", blocks)
		}
		sort.SliceStable(mn.Assignments, func(i, j int) bool {
			a, b := mn.Assignments[i], mn.Assignments[j]
			return a.Namespace+a.Pod+a.PodUID+a.Container+a.Type < b.Namespace+b.Pod+b.PodUID+b.Container+b.Type
		})
		out = append(out, mn)
	}
	return out
}

// PrintMemory prints memory per NUMA node, then who holds which blocks.
func PrintMemory(w io.Writer, o Options, in []Memory) error {
	nodes := MemoryNodes(in)
	if done, err := printStructured(w, o, "MemoryStateList", nodes); done {
		return err
	}
	headers := []string{"NUMA", "RESOURCE", "TOTAL", "RESERVED", "FREE"}
	if o.Format == Wide {
		headers = append(headers, "ALLOCATABLE", "SYSTEM-RESERVED", "CELLS", "ASSIGNMENTS")
	}
	t := newTable(w, o, headers...)
	for _, n := range nodes {
		for _, r := range n.NUMANodes {
			cells := []string{strconv.Itoa(r.NUMANode), r.Resource, bytesQ(r.Total), bytesQ(r.Reserved), bytesQ(r.Free)}
			if o.Format == Wide {
				cells = append(cells, bytesQ(r.Allocatable), bytesQ(r.SystemReserved), ints(r.Cells), strconv.Itoa(r.Assignments))
			}
			t.add(n.Node, cells...)
		}
	}
	t.render()
	fmt.Fprintln(w)
	headers = []string{"POD", "CONTAINER", "TYPE", "SIZE", "NUMA"}
	if o.Format == Wide {
		// The cgroup's cpuset.mems beside the file's NUMA nodes.
		headers = append(headers, "CGROUP-MEMS", "POD-UID")
	}
	t = newTable(w, o, headers...)
	for _, n := range nodes {
		for _, r := range n.Assignments {
			pod, container := podCell(r.Namespace, r.Pod, r.PodUID), r.Container
			if container == "" {
				container = "(pod-level)"
			}
			cells := []string{pod, container, r.Type, bytesQ(r.Size), ints(r.NUMANodes)}
			if o.Format == Wide {
				cells = append(cells, r.CgroupMems, r.PodUID)
			}
			t.add(n.Node, cells...)
		}
	}
	t.render()
	return nil
}

// bytesQ shows a byte count as a Kubernetes quantity ("64Gi").
func bytesQ(b uint64) string {
	if b > 1<<62 {
		return strconv.FormatUint(b, 10)
	}
	return resource.NewQuantity(int64(b), resource.BinarySI).String()
}

func ints(in []int) string {
	s := make([]string, len(in))
	for i, v := range in {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}
