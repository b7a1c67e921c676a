package nodestate

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// DoctorConfig asks Run to predict, in each node's worker, whether the node's kubelet starts
// with its files (package doctor); the answer is NodeResult.Doctor. Machine and KubeletConfig
// are the ones about to be used; nil takes each node's own: a live node's sysfs and configz (or
// config.yaml), read in the same exec as its files. The target kubelet is Config.Kubelet, else
// the node's recorded or own version.
type DoctorConfig struct {
	Machine       *machine.Machine
	KubeletConfig *replay.KubeletConfig
}

// DoctorResult is one node's prediction, and in order what it took from the node and what it
// lacked ("using kubelet config from configz", "machine not read: ...").
type DoctorResult struct {
	doctor.Result
	Notes []string
	// Restart is what the node's pods become if the node reboots and if the kubelet restarts
	// (live nodes whose kubelet starts; each is a finding too, CheckIfReboot and
	// CheckIfKubeletRestart).
	Restart []RestartOutlook
}

// Bundle files that default the doctor's machine and kubelet config (collect writes them).
var (
	bundleMachine = MachineFile
	bundleConfigs = []string{ConfigYAMLFile, ConfigzFile}
)

// LoadDoctorConfig reads the machine and kubelet config files given (machineFile, configFile),
// else a collect bundle's own in fromDir. Notes say which were used ("machine: FILE: 8 CPUs ...").
func LoadDoctorConfig(machineFile, configFile, fromDir string) (*DoctorConfig, []string, error) {
	dc := &DoctorConfig{}
	var notes []string
	bundle := map[string][]byte{}
	if fromDir != "" && (machineFile == "" || configFile == "") {
		want := append([]string{bundleMachine}, bundleConfigs...)
		if snap, err := local.Read(fromDir, want, local.DefaultLimits); err == nil {
			bundle = snap.Files
		}
	}
	raw, from, err := inputFile(machineFile, fromDir, bundle, bundleMachine)
	if err != nil {
		return nil, nil, err
	}
	if raw != nil {
		if dc.Machine, err = machine.Parse(raw); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", from, err)
		}
		notes = append(notes, "machine: "+from+": "+dc.Machine.Summary())
	}
	raw, from, err = inputFile(configFile, fromDir, bundle, bundleConfigs...)
	if err != nil {
		return nil, nil, err
	}
	if raw != nil {
		if dc.KubeletConfig, err = replay.ParseKubeletConfig(raw); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", from, err)
		}
		notes = append(notes, "kubelet config: "+from)
	}
	return dc, notes, nil
}

// inputFile is the flag's file, else the first bundle file present.
func inputFile(flag, dir string, bundle map[string][]byte, names ...string) ([]byte, string, error) {
	if flag != "" {
		b, err := local.ReadFile(flag, local.DefaultLimits)
		return b, flag, err
	}
	for _, n := range names {
		if b, ok := bundle[n]; ok {
			return b, filepath.Join(dir, n), nil
		}
	}
	return nil, "", nil
}

// diagnose judges the node's files for the target kubelet and runs doctor on them.
func (r *Runner) diagnose(n *NodeResult) *DoctorResult {
	out := &DoctorResult{}
	note := func(format string, a ...any) { out.Notes = append(out.Notes, fmt.Sprintf(format, a...)) }
	mi := r.managerInputs(n, r.cfg.Doctor.Machine, r.cfg.Doctor.KubeletConfig, note)
	in := doctor.Input{Machine: mi.machine, Config: mi.config, Kubelet: mi.kubelet, RootDir: r.cfg.KubeletRootDir, Cgroups: n.Cgroups}
	if n.CgroupsErr != nil {
		note("cgroups not read: %v", n.CgroupsErr)
	}
	in.Node = n.nodeFacts()
	r.livePods(n, &in)
	for _, row := range mi.rows {
		if row.Report != nil {
			in.Files = append(in.Files, row.Report)
		}
	}
	out.Result = doctor.Diagnose(in)
	if out.Result.KubeletStart.Starts {
		skip := func(format string, a ...any) {
			out.Result.Skipped = append(out.Result.Skipped, fmt.Sprintf(format, a...))
		}
		out.Restart = r.restartOutlook(n, mi, skip, note)
		for _, o := range out.Restart {
			out.Result.Findings = append(out.Result.Findings, o.Finding())
		}
	}
	return out
}

// managerInputs is what the resource managers' replay reads of a node, for doctor and admit:
// the target kubelet, its config, the machine and the files judged for that kubelet.
type managerInputs struct {
	kubelet *decode.Kubelet
	config  *replay.KubeletConfig
	machine *machine.Machine
	rows    []FileRow
}

// engineConfig is the kubelet config the engines replay with, and what was said of it.
type engineConfig struct {
	config *replay.KubeletConfig
	notes  []string
}

// engineConfig is the config given to the engine (doctor's, else admit's), else the node's own:
// judgeAndRun decides it before decoding, since its feature gates change how the kubelet reads
// some files.
func (r *Runner) engineConfig(n *NodeResult) engineConfig {
	var ec engineConfig
	switch {
	case r.cfg.Doctor != nil && r.cfg.Doctor.KubeletConfig != nil:
		ec.config = r.cfg.Doctor.KubeletConfig
	case r.cfg.Doctor == nil && r.cfg.Admit != nil && r.cfg.Admit.KubeletConfig != nil:
		ec.config = r.cfg.Admit.KubeletConfig
	case n.KubeletConfig != nil:
		ec.config = r.nodeConfig(n, func(format string, a ...any) { ec.notes = append(ec.notes, fmt.Sprintf(format, a...)) })
	}
	return ec
}

// managerInputs takes the machine and config given (nil: the node's own), and notes what it
// took from the node and what it lacked. The files were judged for the target kubelet, with
// the config's gates, before they were decoded (judgeAndRun).
func (r *Runner) managerInputs(n *NodeResult, m *machine.Machine, config *replay.KubeletConfig, note func(string, ...any)) managerInputs {
	// The kubelet the files were judged by: --kubelet-version, else the version collect
	// recorded, else the live node's. A release only guessed from the files' formats predicts
	// nothing: the managers depend on the version, which the files do not say.
	kubelet := n.Judged.Kubelet
	if n.Judged.Basis == BasisFiles {
		kubelet = nil
	}
	if config == nil {
		config = n.engine.config
		for _, s := range n.engine.notes {
			note("%s", s)
		}
	}
	mi := managerInputs{kubelet: kubelet, config: config, machine: m, rows: n.Rows}
	if mi.machine == nil {
		switch {
		case n.Machine != nil && n.Node == "":
			// The collect script's bundle has the raw sysfs dump, not machine.json.
			mi.machine = n.Machine
			note("using machine: %s: %s", SysfsFile, n.Machine.Summary())
		case n.Machine != nil:
			mi.machine = n.Machine
		case n.Node != "" && n.MachineErr != nil:
			note("machine not read: %v", n.MachineErr)
		}
	}
	if n.Node != "" && mi.config == nil && n.KubeletConfig == nil && r.cfg.KubeletConfig {
		note("kubelet config not read: %s", n.KubeletConfigNote)
	}
	files := 0
	for _, row := range mi.rows {
		if row.Report != nil {
			files++
		}
	}
	if files == 0 {
		note("no checkpoint files found: the kubelet would start with fresh state")
	}
	return mi
}

// nodeConfig parses the kubelet config read from a live node, saying where it came from.
func (r *Runner) nodeConfig(n *NodeResult, note func(string, ...any)) *replay.KubeletConfig {
	from := n.KubeletConfigFrom // a published node's: the file its publisher read
	switch n.KubeletConfigFrom {
	case FromConfigYAML:
		from = path.Join(r.cfg.KubeletRootDir, KubeletConfigFile)
	case FromConfigz, "":
		from = "configz"
	}
	c, err := r.memo.config(n.KubeletConfig)
	if err != nil {
		note("kubelet config from %s: %v", from, err)
		return nil
	}
	why := ""
	if n.KubeletConfigNote != "" {
		why = " (" + n.KubeletConfigNote + ")"
	}
	note("using kubelet config from %s%s", from, why)
	return c
}

// livePods fills in a live node's pods, for the stale-entry checks. The plugin's own debug
// pods count as live: the files still list the one that just read them, and it is no finding.
// Pods that could not be listed are not known: no entry is stale for lack of them.
func (r *Runner) livePods(n *NodeResult, in *doctor.Input) {
	ix := n.Snapshot.Pods
	if n.Node == "" || ix == nil || ix.Unlisted {
		return
	}
	in.LivePods = map[string]bool{}
	for uid := range ix.Pods {
		in.LivePods[uid] = true
	}
	for uid := range ix.Debug {
		in.LivePods[uid] = true
	}
	in.LiveContainers = ix.ContainerNames
}

// kindOf is a file's kind: Config.Kind (or the file's name) for FromFile, else its path's.
func (r *Runner) kindOf(p string) decode.Kind {
	if r.cfg.FromFile != "" {
		k, _ := r.fileKind()
		return k
	}
	k, _ := decode.ParseKind(p)
	return k
}
