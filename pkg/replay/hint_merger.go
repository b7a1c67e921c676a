package replay

// The hint merger (topologymanager/policy.go's HintMerger): every permutation of one hint per
// resource, merged, and the best kept.

// hintMerger is topologymanager.HintMerger.
type hintMerger struct {
	numa                          *numaInfo
	hints                         [][]TopologyHint
	bestNonPreferredAffinityCount int
	// closest: prefer-closest-numa-nodes decides between equally wide masks (not under
	// single-numa-node).
	closest bool
}

func newHintMerger(numa *numaInfo, hints [][]TopologyHint, policyName string, opts TopologyPolicyOptions) hintMerger {
	return hintMerger{numa: numa, hints: hints, bestNonPreferredAffinityCount: maxOfMinAffinityCounts(hints),
		closest: policyName != TopologyPolicySingleNumaNode && opts.PreferClosestNUMA}
}

func maxOfMinAffinityCounts(hints [][]TopologyHint) int {
	out := 0
	for _, resource := range hints {
		var narrowest BitMask
		for _, h := range resource {
			if h.NUMANodeAffinity == 0 {
				continue
			}
			if narrowest == 0 || h.NUMANodeAffinity.IsNarrowerThan(narrowest) {
				narrowest = h.NUMANodeAffinity
			}
		}
		if narrowest != 0 && narrowest.Count() > out {
			out = narrowest.Count()
		}
	}
	return out
}

func (m hintMerger) compareMasks(current, candidate *TopologyHint) *TopologyHint {
	if candidate.NUMANodeAffinity == current.NUMANodeAffinity {
		return current
	}
	var best BitMask
	if m.closest {
		best = m.numa.closest(current.NUMANodeAffinity, candidate.NUMANodeAffinity)
	} else {
		best = m.numa.narrowest(current.NUMANodeAffinity, candidate.NUMANodeAffinity)
	}
	if best == current.NUMANodeAffinity {
		return current
	}
	return candidate
}

func (m hintMerger) compare(current, candidate *TopologyHint) *TopologyHint {
	best := m.bestNonPreferredAffinityCount
	cur, cand := 0, candidate.NUMANodeAffinity.Count()
	if current != nil {
		cur = current.NUMANodeAffinity.Count()
	}
	switch {
	case cand == 0:
		return current
	case current == nil:
		return candidate
	case !current.Preferred && candidate.Preferred:
		return candidate
	case current.Preferred && !candidate.Preferred:
		return current
	case current.Preferred && candidate.Preferred:
		return m.compareMasks(current, candidate)
	// Both non-preferred: closest to the widest of the narrowest hints wins.
	case cur > best:
		return m.compareMasks(current, candidate)
	case cur == best:
		if cand != best {
			return current
		}
		return m.compareMasks(current, candidate)
	case cand > best:
		return current
	case cand == best:
		return candidate
	case cand > cur:
		return candidate
	case cand < cur:
		return current
	}
	return m.compareMasks(current, candidate)
}

func (m hintMerger) merge() TopologyHint {
	def := m.numa.defaultAffinityMask()
	var best *TopologyHint
	var iterate func(i int, accum []TopologyHint)
	iterate = func(i int, accum []TopologyHint) {
		if i == len(m.hints) {
			merged := mergePermutation(def, accum)
			best = m.compare(best, &merged)
			return
		}
		for j := range m.hints[i] {
			iterate(i+1, append(accum, m.hints[i][j]))
		}
	}
	iterate(0, []TopologyHint{})
	if best == nil {
		return TopologyHint{def, false}
	}
	return *best
}
