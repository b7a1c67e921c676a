package common

import (
	v1 "k8s.io/api/core/v1"
)

// topologyGateCases: the topology manager's option checks at their edges. max-allowable-numa-
// nodes may not be under 8 (the default): 7 is refused, 8 taken; and a beta-level option is
// refused with TopologyManagerPolicyBetaOptions off (max-allowable-numa-nodes is beta until
// 1.35, prefer-closest-numa-nodes until 1.32). Each release answers by its own levels.
func topologyGateCases() []*genCase {
	var out []*genCase
	add := func(name, description string, opts map[string]string, gates map[string]bool) {
		m := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}.Machine()
		m.Kubelet = KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "0", TopologyManagerPolicy: "restricted",
			TopologyManagerPolicyOptions: opts, FeatureGates: gates}
		out = append(out, &genCase{name: "tgate__" + name, machine: m, pods: []*v1.Pod{guaranteed("p", 2)},
			tags: []string{"gates"}, description: description})
	}
	for _, n := range []string{"7", "8", "9"} {
		add("max"+n, "topology option max-allowable-numa-nodes="+n, map[string]string{"max-allowable-numa-nodes": n}, nil)
	}
	for _, opt := range []string{"max-allowable-numa-nodes", "prefer-closest-numa-nodes"} {
		value := "true"
		if opt == "max-allowable-numa-nodes" {
			value = "8"
		}
		add("beta-off__"+opt, "TopologyManagerPolicyBetaOptions off, topology option "+opt,
			map[string]string{opt: value}, map[string]bool{"TopologyManagerPolicyBetaOptions": false})
	}
	return out
}
