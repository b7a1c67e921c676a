package render

import (
	"fmt"
	"io"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Show prints the models decoded from the nodes' files of kinds, as the show command of those
// kinds does (cpus, memory, devices, claims, pods): the printer is the first kind's.
func Show(w io.Writer, o Options, kinds []nodestate.Kind, nodes []*nodestate.NodeResult) error {
	var (
		cpus   []CPUs
		memory []Memory
		devs   []Devices
		claims []Claims
		pods   []PodAllocations
	)
	for _, n := range nodes {
		src := Source{Node: n.Node, Names: n.Names, Cgroups: n.Cgroups}
		var health *nodestate.DRAHealthState
		for _, r := range n.Rows {
			if r.Report != nil && r.Report.Decoded.DRAHealth != nil {
				health = r.Report.Decoded.DRAHealth
			}
		}
		for _, r := range n.Rows {
			if r.Report == nil {
				continue
			}
			switch m := r.Report.Decoded; {
			case m.CPU != nil:
				cpus = append(cpus, CPUs{Source: src, State: m.CPU})
			case m.Memory != nil:
				memory = append(memory, Memory{Source: src, State: m.Memory})
			case m.Devices != nil:
				devs = append(devs, Devices{Source: src, State: m.Devices})
			case m.DRA != nil:
				claims = append(claims, Claims{Source: src, State: m.DRA, Health: health})
			case m.PodAllocations != nil:
				pods = append(pods, PodAllocations{Source: src, File: r.Kind(), State: m.PodAllocations})
			}
		}
	}
	if len(kinds) == 0 {
		return fmt.Errorf("no kind to show")
	}
	switch kinds[0] {
	case nodestate.KindCPU:
		return PrintCPUs(w, o, cpus)
	case nodestate.KindMemory:
		return PrintMemory(w, o, memory)
	case nodestate.KindDevices:
		return PrintDevices(w, o, devs)
	case nodestate.KindDRA, nodestate.KindDRAHealth:
		return PrintClaims(w, o, claims)
	case nodestate.KindAllocated, nodestate.KindActuated, nodestate.KindPodStatus:
		return PrintPods(w, o, pods)
	}
	return fmt.Errorf("no printer for %s", kinds[0])
}
