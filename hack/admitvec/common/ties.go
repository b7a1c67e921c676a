package common

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// The topology manager's merge between non-preferred hints, and a merged hint the memory
// manager would not have offered (issue 21's last topology_manager.go and memory_static.go
// survivors). Each case is topology best-effort (restricted and single-numa-node refuse every
// non-preferred hint), CPU static and memory Static: pod.json builds the memory state (its
// containers have fractional CPUs, so memory alone places them), pod2.json is the pod whose
// merge is at stake. reservedSystemCPUs leaves the free CPUs the merge needs.
type tieScenario struct {
	short, description string
	shape              Shape
	reservedCPUs       string
	pods               []*v1.Pod
}

func tieScenarios() []tieScenario {
	frac := func(name, mem string) container { return container{name: name, cpu: "500m", memory: mem} }
	c := func(name, cpu, mem string) container { return container{name: name, cpu: cpu, memory: mem} }
	threeNUMA := Shape{Sockets: 3, NUMAPerSocket: 1, CoresPerSocket: 2, Threads: 2, Numbering: "interleave"}
	fourNUMA := Shape{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}
	// free: node 1's free memory once pod.json's 20Gi took node 0's and the rest of it.
	free1 := memNode0 + memNode - 20<<30
	return []tieScenario{
		// Nodes 0 and 1 share a 20Gi group, node 2 holds 1Gi alone; only node 1 has free CPUs
		// (0-1,6-7 and 4-5,10-11 reserved). The CPU hint {1} ANDed with the group's {0,1} is the
		// merged {1} (non-preferred, as narrow as the best), which the memory manager itself
		// never offers (node 1 is grouped); pod2 asks exactly node 1's free memory: {1} holds it
		// (one byte more and it is extended to the group).
		{short: "grouped-node-exact", shape: threeNUMA, reservedCPUs: "0-1,4-7,10-11",
			description: "merged hint {1} on a node of a memory group, asking exactly its free memory",
			pods:        []*v1.Pod{pod("g", frac("group", "20Gi"), frac("single", "1Gi")), pod("p", c("app", "1", bytesQ(free1)))}},
		{short: "grouped-node-plus1", shape: threeNUMA, reservedCPUs: "0-1,4-7,10-11",
			description: "merged hint {1} on a node of a memory group, asking one byte more than its free memory",
			pods:        []*v1.Pod{pod("g", frac("group", "20Gi"), frac("single", "1Gi")), pod("p", c("app", "1", bytesQ(free1+1)))}},
		// Every node holds memory alone (node 0 all of it) and one free CPU on nodes 0 and 1,
		// two on node 2 (the rest reserved): 3 CPUs need two nodes, every hint is
		// non-preferred and the best count is 2, yet every merged hint has one node. {0,2}
		// gives {2} first, {1,2} then {1}, as narrow: the lower mask wins.
		{short: "singles-equal-count", shape: threeNUMA, reservedCPUs: "0-6,8",
			description: "merged non-preferred hints {2} then {1}, both under the best count",
			pods: []*v1.Pod{pod("s", frac("a", bytesQ(memNode0)), frac("b", "2Gi"), frac("c", bytesQ(14<<30+1))),
				pod("p", c("app", "3", "1Gi"))}},
		// Nodes 0-2 share a 40Gi group, node 3's CPUs are reserved: 5 CPUs need two nodes
		// (best count 2), memory offers {3} (preferred) and the group. The first pair ANDed with
		// the group, {0,1}, has the best count and stays; the later {3} (a CPU triple with node 3
		// ANDed with memory's {3}) is narrower but under the best count.
		{short: "best-then-narrower", shape: fourNUMA, reservedCPUs: "6-7,14-15",
			description: "a merged non-preferred hint at the best count, then narrower ones",
			pods:        []*v1.Pod{pod("g", frac("group", "40Gi")), pod("p", c("app", "5", "1Gi"))}},
	}
}

// tieCases: every scenario under best-effort/container, and again with
// prefer-closest-numa-nodes (equal distances: the lower mask still wins).
func tieCases() []*genCase {
	var out []*genCase
	for _, sc := range tieScenarios() {
		for _, pcn := range []bool{false, true} {
			m := memMachine(sc.shape, "best-effort", "container", true)
			m.Kubelet.ReservedSystemCPUs = sc.reservedCPUs
			tm := "best-effort-container"
			if pcn {
				m.Kubelet.TopologyManagerPolicyOptions = map[string]string{"prefer-closest-numa-nodes": "true"}
				tm += "-pcn"
			}
			out = append(out, &genCase{name: fmt.Sprintf("tie__%s__%s__tm-%s", sc.shape.Name(), sc.short, tm), machine: m, pods: sc.pods,
				tags:        []string{"memory", "ties", sc.short, "tm-" + tm, "2pods"},
				description: fmt.Sprintf("%s on %s; topology %s; cpu static (reserved %s); memory Static", sc.description, sc.shape.Name(), tm, sc.reservedCPUs)})
		}
	}
	return out
}
