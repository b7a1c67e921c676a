package nodestate

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// ConditionTypes are the node conditions the Node Problem Detector's monitor sets for each
// check (deploy/npd/nodestate-monitor.json): True is a problem.
var ConditionTypes = map[NodeCheck]corev1.NodeConditionType{
	CheckCheckpoints: "KubeletCheckpointsCorrupt",
	CheckRestart:     "KubeletWouldNotRestart",
	CheckCgroups:     "CgroupStateDrift",
	CheckDevices:     "DeviceStateDrift",
}

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
	// Read are the nodes read through debug pods: those without every condition of the
	// monitor, or all of them when fresh.
	Read []string
}

// CheckFleet answers the checks for cfg's live nodes (cfg.Nodes, or AllNodes and Selector):
// from the conditions the monitor set on them, with ONE list of the nodes (a get per named
// node), and through a debug pod (Results, with doctor) only for the nodes that lack one of the
// monitor's conditions, or for every node when fresh. Those are judged by the same rules as
// node-check, the answers At now; a condition's answer is At its last heartbeat.
func CheckFleet(ctx context.Context, cfg Config, fresh bool, now time.Time) (*FleetResult, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("the fleet's conditions need a Client")
	}
	var nodes []corev1.Node
	if cfg.AllNodes {
		list, err := cfg.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: cfg.Selector})
		if err != nil {
			return nil, fetch.ExplainError(err, "")
		}
		nodes = list.Items
		if len(nodes) == 0 {
			return nil, fmt.Errorf("no nodes match %q", cfg.Selector)
		}
	} else {
		for _, name := range cfg.Nodes {
			n, err := cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fetch.ExplainError(err, "")
			}
			nodes = append(nodes, *n)
		}
	}
	out := &FleetResult{}
	for _, n := range nodes {
		if results, ok := fromConditions(n); ok && !fresh {
			out.Nodes = append(out.Nodes, FleetNode{Node: n.Name, FromConditions: true, Results: results})
			continue
		}
		out.Read = append(out.Read, n.Name)
	}
	if len(out.Read) > 0 {
		live := cfg
		live.AllNodes, live.Selector, live.Nodes = false, "", out.Read
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
					results[i].At = now
				}
				fn.Results = results
			}
			out.Nodes = append(out.Nodes, fn)
		}
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Node < out.Nodes[j].Node })
	return out, nil
}

// fromConditions reads the checks' answers from a node's conditions; ok when the monitor set
// every one of them.
func fromConditions(n corev1.Node) ([]CheckResult, bool) {
	var out []CheckResult
	for _, c := range NodeChecks {
		var cond *corev1.NodeCondition
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == ConditionTypes[c] {
				cond = &n.Status.Conditions[i]
			}
		}
		if cond == nil {
			return nil, false
		}
		cr := CheckResult{Check: c, Summary: cond.Message, Reason: cond.Reason, At: cond.LastHeartbeatTime.Time}
		switch cond.Status {
		case corev1.ConditionFalse:
			cr.Status = CheckOK
		case corev1.ConditionTrue:
			cr.Status = CheckProblem
		default:
			cr.Status = CheckUnknown
		}
		out = append(out, cr)
	}
	return out, true
}
