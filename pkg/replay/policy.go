package replay

// The topology manager's policy (topologymanager/policy.go): the interface each policy file
// implements, and the flattening of the providers' hints the policies share.

import "sort"

// topologyPolicy is topologymanager.Policy.
type topologyPolicy interface {
	Name() string
	// Merge is the best hint of the providers' hints, and whether the policy admits it.
	Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool)
}

// filterProvidersHints flattens the providers' hints, one list per resource: a provider or
// resource without hints is "any NUMA node, preferred"; an empty list is "no NUMA node fits".
func filterProvidersHints(providersHints []map[string][]TopologyHint) [][]TopologyHint {
	var out [][]TopologyHint
	for _, hints := range providersHints {
		if len(hints) == 0 {
			out = append(out, []TopologyHint{{0, true}})
			continue
		}
		// The kubelet walks the map; the merge does not depend on the order.
		names := make([]string, 0, len(hints))
		for r := range hints {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			switch {
			case hints[r] == nil:
				out = append(out, []TopologyHint{{0, true}})
			case len(hints[r]) == 0:
				out = append(out, []TopologyHint{{0, false}})
			default:
				out = append(out, hints[r])
			}
		}
	}
	return out
}

func mergePermutation(defaultAffinity BitMask, permutation []TopologyHint) TopologyHint {
	preferred := true
	merged := defaultAffinity
	var first BitMask
	for _, h := range permutation {
		if h.NUMANodeAffinity != 0 {
			if first == 0 {
				first = h.NUMANodeAffinity
			}
			merged &= h.NUMANodeAffinity
			if h.NUMANodeAffinity != first {
				preferred = false
			}
		}
		if !h.Preferred {
			preferred = false
		}
	}
	return TopologyHint{merged, preferred}
}
