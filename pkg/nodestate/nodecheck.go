package nodestate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// A NodeCheck is one question the node-local mode answers about the node it runs on: one rule
// of the Node Problem Detector's custom plugin monitor, and one node condition.
type NodeCheck string

// The node-local checks.
const (
	// CheckCheckpoints: every checkpoint file is one this node's kubelet restores (verify).
	CheckCheckpoints NodeCheck = "checkpoints"
	// CheckRestart: the kubelet would start again with its current config, files and machine
	// (doctor's start prediction): a restart or reboot is safe.
	CheckRestart NodeCheck = "restart"
	// CheckCgroups: the CPU and memory managers' states agree with the containers' cgroups (no
	// drift, no CPUs leaked or handed out twice).
	CheckCgroups NodeCheck = "cgroups"
	// CheckDevices: the device and DRA checkpoints agree with the node's device plugins and CDI
	// specs.
	CheckDevices NodeCheck = "devices"
)

// NodeChecks are the checks, in the order they are documented.
var NodeChecks = []NodeCheck{CheckCheckpoints, CheckRestart, CheckCgroups, CheckDevices}

// CheckStatus is a check's answer, numbered as the Node Problem Detector reads a custom
// plugin's exit status.
type CheckStatus int

const (
	CheckOK      CheckStatus = 0
	CheckProblem CheckStatus = 1
	// CheckUnknown: what the check needs could not be read or is missing.
	CheckUnknown CheckStatus = 2
)

// LocalConfig is what the node-local checks read: this node's directories, the kubelet's
// version and config file.
type LocalConfig struct {
	nodelocal.Paths
	// KubeletVersion is the kubelet's version; "" reads it from the first of KubeletBinaries
	// present (nodelocal.KubeletVersion).
	KubeletVersion  string
	KubeletBinaries []string
	// KubeletConfigFile is the kubelet's --config; "" is config.yaml in the root dir (kubeadm).
	KubeletConfigFile string
}

// LocalDefaults are the node's own paths and kubelet binaries (node-check's flag defaults).
func LocalDefaults() LocalConfig {
	return LocalConfig{Paths: nodelocal.Defaults(), KubeletBinaries: nodelocal.KubeletBinaries}
}

// The container runtimes' state dirs on the node, whose bundles name the running containers.
const (
	DefaultContainerdState = "/run/containerd"
	DefaultCRIORunRoot     = "/run/containers/storage"
)

// RuntimesAt are nodelocal's runtimes with their state dirs moved.
func RuntimesAt(containerdState, crioRunRoot string) []nodelocal.Runtime {
	rts := append([]nodelocal.Runtime(nil), nodelocal.Runtimes...)
	for i := range rts {
		switch rts[i].Name {
		case "containerd":
			rts[i].Bundles = filepath.Join(containerdState, strings.TrimPrefix(rts[i].Bundles, DefaultContainerdState+"/"))
		case "cri-o":
			rts[i].Bundles = filepath.Join(crioRunRoot, strings.TrimPrefix(rts[i].Bundles, DefaultCRIORunRoot+"/"))
		}
	}
	return rts
}

// CheckResult is one check's answer.
type CheckResult struct {
	Check  NodeCheck
	Status CheckStatus
	// Summary says the answer in a few words: the first problem found, or what was found
	// sound, or why the check could not judge.
	Summary string
	// Problems are the findings behind a problem, worst first (Summary names the first).
	Problems []doctor.Finding
	// Kubelet is the kubelet judged for, and how it was found.
	Kubelet, KubeletFrom string
	// Unchecked says whose rules judged a kubelet build no vector was made by
	// (decode.Kubelet.Unchecked); Summary then ends with UncheckedMark.
	Unchecked string
	// Reason is the condition's reason, when the answer comes from a node condition.
	Reason string
	// At is when the answer was had: a condition's last heartbeat, or the read's time (zero
	// from CheckNode: now).
	At time.Time
	// Since is when a condition's answer last changed (its lastTransitionTime).
	Since time.Time
}

// UncheckedMark ends the summary of a check judged for a kubelet build no vector was made by.
const UncheckedMark = " (build not checked)"

// ruleOf attributes doctor's findings to the checks: the start prediction to restart, the
// cgroup audit to cgroups, the device and DRA audit to devices. Doctor's other findings (an
// overlap inside a file, stale entries) are doctor's to report; no condition is raised for them.
func ruleOf(check string) (NodeCheck, bool) {
	switch {
	case check == "kubelet-start":
		return CheckRestart, true
	case doctor.IsCgroupCheck(check):
		return CheckCgroups, true
	case strings.HasPrefix(check, "device-"), strings.HasPrefix(check, "dra-"), check == "kubelet-socket-missing", check == "cdi-spec-unreadable":
		return CheckDevices, true
	}
	return "", false
}

// CheckNode runs the checks on the node this process runs on: it reads only what they need
// (nodelocal), judges the files for the node's kubelet and runs doctor on them, as `verify`
// and `doctor` judge a node's copy. It needs no API server: the pods' containers come from the
// container runtime's state, and what only the API knows (ResourceClaims, stale pods) is
// skipped. An error is for a kubelet root dir that cannot be read at all.
func CheckNode(ctx context.Context, lc LocalConfig, checks ...NodeCheck) ([]CheckResult, error) {
	want := nodelocal.Want{Files: decode.Paths()}
	runs := map[NodeCheck]bool{}
	for _, c := range checks {
		runs[c] = true
	}
	if runs[CheckRestart] {
		// The restart outlook: the running containers (a kubelet restart) and the plugin sockets.
		want.Sysfs, want.Containers, want.Sockets = true, true, true
	}
	if runs[CheckCgroups] {
		want.Cgroups, want.Containers = true, true
	}
	if runs[CheckDevices] {
		want.Sockets, want.CDI = true, true
	}
	snap, err := nodelocal.Read(lc.Paths, want)
	if err != nil {
		return nil, err
	}
	snap.Source = lc.RootDir
	version, versionFrom, versionErr := lc.kubeletVersion()
	snap.KubeletVersion, snap.KubeletVersionFrom = version, versionFrom

	var config *replay.KubeletConfig
	configFile := lc.KubeletConfigFile
	if configFile == "" {
		configFile = filepath.Join(lc.RootDir, KubeletConfigFile)
	}
	var configErr error
	if runs[CheckRestart] {
		raw, err := local.ReadFile(configFile, local.DefaultLimits)
		if err == nil {
			config, err = replay.ParseKubeletConfig(raw)
		}
		if err != nil {
			configErr = fmt.Errorf("kubelet config %s: %w", configFile, err)
		}
	}

	r := &Runner{cfg: Config{FromDir: lc.RootDir, KubeletRootDir: lc.RootDir, NodeFiles: runs[CheckDevices], Cgroups: runs[CheckCgroups],
		Engines: Engines{Doctor: &DoctorConfig{KubeletConfig: config}}}}
	res := &NodeResult{Node: snap.Node, Where: snap.Source, Snapshot: snap}
	r.offlineExtras(res)
	res.ClaimsSkipped = "node-local: ResourceClaims are the API server's"
	if runs[CheckCgroups] {
		res.Cgroups, res.CgroupsErr = readCgroups(snap.Dumps[cgroup.Header], snap.Pods)
	}
	r.judge(res)
	res = r.runEngines(res)

	return judgeNode(ctx, res, lc.CgroupRoot, versionErr, configErr, checks)
}

// judgeNode answers the checks on a judged node (read here, or live through a debug pod).
// cgroupRoot names the cgroup mount in messages; versionErr and configErr say why the
// kubelet's version or config is unknown.
func judgeNode(ctx context.Context, res *NodeResult, cgroupRoot string, versionErr, configErr error, checks []NodeCheck) ([]CheckResult, error) {
	kubelet := ""
	// A release guessed from the files' formats is no kubelet of this node's.
	if res.Judged.Kubelet != nil && res.Judged.Basis != BasisFiles {
		kubelet = "kubelet " + res.Judged.Kubelet.String()
	}
	var out []CheckResult
	for _, c := range checks {
		cr := CheckResult{Check: c, Kubelet: kubelet, KubeletFrom: res.Judged.Why}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		switch c {
		case CheckCheckpoints:
			judgeCheckpoints(&cr, res)
		case CheckRestart:
			judgeRestart(&cr, res, versionErr, configErr)
		case CheckCgroups:
			judgeFindings(&cr, res, func() string {
				switch n := res.Cgroups; {
				case n == nil:
					return fmt.Sprintf("cgroups not read: %v", res.CgroupsErr)
				case n.Version == 0:
					return "no cpuset cgroup tree at " + cgroupRoot + " (--cgroup-root)"
				case res.Snapshot == nil || !bytes.Contains(res.Snapshot.Dumps[cgroup.Header], []byte("\n=./")):
					// No directory line: the kubelet made no kubepods tree here (not running, or
					// another cgroup mount), so every pod would look gone.
					return "no kubepods cgroup tree under " + cgroupRoot + " (--cgroup-root)"
				}
				return ""
			}, func() string {
				n := 0
				for _, ctrs := range res.Cgroups.Containers {
					n += len(ctrs)
				}
				return fmt.Sprintf("cgroups agree with the CPU and memory state (%d containers)", n)
			})
		case CheckDevices:
			judgeFindings(&cr, res, func() string { return "" }, func() string {
				return "devices and DRA claims agree with the node's plugins and CDI specs"
			})
		default:
			return nil, fmt.Errorf("no node check %q (checks: %s)", c, checkNames())
		}
		// Their answers are the release's rules: a build none was checked on says so, briefly
		// (a condition's message is one short line).
		if (c == CheckCheckpoints || c == CheckRestart) && kubelet != "" {
			if cr.Unchecked = res.Judged.Kubelet.Unchecked(); cr.Unchecked != "" {
				cr.Summary += UncheckedMark
			}
		}
		out = append(out, cr)
	}
	return out, nil
}

// NodeCheckNames are the checks' names, in NodeChecks' order.
func NodeCheckNames() []string {
	var names []string
	for _, c := range NodeChecks {
		names = append(names, string(c))
	}
	return names
}

func checkNames() string { return strings.Join(NodeCheckNames(), ", ") }

// ParseNodeCheck names a check.
func ParseNodeCheck(s string) (NodeCheck, error) {
	for _, c := range NodeChecks {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("no node check %q: one of %s", s, checkNames())
}

// kubeletVersion is the version given, else the first kubelet binary's.
func (lc LocalConfig) kubeletVersion() (version, from string, err error) {
	if lc.KubeletVersion != "" {
		return lc.KubeletVersion, "the kubelet version given (--kubelet-version)", nil
	}
	binaries := lc.KubeletBinaries
	if binaries == nil {
		binaries = nodelocal.KubeletBinaries
	}
	var errs []error
	for _, b := range binaries {
		v, err := nodelocal.KubeletVersion(b)
		if err == nil {
			return v, "the build info of " + b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return "", "", fmt.Errorf("no kubelet binary at %s (--kubelet-binary, --kubelet-version)", strings.Join(binaries, ", "))
	}
	return "", "", errors.Join(errs...)
}

// judgeCheckpoints: every file the kubelet reads is valid for it; a temp file is no problem
// (the kubelet ignores it).
func judgeCheckpoints(cr *CheckResult, res *NodeResult) {
	valid := 0
	for _, row := range res.Rows {
		switch v := row.Verdict(); v {
		case decode.Valid:
			valid++
		case decode.NotRead:
		default:
			cause := ""
			if row.Report != nil {
				cause = row.Report.Cause
			} else if row.NotDecoded != nil {
				cause = row.NotDecoded.Cause
			}
			cr.Problems = append(cr.Problems, doctor.Finding{Severity: doctor.SeverityError, Check: string(v), File: row.File(), Message: cause})
		}
	}
	if len(cr.Problems) > 0 {
		p := cr.Problems[0]
		cr.Status, cr.Summary = CheckProblem, fmt.Sprintf("%s %s for %s", p.File, p.Check, orFiles(cr.Kubelet))
		if p.Message != "" {
			cr.Summary += ": " + p.Message
		}
		return
	}
	cr.Summary = fmt.Sprintf("%d checkpoint files valid for %s", valid, orFiles(cr.Kubelet))
}

func orFiles(kubelet string) string {
	if kubelet == "" {
		return "the newest kubelet writing them"
	}
	return kubelet
}

// judgeRestart is doctor's start prediction, and the files the kubelet refuses and cannot
// start without: the prediction replays the CPU and memory managers only, while a refused
// allocation file makes the allocation manager panic (a V2 file a 1.38 kubelet cannot decode,
// a V1 one after a rollback) and a refused DRA file stops the kubelet too.
func judgeRestart(cr *CheckResult, res *NodeResult, versionErr, configErr error) {
	start := res.Doctor.KubeletStart
	refused := stoppingRefusal(res)
	switch {
	case versionErr != nil && res.Judged.Basis != BasisRecorded && res.Judged.Basis != BasisConfig:
		cr.Status, cr.Summary = CheckUnknown, "cannot judge: kubelet version: "+versionErr.Error()
	case configErr != nil:
		cr.Status, cr.Summary = CheckUnknown, "cannot judge: "+configErr.Error()
	case start.Phase != replay.PhaseNotPredicted && !start.Starts:
		for _, f := range res.Doctor.Findings {
			if f.Check == "kubelet-start" {
				cr.Problems = append(cr.Problems, f)
			}
		}
		cr.Status, cr.Summary = CheckProblem, fmt.Sprintf("kubelet %s would not start: %s", start.Kubelet, start.Error)
	case refused != nil:
		// Known without the prediction: no config or machine makes that kubelet read the file.
		for _, f := range res.Doctor.Findings {
			if f.Check == "file-refused" && f.File == refused.File {
				cr.Problems = append(cr.Problems, f)
			}
		}
		cr.Status, cr.Summary = CheckProblem, fmt.Sprintf("kubelet %s would not start: %s", refused.Reader, refused.Error)
	case start.Phase == replay.PhaseNotPredicted:
		cr.Status, cr.Summary = CheckUnknown, "cannot judge: "+strings.Join(res.Doctor.Skipped, "; ")
	default:
		cr.Summary = fmt.Sprintf("kubelet %s would start with its config and files", start.Kubelet)
		// It starts, but the pods it re-admits after a reboot or a restart may be refused.
		for _, f := range res.Doctor.Findings {
			if (f.Check == CheckIfReboot || f.Check == CheckIfKubeletRestart) && f.Severity != doctor.SeverityInfo {
				cr.Problems = append(cr.Problems, f)
			}
		}
		if len(cr.Problems) > 0 {
			cr.Status = CheckProblem
			cr.Summary += ", but " + cr.Problems[0].Message
		}
	}
}

// stoppingRefusal is the first file (in the kubelet's file order) that the judged kubelet
// refuses and does not start without (decode's Refused), but the CPU and memory files: their
// refusal is the start prediction's own error.
func stoppingRefusal(res *NodeResult) *decode.Report {
	if res.Judged.Kubelet == nil || res.Judged.Basis == BasisFiles {
		return nil // no kubelet of this node's judged them
	}
	for _, row := range res.Rows {
		r := row.Report
		if r == nil || r.Refused == nil || r.Refused.KubeletStarts || r.Kind == decode.KindCPU || r.Kind == decode.KindMemory {
			continue
		}
		if v := row.Verdict(); v != decode.Valid && v != decode.NotRead {
			return r
		}
	}
	return nil
}

// judgeFindings: a problem for every error or warning doctor attributes to the check;
// unknown says why the check cannot judge ("" when it can), ok what it found sound.
func judgeFindings(cr *CheckResult, res *NodeResult, unknown, ok func() string) {
	if why := unknown(); why != "" {
		cr.Status, cr.Summary = CheckUnknown, "cannot judge: "+why
		return
	}
	for _, f := range res.Doctor.Findings {
		if rule, ok := ruleOf(f.Check); ok && rule == cr.Check && f.Severity != doctor.SeverityInfo {
			cr.Problems = append(cr.Problems, f)
		}
	}
	if len(cr.Problems) == 0 {
		cr.Summary = ok()
		return
	}
	p := cr.Problems[0]
	cr.Status, cr.Summary = CheckProblem, p.Check+" "+p.Entry
	if p.Entry == "" {
		cr.Summary = p.Check + " " + p.File
	}
	if n := len(cr.Problems) - 1; n > 0 {
		cr.Summary += fmt.Sprintf(" (+%d more)", n)
	}
}
