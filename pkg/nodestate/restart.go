package nodestate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
)

// RestartOutlook is what the node's pods become if the kubelet starts again now (issue 44): the
// kubelet restores its managers from the node's files and re-admits the node's pods, oldest
// first, before its device plugins have registered again (package admit's PredictRestart).
type RestartOutlook struct {
	// Kind is admit.RestartReboot (no container running) or admit.RestartKubelet (the
	// containers the node runs now are running).
	Kind string `json:"kind"`
	// Pods is how many pods the kubelet re-admits.
	Pods int `json:"pods"`
	// AtRisk are the pods refused, in the kubelet's order.
	AtRisk []PodAtRisk `json:"atRisk,omitempty"`
	// NotJudged are the pods the replay cannot answer for (their devices are not known).
	NotJudged []string `json:"notJudged,omitempty"`
}

// PodAtRisk is one pod the restart refuses.
type PodAtRisk struct {
	Pod string `json:"pod"`
	// WaitsOn are the device plugins (resources) it comes back with, had they registered
	// before the kubelet re-admitted it; empty: refused either way.
	WaitsOn []string `json:"waitsOn,omitempty"`
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
	// Owner is the kind of its controller ("": a bare pod, which nothing makes again).
	Owner string `json:"owner,omitempty"`
}

// Finding checks of the restart outlook (one line a node each).
const (
	CheckIfReboot         = "if-reboot"
	CheckIfKubeletRestart = "if-kubelet-restart"
)

// restartOutlook replays both restarts of a live node whose kubelet starts with its files:
// its pods (the API server's, not terminal), its device plugins as admit knows them, none
// registered during the re-admissions, and the kubelet's sources not yet ready (the first batch
// of pods after a start). Nil, and why (skip), when it cannot.
func (r *Runner) restartOutlook(n *NodeResult, mi managerInputs, skip, note func(string, ...any)) []RestartOutlook {
	ix := n.Snapshot.Pods
	switch {
	case n.Node == "" || ix == nil || len(ix.Pods) == 0:
		// Offline, or node-local (the runtime's containers, no pod specs): no pods to re-admit.
		skip("the restart outlook (%s, %s): the node's pods are known from the API server only", CheckIfReboot, CheckIfKubeletRestart)
		return nil
	case mi.kubelet == nil || mi.machine == nil || mi.config == nil:
		return nil // the start was not predicted either; its notes say why
	}
	pods := slices.Clone(ix.Running)
	admit.SortByCreation(pods)
	in, _ := r.replayInput(n, mi, pods)
	never := map[string]int{}
	if in.Devices != nil {
		for resource := range in.Devices.Plugins {
			never[resource] = len(pods) + 1
		}
	}
	running, exited := map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, p := range pods {
		uid := string(p.UID)
		for _, c := range ix.Statuses[uid] {
			if !c.Running {
				continue
			}
			if running[uid] == nil {
				running[uid], exited[uid] = map[string]bool{}, map[string]bool{}
			}
			running[uid][c.Name] = true
			exited[uid][c.Name] = c.Restarted
		}
	}
	var out []RestartOutlook
	for _, restart := range []admit.Restart{
		{Kind: admit.RestartReboot, Register: never},
		{Kind: admit.RestartKubelet, Running: running, Exited: exited, Register: never},
	} {
		in.Restart = &restart
		res, err := admit.PredictRestart(in)
		if err != nil {
			note("%s not predicted: %v", restart.Kind, err)
			continue
		}
		o := RestartOutlook{Kind: restart.Kind, Pods: len(pods)}
		for i, f := range res.Fates {
			name := f.Pod
			if f.Namespace != "" {
				name = f.Namespace + "/" + f.Pod
			}
			switch {
			case f.NotJudged:
				o.NotJudged = append(o.NotJudged, name)
			case f.Fate != admit.FateComesBack:
				o.AtRisk = append(o.AtRisk, PodAtRisk{Pod: name, WaitsOn: f.WaitsOn, Reason: f.Reason, Message: f.Message, Owner: ownerKind(pods[i])})
			}
		}
		out = append(out, o)
	}
	return out
}

// ownerKind is the kind of the pod's controller, "" for a bare pod.
func ownerKind(p *v1.Pod) string {
	if o := metav1.GetControllerOf(p); o != nil {
		return o.Kind
	}
	return ""
}

// Finding is the outlook as one line of doctor's answer.
func (o RestartOutlook) Finding() doctor.Finding {
	f := doctor.Finding{Severity: doctor.SeverityInfo, Check: CheckIfKubeletRestart, File: "pods"}
	what := "if the kubelet restarts (the containers running now stay running; device plugins not yet registered)"
	if o.Kind == admit.RestartReboot {
		f.Check, what = CheckIfReboot, "if this node reboots (no container running; device plugins not yet registered)"
	}
	var notJudged string
	if len(o.NotJudged) > 0 {
		notJudged = fmt.Sprintf("; not judged (devices not known): %s", strings.Join(o.NotJudged, ", "))
	}
	if len(o.AtRisk) == 0 {
		f.Message = fmt.Sprintf("%s: all %d pods come back%s", what, o.Pods-len(o.NotJudged), notJudged)
		return f
	}
	f.Severity = doctor.SeverityWarning
	var parts []string
	waits := map[string]bool{}
	bare := false
	for _, p := range o.AtRisk {
		next := "bare: stays Failed, nothing makes it again"
		if p.Owner != "" {
			next = "its " + p.Owner + " makes a new one"
		} else {
			bare = true
		}
		if len(p.WaitsOn) > 0 {
			parts = append(parts, fmt.Sprintf("%s waits on %s (%s)", p.Pod, strings.Join(p.WaitsOn, ", "), next))
			for _, r := range p.WaitsOn {
				waits[r] = true
			}
			continue
		}
		parts = append(parts, fmt.Sprintf("%s refused: %s: %s (%s)", p.Pod, p.Reason, p.Message, next))
	}
	f.Message = fmt.Sprintf("%s: %d of %d pods refused: %s%s", what, len(o.AtRisk), o.Pods, strings.Join(parts, "; "), notJudged)
	if len(waits) > 0 {
		f.Fix = fmt.Sprintf("have the %s plugin register before the kubelet re-admits its pods", strings.Join(slices.Sorted(maps.Keys(waits)), ", "))
		if bare {
			f.Fix += ", or drain the node first: a refused bare pod is lost"
		}
	}
	return f
}
