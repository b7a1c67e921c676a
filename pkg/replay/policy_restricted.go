package replay

// TopologyPolicyRestricted is topologymanager.PolicyRestricted.
const TopologyPolicyRestricted = "restricted"

// restrictedPolicy is topologymanager.restrictedPolicy: best-effort's merge, admitted only
// when preferred.
type restrictedPolicy struct{ bestEffortPolicy }

func newRestrictedPolicy(numa *numaInfo, opts TopologyPolicyOptions) *restrictedPolicy {
	return &restrictedPolicy{bestEffortPolicy{numa: numa, opts: opts}}
}

func (p *restrictedPolicy) Name() string { return TopologyPolicyRestricted }

func (p *restrictedPolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterProvidersHints(providersHints)
	best := newHintMerger(p.numa, filtered, p.Name(), p.opts).merge()
	return best, best.Preferred
}
