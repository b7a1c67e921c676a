package render

import (
	"io"
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// CPUs is one node's CPU manager state.
type CPUs struct {
	Source
	State *nodestate.CPUState
}

// CPURow is one exclusive CPU assignment (or the shared pool).
type CPURow struct {
	Node        string `json:"node,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Pod         string `json:"pod,omitempty"`
	PodUID      string `json:"podUID,omitempty"`
	Container   string `json:"container,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
	// Scope is "container", "pod" (pod-level resources) or "shared" (the default pool).
	Scope    string `json:"scope"`
	CPUs     string `json:"cpus"`
	Baseline string `json:"baseline,omitempty"`
	Policy   string `json:"policy,omitempty"`
	// Cgroup is the container's cgroup cpuset.cpus as the node has it ("(not running)" when
	// none of its pod's containers runs); for the shared pool, the distinct cpusets of the
	// containers running in it.
	Cgroup string `json:"cgroup,omitempty"`
}

// CPURows flattens the states into rows: containers, pod-level entries, then the shared pool.
func CPURows(in []CPUs) []CPURow {
	var rows []CPURow
	for _, n := range in {
		s := n.State
		var node []CPURow
		for uid, containers := range s.Entries {
			ns, name := podName(n.Names, uid)
			for c, cpus := range containers {
				node = append(node, CPURow{Node: n.Node, Namespace: ns, Pod: name, PodUID: uid, Container: c,
					Scope: "container", CPUs: cpus, Baseline: s.Baselines[uid][c], Policy: s.PolicyName,
					Cgroup: cgroupValue(n.Cgroups, uid, c, cpusOf)})
			}
		}
		for id, cpus := range s.ContainerIDEntries {
			row := CPURow{Node: n.Node, ContainerID: id, Scope: "container", CPUs: cpus, Policy: s.PolicyName}
			if n.Names != nil {
				if ns, pod, c, ok := n.Names.Container(id); ok {
					row.Namespace, row.Pod, row.Container = ns, pod, c
				}
			}
			node = append(node, row)
		}
		for uid, cpus := range s.PodEntries {
			ns, name := podName(n.Names, uid)
			node = append(node, CPURow{Node: n.Node, Namespace: ns, Pod: name, PodUID: uid, Scope: "pod", CPUs: cpus, Policy: s.PolicyName})
		}
		sort.Slice(node, func(i, j int) bool { return cpuRowKey(node[i]) < cpuRowKey(node[j]) })
		rows = append(rows, node...)
		rows = append(rows, CPURow{Node: n.Node, Scope: "shared", CPUs: s.DefaultCPUSet, Policy: s.PolicyName,
			Cgroup: sharedCgroupCPUs(n.Cgroups, s.Entries)})
	}
	return rows
}

func cpuRowKey(r CPURow) string {
	pod := r.Namespace + "/" + r.Pod
	if r.Pod == "" {
		pod = "~" + r.PodUID + r.ContainerID // unresolved IDs after named pods
	}
	return pod + "\x00" + r.Scope + "\x00" + r.Container
}

// PrintCPUs prints which container holds which CPUs.
func PrintCPUs(w io.Writer, o Options, in []CPUs) error {
	rows := CPURows(in)
	if done, err := printStructured(w, o, "CPUAssignmentList", rows); done {
		return err
	}
	headers := []string{"POD", "CONTAINER", "CPUS"}
	if o.Format == Wide {
		// The cgroup's cpuset beside the file's.
		headers = append(headers, "CGROUP", "SCOPE", "BASELINE", "POD-UID/CONTAINER-ID", "POLICY")
	}
	t := newTable(w, o, headers...)
	for _, r := range rows {
		pod, container := podCell(r.Namespace, r.Pod, r.PodUID), r.Container
		switch {
		case r.Scope == "shared":
			pod, container = "(shared pool)", ""
		case r.Pod == "" && r.ContainerID != "":
			pod = "container " + shortID(r.ContainerID)
		}
		if r.Scope == "pod" {
			container = "(pod-level)"
		}
		cells := []string{pod, container, r.CPUs}
		if o.Format == Wide {
			id := r.PodUID
			if r.ContainerID != "" {
				id = r.ContainerID
			}
			cells = append(cells, r.Cgroup, r.Scope, r.Baseline, id, r.Policy)
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
