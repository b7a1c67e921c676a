package render

import (
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Devices is one node's device manager state.
type Devices struct {
	Source
	State *nodestate.DeviceState
}

// DeviceRow is the devices of one resource a container holds on one NUMA node.
type DeviceRow struct {
	Node      string `json:"node,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	PodUID    string `json:"podUID"`
	Container string `json:"container"`
	Resource  string `json:"resource"`
	// NUMANode is the node's ID; "none" for devices without topology (-1); "unknown" in V1 files.
	NUMANode string   `json:"numaNode"`
	Devices  []string `json:"devices"`
}

// DeviceRows lists allocations per NUMA node.
func DeviceRows(in []Devices) []DeviceRow {
	var rows []DeviceRow
	for _, n := range in {
		var node []DeviceRow
		for _, e := range n.State.PodDeviceEntries {
			ns, name := podName(n.Names, e.PodUID)
			base := DeviceRow{Node: n.Node, Namespace: ns, Pod: name, PodUID: e.PodUID, Container: e.ContainerName, Resource: e.ResourceName}
			if e.DevicesPerNUMA == nil {
				r := base
				r.NUMANode, r.Devices = "unknown", e.DeviceIDs
				node = append(node, r)
				continue
			}
			numas := make([]int64, 0, len(e.DevicesPerNUMA))
			for id := range e.DevicesPerNUMA {
				numas = append(numas, id)
			}
			sort.Slice(numas, func(i, j int) bool { return numas[i] < numas[j] })
			for _, id := range numas {
				r := base
				r.NUMANode, r.Devices = numaName(id), e.DevicesPerNUMA[id]
				node = append(node, r)
			}
		}
		sort.SliceStable(node, func(i, j int) bool {
			a, b := node[i], node[j]
			return a.Namespace+a.Pod+a.PodUID+a.Container+a.Resource < b.Namespace+b.Pod+b.PodUID+b.Container+b.Resource
		})
		rows = append(rows, node...)
	}
	return rows
}

func numaName(id int64) string {
	if id < 0 {
		return "none"
	}
	return strconv.FormatInt(id, 10)
}

// PrintDevices prints which container holds which devices on which NUMA node.
func PrintDevices(w io.Writer, o Options, in []Devices) error {
	rows := DeviceRows(in)
	if done, err := printStructured(w, o, "DeviceAssignmentList", rows); done {
		return err
	}
	headers := []string{"POD", "CONTAINER", "RESOURCE", "NUMA", "DEVICES"}
	if o.Format == Wide {
		headers = append(headers, "POD-UID")
	}
	t := newTable(w, o, headers...)
	for _, r := range rows {
		pod := podCell(r.Namespace, r.Pod, r.PodUID)
		cells := []string{pod, r.Container, r.Resource, r.NUMANode, strings.Join(r.Devices, ",")}
		if o.Format == Wide {
			cells = append(cells, r.PodUID)
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}
