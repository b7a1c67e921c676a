// Package doctor says whether a kubelet will start with the resource-manager state it finds on
// the node, before the kubelet finds out: after a restart, a config change, a reboot with CPUs
// offlined, a VM resize or an upgrade. It replays, per kubelet release, the checks the CPU and
// memory managers' NewManager and Start make against their checkpoints, the kubelet config and
// the machine (through pkg/replay: what changes by release is its release_rules.go and
// decode.Gates), proposes a fix that it has verified by replaying again, and lists other
// problems in the files (overlaps, stale entries, files the target kubelet refuses).
//
// It is a pure library: decoded checkpoints (pkg/decode), a machine (pkg/machine), a kubelet
// config and a version in; a Result out. It knows nothing of clusters, pods or files on disk.
package doctor

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Input is everything doctor reads about one node. Any of Machine, Config, Kubelet and LivePods
// may be missing: the checks that need it are skipped and Result.Skipped says so.
type Input struct {
	// Files are the node's checkpoints, decoded for Kubelet when it is known.
	Files []*decode.Report
	// Machine is the node's hardware (sysfs, or machine.json).
	Machine *machine.Machine
	// Config is the kubelet's configuration (configz, config.yaml, or the one about to roll out).
	Config *replay.KubeletConfig
	// Kubelet is the kubelet version about to start (and its command-line feature gates).
	Kubelet *decode.Kubelet
	// RootDir is the kubelet's root dir (default /var/lib/kubelet), for paths in texts.
	RootDir string
	// LivePods is the set of pod UIDs the API server has for the node; nil = unknown.
	LivePods map[string]bool
	// LiveContainers is, for live pods, the names of their containers (init containers too); a
	// pod absent here has unknown containers.
	LiveContainers map[string]map[string]bool
	// Node is what the node and the API server say beside the files (device plugin sockets,
	// node status, CDI specs, ResourceClaims); nil: none of it is known.
	Node *NodeFacts
	// Cgroups is what the node's cgroups show its containers run on (pkg/cgroup); nil = not read.
	Cgroups *cgroup.Node
}

// Severity ranks a finding. Only errors make the command exit 1.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding is one problem.
type Finding struct {
	Severity Severity `json:"severity"`
	// Check names the kind of problem, e.g. "kubelet-start", "cpu-overlap", "stale-pod".
	Check string `json:"check"`
	// File is the checkpoint (relative to the kubelet root dir), or "kubelet-config"/"machine".
	File string `json:"file"`
	// Entry is the part of the file: a pod/container, a NUMA node, a device.
	Entry   string `json:"entry,omitempty"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// KubeletStart is the start prediction and its fix.
type KubeletStart struct {
	replay.Prediction
	// Kubelet is the version predicted for.
	Kubelet string `json:"kubelet,omitempty"`
	// Unchecked says whose rules predicted for a kubelet build no vector was made by
	// (decode.Kubelet.Unchecked; empty for a build checked).
	Unchecked string `json:"unchecked,omitempty"`
	// Fix is how to make it start, when it does not.
	Fix *Fix `json:"fix,omitempty"`
}

// Fix is one way to let the kubelet start.
type Fix struct {
	// Config is a KubeletConfiguration change (its fields, as JSON) with which this kubelet
	// starts with today's files and machine.
	Config json.RawMessage `json:"config,omitempty"`
	// Delete is a checkpoint to delete after draining the node, when no config change helps.
	Delete string `json:"delete,omitempty"`
	// Loses is what deleting it loses.
	Loses []string `json:"loses,omitempty"`
	// Verified: doctor replayed the start with the fix applied and it starts.
	Verified bool `json:"verified"`
	// Text says the fix in words.
	Text string `json:"text"`
	// Alternatives are other verified ways, e.g. keeping the new config and deleting the state
	// written under the old one.
	Alternatives []Fix `json:"alternatives,omitempty"`
}

// Result is doctor's answer for one node.
type Result struct {
	KubeletStart KubeletStart `json:"kubeletStart"`
	Findings     []Finding    `json:"findings"`
	// Skipped lists the checks that could not run, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// HasErrors reports whether a finding is an error.
func (r *Result) HasErrors() bool {
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Diagnose runs every check the input allows.
func Diagnose(in Input) Result {
	var res Result
	if in.RootDir == "" {
		in.RootDir = decode.DefaultRootDir
	}
	cpuRep, memRep := fileOf(in.Files, decode.KindCPU), fileOf(in.Files, decode.KindMemory)

	res.KubeletStart.Phase = replay.PhaseNotPredicted
	var missing []string
	if in.Machine == nil {
		missing = append(missing, "the machine (--machine)")
	}
	if in.Config == nil {
		missing = append(missing, "the kubelet config (--kubelet-config)")
	}
	if in.Kubelet == nil || in.Kubelet.Version == nil {
		missing = append(missing, "the kubelet version (--kubelet-version)")
	} else {
		res.KubeletStart.Kubelet, res.KubeletStart.Unchecked = in.Kubelet.String(), in.Kubelet.Unchecked()
	}
	if len(missing) > 0 {
		res.Skipped = append(res.Skipped, "start prediction: needs "+text.JoinAnd(missing))
	} else {
		sin := replay.StartInput{CPU: cpuRep, Memory: memRep, Machine: in.Machine, Config: in.Config, Kubelet: *in.Kubelet, RootDir: in.RootDir,
			Topology: replay.Discover(in.Machine)}
		p, err := replay.PredictStart(sin)
		if err != nil {
			res.Skipped = append(res.Skipped, "start prediction: "+err.Error())
		} else {
			res.KubeletStart.Prediction = p
			if !p.Starts {
				res.KubeletStart.Fix = proposeFix(sin, p)
				res.Findings = append(res.Findings, startFinding(sin, p, res.KubeletStart.Fix))
			}
		}
	}

	res.Findings = append(res.Findings, fileFindings(in, res.KubeletStart.Error)...)
	res.Findings = append(res.Findings, configFindings(in)...)
	// When the CPU manager's own check passed, it has compared the state with the machine
	// (knowing what strict-cpu-reservation leaves out); doctor's cruder comparison would not.
	cpuChecked := res.KubeletStart.CPU != nil && res.KubeletStart.CPU.Phase == replay.PhaseOK
	res.Findings = append(res.Findings, cpuFindings(in, cpuRep, cpuChecked)...)
	res.Findings = append(res.Findings, memoryFindings(in, memRep)...)
	res.Findings = append(res.Findings, deviceFindings(in)...)
	res.Findings = append(res.Findings, draFindings(in)...)
	res.Findings = append(res.Findings, deviceNodeFindings(in, &res)...)
	res.Findings = append(res.Findings, draNodeFindings(in, &res)...)
	cgFindings, cgSkipped := cgroupFindings(in, cpuRep, memRep)
	res.Findings = append(res.Findings, cgFindings...)
	res.Skipped = append(res.Skipped, cgSkipped...)
	if in.Machine == nil {
		res.Skipped = append(res.Skipped, "CPUs and NUMA nodes outside the machine: no machine")
	}
	if in.LivePods == nil {
		res.Skipped = append(res.Skipped, "stale entries (pods gone from the API): the live pods are unknown")
	}
	sort.SliceStable(res.Findings, func(i, j int) bool { return rank(res.Findings[i].Severity) < rank(res.Findings[j].Severity) })
	if res.Findings == nil {
		res.Findings = []Finding{}
	}
	return res
}

func rank(s Severity) int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

func fileOf(files []*decode.Report, kind decode.Kind) *decode.Report {
	for _, f := range files {
		if f != nil && f.Kind == kind {
			return f
		}
	}
	return nil
}

// startFinding is the prediction as a finding, on the file or config it is about.
func startFinding(in replay.StartInput, p replay.Prediction, fix *Fix) Finding {
	f := Finding{Severity: SeverityError, Check: "kubelet-start", Message: fmt.Sprintf("kubelet %s will not start (%s): %s", in.Kubelet, p.Phase, p.Error)}
	switch p.Phase {
	case replay.PhaseCPUStart:
		f.File = decode.PathOf(decode.KindCPU)
	case replay.PhaseMemoryStart:
		f.File = decode.PathOf(decode.KindMemory)
	default:
		f.File = "kubelet-config"
	}
	if fix != nil {
		f.Fix = fix.Text
	}
	if p.Memory != nil && p.Phase == replay.PhaseMemoryStart && len(p.Memory.Details) > 0 {
		f.Message += " (" + strings.Join(p.Memory.Details, "; ") + ")"
	}
	return f
}
