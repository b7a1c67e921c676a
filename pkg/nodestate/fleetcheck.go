package nodestate

import (
	"context"
	"slices"
	"strings"
)

// FleetNode is one node's answers to the checks: from the conditions its monitor set, or read
// now through a debug pod.
type FleetNode struct {
	Node string
	// FromConditions: the answers are the monitor's; else they were read through a debug pod.
	FromConditions bool
	Results        []CheckResult
	// Err is why a node read through a debug pod could not be read.
	Err error
}

// FleetResult is the fleet's answers, by node name, and how they were had.
type FleetResult struct {
	Nodes []FleetNode
	// Split says which nodes answered from their conditions and why the others were read.
	Split *FleetSplit
}

// CheckFleet answers the checks for cfg's live nodes (cfg.Nodes, or AllNodes and Selector):
// from the conditions the monitor set on them, listed once (ListFleet), and through a debug pod
// (Results, with doctor) only for the nodes without fresh conditions, or for every node when
// o.Fresh. Those are judged by the same rules as node-check, the answers At o.Now; a
// condition's answer is At its last heartbeat.
func CheckFleet(ctx context.Context, cfg Config, o FleetOptions) (*FleetResult, error) {
	o.Checks = NodeChecks
	split, err := ListFleet(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	out := &FleetResult{Split: split}
	for _, m := range split.Monitored {
		out.Nodes = append(out.Nodes, FleetNode{Node: m.Node, FromConditions: true, Results: m.Results})
	}
	if len(split.Read) > 0 {
		live := cfg
		live.AllNodes, live.Selector, live.Nodes, live.Listed = false, "", nil, split.Infos()
		live.Doctor = &DoctorConfig{}
		r, err := New(ctx, live)
		if err != nil {
			return nil, err
		}
		for res, err := range r.Results(ctx) {
			if err != nil {
				return out, err
			}
			fn := FleetNode{Node: res.Node, Err: res.Err}
			if res.Err == nil {
				results, err := judgeNode(ctx, res, "the node's /sys/fs/cgroup", nil, nil, NodeChecks)
				if err != nil {
					return out, err
				}
				for i := range results {
					results[i].At = o.Now
				}
				fn.Results = results
			}
			out.Nodes = append(out.Nodes, fn)
		}
	}
	slices.SortFunc(out.Nodes, func(a, b FleetNode) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}
