package replay

// TopologyPolicySingleNumaNode is topologymanager.PolicySingleNumaNode.
const TopologyPolicySingleNumaNode = "single-numa-node"

// singleNumaNodePolicy is topologymanager.singleNumaNodePolicy: it admits a preferred single
// NUMA node only.
type singleNumaNodePolicy struct {
	numa *numaInfo
	opts TopologyPolicyOptions
}

func newSingleNumaNodePolicy(numa *numaInfo, opts TopologyPolicyOptions) *singleNumaNodePolicy {
	return &singleNumaNodePolicy{numa: numa, opts: opts}
}

func (p *singleNumaNodePolicy) Name() string { return TopologyPolicySingleNumaNode }

func (p *singleNumaNodePolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterSingleNumaHints(filterProvidersHints(providersHints))
	best := newHintMerger(p.numa, filtered, p.Name(), p.opts).merge()
	if best.NUMANodeAffinity == p.numa.defaultAffinityMask() {
		best = TopologyHint{0, best.Preferred}
	}
	return best, best.Preferred
}

// filterSingleNumaHints keeps the preferred hints of one NUMA node (or any).
func filterSingleNumaHints(all [][]TopologyHint) [][]TopologyHint {
	var out [][]TopologyHint
	for _, resource := range all {
		var kept []TopologyHint
		for _, h := range resource {
			if h.Preferred && (h.NUMANodeAffinity == 0 || h.NUMANodeAffinity.Count() == 1) {
				kept = append(kept, h)
			}
		}
		out = append(out, kept)
	}
	return out
}
