package nodestate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

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

// NPDHeartbeatPeriod is the Node Problem Detector's --k8s-exporter-heartbeat-period default:
// it writes all its conditions, each with a new lastHeartbeatTime, on every change and at least
// this often, whether or not anything changed.
const NPDHeartbeatPeriod = 5 * time.Minute

// DefaultMaxConditionAge is how old a condition may be before its node counts as running no
// monitor: three heartbeats missed (the detector is gone, or cannot reach the API server).
const DefaultMaxConditionAge = 3 * NPDHeartbeatPeriod

// Source is where a fleet read's answer for a node came from.
type Source string

const (
	// FromConditions: the node conditions the monitor set.
	FromConditions Source = "conditions"
	// FromDebugPod: a debug pod read the node now.
	FromDebugPod Source = "debug-pod"
)

// Provenance is where a node's answer came from and how old it is.
type Provenance struct {
	From Source `json:"from"`
	// At is when the answer was had: the conditions' lastHeartbeatTime (when the monitor last
	// wrote them; it writes them whenever they change), or the end of the debug pod's read.
	At metav1.Time `json:"at"`
	// AgeSeconds is how old the answer was when it was read back.
	AgeSeconds int64 `json:"ageSeconds"`
}

// Age is the answer's age, as kubectl prints ages ("-" when unknown).
func (p *Provenance) Age() string {
	if p == nil {
		return "-"
	}
	return duration.HumanDuration(time.Duration(p.AgeSeconds) * time.Second)
}

// ReadNow is a fresh read's provenance.
func ReadNow(now time.Time) *Provenance {
	return &Provenance{From: FromDebugPod, At: metav1.NewTime(now.Truncate(time.Second))}
}

// ReadWhy is why a node of the fleet is read through a debug pod.
type ReadWhy string

const (
	ReadAsked     ReadWhy = "fresh"      // every node was asked to be read now (--fresh)
	ReadNoMonitor ReadWhy = "no-monitor" // the node lacks a condition of the monitor's
	ReadStale     ReadWhy = "stale"      // the monitor's conditions are older than MaxAge
	ReadProblem   ReadWhy = "problem"    // the monitor reports a problem or cannot judge
)

// FleetOptions say how ListFleet answers.
type FleetOptions struct {
	// Checks are the checks asked: a node answers from its conditions when the monitor set
	// every one of them.
	Checks []NodeCheck
	// Fresh reads every node through a debug pod.
	Fresh bool
	// MaxAge is how old the conditions may be (DefaultMaxConditionAge if 0).
	MaxAge time.Duration
	// ReadProblems also reads the nodes whose conditions report a problem or unknown, so that
	// the answer is confirmed now and says which file (verify).
	ReadProblems bool
	// Now is the clock's reading that ages are measured from.
	Now time.Time
}

// MonitoredNode is a node answered from its monitor's conditions.
type MonitoredNode struct {
	Node    string
	Results []CheckResult
	Source  Provenance
}

// FleetRead is a node to read through a debug pod, and why.
type FleetRead struct {
	Info fetch.NodeInfo
	Why  ReadWhy
	// Monitor are the conditions' answers when there are some (stale, or a problem).
	Monitor []CheckResult
}

// FleetSplit is the fleet, listed once: the nodes its monitor answers for, and the rest.
type FleetSplit struct {
	Monitored []MonitoredNode
	Read      []FleetRead
	MaxAge    time.Duration
}

// Infos are the nodes to read, as Config.Listed takes them.
func (s *FleetSplit) Infos() []fetch.NodeInfo {
	out := make([]fetch.NodeInfo, len(s.Read))
	for i, r := range s.Read {
		out[i] = r.Info
	}
	return out
}

// AnyMonitor reports whether a node of the fleet carries the monitor's conditions (fresh, stale
// or reporting a problem): where none does, a fleet read is the debug-pod fan-out it always was.
func (s *FleetSplit) AnyMonitor() bool {
	return len(s.Monitored) > 0 || slices.ContainsFunc(s.Read, func(r FleetRead) bool { return r.Why == ReadStale || r.Why == ReadProblem })
}

// Summary says in a line where the answers come from: how many from the conditions and how old
// the oldest is, how many are read through debug pods and why ("" when every node is read
// because fresh reads were asked for).
func (s *FleetSplit) Summary() string {
	total := len(s.Monitored) + len(s.Read)
	why := map[ReadWhy]int{}
	for _, r := range s.Read {
		why[r.Why]++
	}
	if why[ReadAsked] == total {
		return ""
	}
	line := fmt.Sprintf("%d of %d nodes answered from the monitor's conditions (deploy/npd)", len(s.Monitored), total)
	if len(s.Monitored) > 0 {
		oldest := slices.MaxFunc(s.Monitored, func(a, b MonitoredNode) int { return int(a.Source.AgeSeconds - b.Source.AgeSeconds) })
		line += ", the oldest written " + oldest.Source.Age() + " ago"
	}
	if len(s.Read) == 0 {
		return line + "; --fresh reads every node now"
	}
	var parts []string
	for _, w := range []struct {
		why  ReadWhy
		what string
	}{
		{ReadNoMonitor, "without the monitor's conditions"},
		{ReadStale, fmt.Sprintf("with conditions older than %s (--max-condition-age)", duration.HumanDuration(s.MaxAge))},
		{ReadProblem, "whose monitor reports a problem or cannot judge"},
	} {
		if n := why[w.why]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, w.what))
		}
	}
	return fmt.Sprintf("%s; %d read now through debug pods: %s", line, len(s.Read), strings.Join(parts, ", "))
}

// ListFleet lists cfg's live nodes once (one paginated LIST for AllNodes and Selector, a GET
// per named node) and splits them: those whose monitor set every condition of o.Checks, no
// older than o.MaxAge, answer from them; the others are to be read through a debug pod (all
// of them when o.Fresh), each kept as the fan-out reads it, so that no node is read again.
func ListFleet(ctx context.Context, cfg Config, o FleetOptions) (*FleetSplit, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("the fleet's conditions need a Client")
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxConditionAge
	}
	split := &FleetSplit{MaxAge: o.MaxAge}
	nodeInfo := cfg.nodeInfos()
	keep := func(n *corev1.Node) {
		results, beat, ok := fromConditions(n, o.Checks)
		read := FleetRead{Info: nodeInfo(n), Monitor: results}
		switch age := o.Now.Sub(beat); {
		case o.Fresh:
			read.Why = ReadAsked
		case !ok:
			read.Why = ReadNoMonitor
		case age > o.MaxAge:
			read.Why = ReadStale
		case o.ReadProblems && slices.ContainsFunc(results, func(r CheckResult) bool { return r.Status != CheckOK }):
			read.Why = ReadProblem
		default:
			split.Monitored = append(split.Monitored, MonitoredNode{Node: n.Name, Results: results,
				Source: Provenance{From: FromConditions, At: metav1.NewTime(beat), AgeSeconds: int64(max(age, 0) / time.Second)}})
			return
		}
		split.Read = append(split.Read, read)
	}
	if cfg.AllNodes {
		if err := fetch.EachNode(ctx, cfg.Client, cfg.Selector, keep); err != nil {
			return nil, err
		}
		if len(split.Monitored)+len(split.Read) == 0 {
			return nil, fmt.Errorf("no nodes match %q", cfg.Selector)
		}
	} else {
		for _, name := range cfg.Nodes {
			n, err := cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fetch.ExplainError(err, "")
			}
			keep(n)
		}
	}
	slices.SortFunc(split.Monitored, func(a, b MonitoredNode) int { return strings.Compare(a.Node, b.Node) })
	slices.SortFunc(split.Read, func(a, b FleetRead) int { return strings.Compare(a.Info.Name, b.Info.Name) })
	return split, nil
}

// fromConditions reads the checks' answers from a node's conditions, each At its
// lastHeartbeatTime; beat is the oldest of those; ok when the monitor set every one.
//
// The age is the heartbeat's, not the transition's: the detector rewrites its conditions on
// every change and every heartbeat period, so lastHeartbeatTime is when it last vouched for
// the answer; lastTransitionTime (Since) is only when the answer last changed, which on a sound
// node can be months ago and says nothing of whether the monitor still runs.
func fromConditions(n *corev1.Node, checks []NodeCheck) (out []CheckResult, beat time.Time, ok bool) {
	for _, c := range checks {
		i := slices.IndexFunc(n.Status.Conditions, func(cond corev1.NodeCondition) bool { return cond.Type == ConditionTypes[c] })
		if i < 0 {
			return nil, time.Time{}, false
		}
		cond := n.Status.Conditions[i]
		cr := CheckResult{Check: c, Summary: cond.Message, Reason: cond.Reason, At: cond.LastHeartbeatTime.Time, Since: cond.LastTransitionTime.Time}
		switch cond.Status {
		case corev1.ConditionFalse:
			cr.Status = CheckOK
		case corev1.ConditionTrue:
			cr.Status = CheckProblem
		default:
			cr.Status = CheckUnknown
		}
		if beat.IsZero() || cr.At.Before(beat) {
			beat = cr.At
		}
		out = append(out, cr)
	}
	return out, beat, len(checks) > 0
}

// MonitorAnswer is a verify row's answer from the monitor's checkpoints condition: one row for
// all of a node's files. Only a sound answer is a row: a problem is read now, so that its rows
// name each file (FleetOptions.ReadProblems).
type MonitorAnswer struct {
	Condition          corev1.NodeConditionType `json:"condition"`
	Status             corev1.ConditionStatus   `json:"status"`
	Reason             string                   `json:"reason,omitempty"`
	Message            string                   `json:"message,omitempty"`
	LastTransitionTime metav1.Time              `json:"lastTransitionTime"`
}

// MonitorRows are a monitored node's verify row: its checkpoints answer.
func (m MonitoredNode) MonitorRows() []FileRow {
	var rows []FileRow
	for _, r := range m.Results {
		if r.Check != CheckCheckpoints || r.Status != CheckOK {
			continue
		}
		src := m.Source
		rows = append(rows, FileRow{Node: m.Node, Source: &src, Monitor: &MonitorAnswer{Condition: ConditionTypes[r.Check],
			Status: corev1.ConditionFalse, Reason: r.Reason, Message: r.Summary, LastTransitionTime: metav1.NewTime(r.Since)}})
	}
	return rows
}

// ConditionAge is how old a condition's answer was at now, as kubectl prints ages.
func ConditionAge(r CheckResult, now time.Time) string {
	return duration.HumanDuration(now.Sub(r.At))
}
