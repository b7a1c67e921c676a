package replay

// TopologyPolicyBestEffort is topologymanager.PolicyBestEffort.
const TopologyPolicyBestEffort = "best-effort"

// bestEffortPolicy is topologymanager.bestEffortPolicy: it admits whatever the merge gives.
type bestEffortPolicy struct {
	numa *numaInfo
	opts TopologyPolicyOptions
}

func newBestEffortPolicy(numa *numaInfo, opts TopologyPolicyOptions) *bestEffortPolicy {
	return &bestEffortPolicy{numa: numa, opts: opts}
}

func (p *bestEffortPolicy) Name() string { return TopologyPolicyBestEffort }

func (p *bestEffortPolicy) Merge(providersHints []map[string][]TopologyHint) (TopologyHint, bool) {
	filtered := filterProvidersHints(providersHints)
	return newHintMerger(p.numa, filtered, p.Name(), p.opts).merge(), true
}
