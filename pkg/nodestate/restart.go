package nodestate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
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
	// NotJudged are the pods the replay cannot answer for, each "name (why)".
	NotJudged []string `json:"notJudged,omitempty"`
	// FromFiles: no API server gave the pods; they are rebuilt from the node's files (offline,
	// node-local), and Rebuilt says from what and what they lack.
	FromFiles bool     `json:"fromFiles,omitempty"`
	Rebuilt   []string `json:"rebuilt,omitempty"`
}

// PodAtRisk is one pod the restart refuses.
type PodAtRisk struct {
	Pod string `json:"pod"`
	// WaitsOn are the device plugins (resources) it comes back with, had they registered
	// before the kubelet re-admitted it; empty: refused either way.
	WaitsOn []string `json:"waitsOn,omitempty"`
	Reason  string   `json:"reason"`
	// Message is the kubelet's Warning event's; StatusMessage the refused pod's status.message.
	Message       string `json:"message"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// IfRegistered is its refusal had the plugins registered first, where the words differ.
	IfRegistered *admit.Refusal `json:"ifRegistered,omitempty"`
	// Owner is the kind of its controller ("": a bare pod, which nothing makes again).
	Owner string `json:"owner,omitempty"`
	// OwnerNotKnown: a pod rebuilt from files that do not name its controller.
	OwnerNotKnown bool `json:"ownerNotKnown,omitempty"`
}

// Finding checks of the restart outlook (one line a node each).
const (
	CheckIfReboot         = "if-reboot"
	CheckIfKubeletRestart = "if-kubelet-restart"
)

// restartOutlook replays both restarts of a node whose kubelet starts with its files: its pods
// (a live node's from the API server, not terminal; else rebuilt from its files), its device
// plugins, none registered during the re-admissions, and the kubelet's sources not yet ready
// (the first batch of pods after a start). Nil, and why (skip), when it cannot.
func (r *Runner) restartOutlook(n *NodeResult, mi managerInputs, skip, note func(string, ...any)) []RestartOutlook {
	if mi.kubelet == nil || mi.machine == nil || mi.config == nil {
		return nil // the start was not predicted either; its notes say why
	}
	ix := n.Snapshot.Pods
	if n.Node == "" || ix == nil || ix.Unlisted || len(ix.Pods) == 0 {
		// Offline, node-local (the runtime's containers, no pod specs), or the node's pods
		// not listed: the files' pods.
		return r.restartOutlookFromFiles(n, mi, skip, note)
	}
	pods := slices.Clone(ix.Running)
	admit.SortByCreation(pods)
	in, _ := r.replayInput(n, mi, pods)
	never := neverRegisters(in.Devices, len(pods))
	running, exited := map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, p := range pods {
		uid := string(p.UID)
		for _, c := range ix.Statuses[uid] {
			if c.Running {
				addRunning(running, exited, uid, c.Name, c.Restarted)
			}
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
			name := fateName(f)
			switch {
			case f.NotJudged:
				o.NotJudged = append(o.NotJudged, name)
			case f.Fate != admit.FateComesBack:
				o.AtRisk = append(o.AtRisk, PodAtRisk{Pod: name, WaitsOn: f.WaitsOn, Reason: f.Reason, Message: f.Message,
					StatusMessage: f.StatusMessage, IfRegistered: f.IfRegistered, Owner: ownerKind(pods[i])})
			}
		}
		out = append(out, o)
	}
	return out
}

// neverRegisters is every plugin of devices registering after the last of n re-admissions.
func neverRegisters(devices *replay.DeviceInput, n int) map[string]int {
	never := map[string]int{}
	if devices != nil {
		for resource := range devices.Plugins {
			never[resource] = n + 1
		}
	}
	return never
}

func fateName(f admit.PodFate) string {
	if f.Namespace != "" {
		return f.Namespace + "/" + f.Pod
	}
	if f.Pod == f.UID {
		return "pod " + f.UID // rebuilt from files that name it by UID only
	}
	return f.Pod
}

// restartOutlookFromFiles is the outlook of a node known by its files alone (a collect bundle, a
// copied kubelet root dir, node-local): the pods rebuilt from its allocation and managers'
// checkpoints (admit.RebuildPods), the plugins its device checkpoint registers (and the join's,
// where it knows more), and for a kubelet restart the containers running now: the runtime's
// (node-local), else the API server's when a collect bundle recorded them (with the pods'
// names, owners and creation times), else none known, and that outlook is skipped.
func (r *Runner) restartOutlookFromFiles(n *NodeResult, mi managerInputs, skip, note func(string, ...any)) []RestartOutlook {
	rb := admit.RebuildPods(admit.RebuildInput{Allocation: mi.report(decode.KindAllocated),
		CPU: mi.report(decode.KindCPU), Memory: mi.report(decode.KindMemory), Devices: mi.report(decode.KindDevices)})
	running, runtimeKnown := runtimeContainers(n)
	var exited map[string]map[string]bool
	recorded := n.RecordedPods
	if runtimeKnown {
		recorded = nil // node-local: the runtime's state is now, the API server's was then
	}
	if recorded != nil {
		recorded.name(&rb)
		running, exited = recorded.containers()
		rb.Notes = append(rb.Notes, "the pods' names, owners, creation times and running containers: the API server's when the bundle was collected ("+NodeInfoFile+")")
	}
	in, _ := r.replayInput(n, mi, nil)
	plugins, unplaced := admit.FilePlugins(mi.report(decode.KindDevices))
	if in.Devices == nil {
		in.Devices, in.DevicesNotReplayed = &replay.DeviceInput{Checkpoint: mi.report(decode.KindDevices)}, ""
	}
	if len(plugins) > 0 {
		in.Devices.Plugins = maps.Clone(in.Devices.Plugins)
		if in.Devices.Plugins == nil {
			in.Devices.Plugins = map[string][]replay.Device{}
		}
		for resource, devices := range plugins {
			if _, known := in.Devices.Plugins[resource]; !known {
				in.Devices.Plugins[resource] = devices
			}
		}
	}
	rebuilt := slices.Clone(rb.Notes)
	if len(plugins) > 0 {
		rebuilt = append(rebuilt, "plugins: "+strings.Join(slices.Sorted(maps.Keys(plugins)), ", ")+" (the device checkpoint registers them)")
	}
	rebuilt = append(rebuilt, unplaced...)
	if socks := pluginSockets(n); len(socks) > 0 {
		rebuilt = append(rebuilt, "device plugin sockets: "+strings.Join(socks, ", "))
	}
	note("the restart outlook from the node's files: %s", strings.Join(rebuilt, "; "))
	never := neverRegisters(in.Devices, len(rb.Pods))
	restarts := []admit.Restart{{Kind: admit.RestartReboot, Register: never}}
	// The kubelet was running when the files were read: a pod nothing of which ran then is gone
	// or done (its entries outlive it until the kubelet cleans them), which the kubelet does not
	// re-admit, or one not started yet. The API server's list, where recorded, tells which.
	for i, p := range rb.Pods {
		if recorded != nil {
			if why := recorded.gone(string(p.Pod.UID)); why != "" {
				rb.Pods[i].NotJudged = why // before what the files lack: it is not re-admitted at all
			}
		} else if why := nothingRuns(n, string(p.Pod.UID), running, runtimeKnown); p.NotJudged == "" && why != "" {
			rb.Pods[i].NotJudged = why + ": deleted or finished since its entries were written (not re-admitted), or not started; the files cannot tell"
		}
	}
	switch {
	case runtimeKnown || recorded != nil:
		restarts = append(restarts, admit.Restart{Kind: admit.RestartKubelet, Running: running, Exited: exited, Register: never})
	case n.Snapshot.Pods != nil && n.Snapshot.Pods.Unlisted:
		skip("the restart outlook (%s): the node's pods could not be listed, so which of their containers run is not known (allow listing pods, see the warning)", CheckIfKubeletRestart)
	case n.Snapshot.Pods != nil:
		skip("the restart outlook (%s): no container runtime's state was found on the node", CheckIfKubeletRestart)
	default:
		skip("the restart outlook (%s): the copied files do not say which containers run (a bundle's cgroups name container IDs, not containers); a bundle of this version's collect records them from the API server (%s)", CheckIfKubeletRestart, NodeInfoFile)
	}
	var out []RestartOutlook
	for _, restart := range restarts {
		in.Restart = &restart
		res, err := admit.PredictRestartRebuilt(in, rb)
		if err != nil {
			note("%s not predicted: %v", restart.Kind, err)
			continue
		}
		o := RestartOutlook{Kind: restart.Kind, Pods: len(rb.Pods), FromFiles: true, Rebuilt: rebuilt}
		for i, f := range res.Fates {
			name := fateName(f)
			switch {
			case f.NotJudged:
				o.NotJudged = append(o.NotJudged, name+" ("+f.Why+")")
			case f.Fate != admit.FateComesBack:
				risk := PodAtRisk{Pod: name, WaitsOn: f.WaitsOn, Reason: f.Reason, Message: f.Message, OwnerNotKnown: !rb.Pods[i].OwnerKnown}
				if rb.Pods[i].OwnerKnown {
					risk.Owner = ownerKind(rb.Pods[i].Pod)
				}
				o.AtRisk = append(o.AtRisk, risk)
			}
		}
		out = append(out, o)
	}
	return out
}

// pluginSockets are the sockets in the node's device-plugins dir (the bundle's sockets section),
// read for doctor's device checks or here.
func pluginSockets(n *NodeResult) []string {
	if n.Sockets != nil {
		return n.Sockets.Names
	}
	if b := n.Snapshot.Dumps[nodefs.SocketsHeader]; b != nil {
		if socks, err := nodefs.ParseSockets(b); err == nil {
			return socks.Names
		}
	}
	return nil
}

// nothingRuns says that nothing of the pod ran when the node was read ("": something did, or
// that is not known): node-local, neither its sandbox nor a container in the runtime's state; in
// a bundle, no directory of it under its cgroup (a cut dump tells nothing by absence).
func nothingRuns(n *NodeResult, uid string, running map[string]map[string]bool, runtimeKnown bool) string {
	if runtimeKnown {
		if !n.Snapshot.Pods.Sandboxes[uid] && len(running[uid]) == 0 {
			return "no sandbox or container of it runs now"
		}
		return ""
	}
	if cg := n.Cgroups; cg != nil && !cg.Cut && cg.Version > 0 {
		if pod := cg.Pods[uid]; pod == nil || pod.Children == 0 {
			return "nothing of it ran when the bundle's cgroups were read"
		}
	}
	return ""
}

// runtimeContainers are the containers the node runs now, by pod UID, from the runtime's state
// (node-local); false when not known. A bundle's cgroups name container IDs, not names: they
// do not say which of a pod's containers run.
func runtimeContainers(n *NodeResult) (map[string]map[string]bool, bool) {
	ix := n.Snapshot.Pods
	if ix == nil || len(ix.Statuses) == 0 {
		// None found: not a node running nothing (node-check runs in a pod of its own) but a
		// runtime whose state is elsewhere.
		return nil, false
	}
	running := map[string]map[string]bool{}
	for uid, statuses := range ix.Statuses {
		for _, c := range statuses {
			if c.Running {
				if running[uid] == nil {
					running[uid] = map[string]bool{}
				}
				running[uid][c.Name] = true
			}
		}
	}
	return running, true
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
	var notJudged, from string
	if len(o.NotJudged) > 0 {
		why := "devices not known"
		if o.FromFiles {
			why = "the files do not tell"
		}
		notJudged = fmt.Sprintf("; not judged (%s): %s", why, strings.Join(o.NotJudged, ", "))
	}
	if o.FromFiles {
		from = " [pods rebuilt from the node's files]"
	}
	if len(o.AtRisk) == 0 {
		switch back := o.Pods - len(o.NotJudged); {
		case o.FromFiles && o.Pods == 0:
			f.Message = fmt.Sprintf("%s: no pod in the node's files holds devices, exclusive CPUs or memory blocks: none for the resource managers to refuse%s", what, from)
		case back == 1:
			f.Message = fmt.Sprintf("%s: its 1 pod comes back%s%s", what, notJudged, from)
		default:
			f.Message = fmt.Sprintf("%s: all %d pods come back%s%s", what, back, notJudged, from)
		}
		return f
	}
	f.Severity = doctor.SeverityWarning
	var parts []string
	waits := map[string]bool{}
	bare := false
	for _, p := range o.AtRisk {
		next := "bare: stays Failed, nothing makes it again"
		switch {
		case p.OwnerNotKnown:
			next = "its owner is not in the files: a bare pod stays Failed, a controller's is made again"
			bare = true
		case p.Owner != "":
			next = "its " + p.Owner + " makes a new one"
		default:
			bare = true
		}
		if len(p.WaitsOn) > 0 {
			parts = append(parts, fmt.Sprintf("%s waits on %s, refused meanwhile: %s: %s (%s)", p.Pod, strings.Join(p.WaitsOn, ", "), p.Reason, p.Message, next))
			for _, r := range p.WaitsOn {
				waits[r] = true
			}
			continue
		}
		refused := fmt.Sprintf("%s refused: %s: %s", p.Pod, p.Reason, p.Message)
		if r := p.IfRegistered; r != nil {
			refused += fmt.Sprintf(", and with its plugins registered: %s: %s", r.Reason, r.Message)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", refused, next))
	}
	f.Message = fmt.Sprintf("%s: %d of %d pods refused: %s%s%s", what, len(o.AtRisk), o.Pods, strings.Join(parts, "; "), notJudged, from)
	if len(waits) > 0 {
		f.Fix = fmt.Sprintf("have the %s plugin register before the kubelet re-admits its pods", strings.Join(slices.Sorted(maps.Keys(waits)), ", "))
		if bare {
			f.Fix += ", or drain the node first: a refused bare pod is lost"
		}
	}
	return f
}
