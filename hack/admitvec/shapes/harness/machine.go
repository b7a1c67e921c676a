package main

import (
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/common"
)

// physicalCore is a core as cadvisor lists it under its NUMA node: its threads in order.
type physicalCore struct {
	id, socket, numa int
	uncore           *int
	threads          []int
}

func coresOf(m *common.Machine) []*physicalCore {
	byKey := map[[3]int]*physicalCore{}
	var out []*physicalCore
	for _, c := range m.CPUs {
		key := [3]int{c.NUMA, c.Socket, c.Core}
		pc := byKey[key]
		if pc == nil {
			pc = &physicalCore{id: c.Core, socket: c.Socket, numa: c.NUMA, uncore: c.UncoreCache}
			byKey[key] = pc
			out = append(out, pc)
		}
		pc.threads = append(pc.threads, c.ID)
	}
	for _, pc := range out {
		sort.Ints(pc.threads)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].socket != out[j].socket {
			return out[i].socket < out[j].socket
		}
		return out[i].id < out[j].id
	})
	return out
}

// cores are the cores of one NUMA node, in socket and core id order.
func cores(m *common.Machine, numa int) []*physicalCore {
	var out []*physicalCore
	for _, c := range coresOf(m) {
		if c.numa == numa {
			out = append(out, c)
		}
	}
	return out
}

// machineInfo is the cadvisor MachineInfo of machine.json: NumCores = online CPUs, NumSockets =
// distinct sockets, MemoryCapacity = the NUMA nodes' memory.
func machineInfo(m *common.Machine) *cadvisorMachine {
	mi := &cadvisorMachine{NumCores: len(m.CPUs)}
	sockets := map[int]bool{}
	for _, n := range m.NUMA {
		node := cadvisorNode{Id: n.ID, Memory: n.Memory, Distances: n.Distances}
		for _, h := range n.HugePages {
			node.HugePages = append(node.HugePages, cadvisorHugePages{PageSize: h.PageSizeKiB, NumPages: h.NumPages})
		}
		mi.MemoryCapacity += n.Memory
		for _, c := range cores(m, n.ID) {
			core := cadvisorCore{Id: c.id, Threads: c.threads, SocketID: c.socket}
			if c.uncore != nil {
				core.UncoreCaches = []cadvisorCache{{Id: *c.uncore, Level: 3, Type: "Unified"}}
			}
			node.Cores = append(node.Cores, core)
			sockets[c.socket] = true
		}
		mi.Topology = append(mi.Topology, node)
	}
	mi.NumSockets = len(sockets)
	mi.NumPhysicalCores = len(coresOf(m))
	return mi
}
