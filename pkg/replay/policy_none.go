package replay

// TopologyPolicyNone is topologymanager.PolicyNone: no alignment. Its manager uses the none
// scope, which allocates without asking for hints.
const TopologyPolicyNone = "none"

// topologyNonePolicy is topologymanager.nonePolicy: it admits everything.
type topologyNonePolicy struct{}

func (topologyNonePolicy) Name() string { return TopologyPolicyNone }

func (topologyNonePolicy) Merge([]map[string][]TopologyHint) (TopologyHint, bool) {
	return TopologyHint{}, true
}
