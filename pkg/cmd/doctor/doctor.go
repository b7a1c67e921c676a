// Package doctor is `kubectl nodestate doctor`: would the kubelet start with the checkpoints,
// config and machine it has (or is about to get)? The logic is pkg/doctor's; this is the glue.
package doctor

import (
	"context"
	"fmt"
	"path"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

var example = cmdutil.Examples(`
	# Would the kubelet of these nodes start again as they are now (machine from sysfs, config
	# from configz or the kubelet root dir's config.yaml, pods from the API)?
	kubectl nodestate doctor worker-1 worker-2
	kubectl nodestate doctor --all-nodes -l node-role.kubernetes.io/worker

	# Before rolling out a config to a pool: every node's state against the new config
	kubectl nodestate doctor --all-nodes -l pool=cpu-pinned --kubelet-config ./new-config.yaml

	# Would the kubelet start again with the files copied off a node (collect bundle)?
	kubectl nodestate doctor --from-dir ./worker-1

	# Before rolling out a config: would kubelet v1.34.10 start with it on this node's state?
	kubectl nodestate doctor --from-dir ./worker-1 --kubelet-config ./new-config.yaml --kubelet-version v1.34.10

	# After a resize or with a CPU offlined: the machine as it will be
	kubectl nodestate doctor --from-dir ./worker-1 --machine ./machine-after.json --kubelet-version v1.37.1 -o json`)

// Bundle files that default --machine and --kubelet-config (collect writes them). The
// bundle's node.json defaults the kubelet version: the library reads it, as for verify.
var (
	bundleMachine = nodestate.MachineFile
	bundleConfigs = []string{nodestate.ConfigYAMLFile, nodestate.ConfigzFile}
)

// Options is the doctor command's state.
type Options struct {
	cmdutil.ReadOptions
	genericiooptions.IOStreams
	MachineFile string
	ConfigFile  string

	machine *machine.Machine
	config  *doctor.KubeletConfig
	notes   []string
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReadOptions: cmdutil.NewReadOptions(flags), IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "doctor [NODE...] [--all-nodes] | --from-dir DIR [--machine FILE] [--kubelet-config FILE]",
		Short: "Say whether the kubelet will start with this state, config and machine, and how to fix it",
		Long: cmdutil.LongDesc(`
			Doctor replays what the kubelet's CPU and memory managers check when they start
			(NewManager then Start, as the given kubelet release does) against the node's
			checkpoints, the kubelet config and the machine, and prints the kubelet's exact error
			if it would refuse to start, with a fix it has verified: a config value with which it
			starts, or the file to delete after draining and what that loses. It also lists
			overlapping or stale assignments, memory drift, devices held twice, and files the
			target kubelet refuses.

			On live nodes, the debug pod reads the machine from sysfs in the same exec as the
			files; the kubelet config comes from configz through the API server when you may
			already GET nodes/proxy, else from config.yaml in the kubelet root dir; the version
			from the node's status, and the pods from the API (for stale entries).

			--machine, --kubelet-config and --kubelet-version describe the machine, config and
			kubelet about to be used; in a collect bundle, machine.json, kubelet-config.yaml
			(or .json) and node.json's kubelet version are the defaults. Checks whose input is
			missing are skipped and named.

			Exit status: 0 when nothing is an error, 1 when something is, 2 when a node could
			not be read, 3 on a usage error.`),
		Example:           example,
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	o.AddFlags(cmd)
	cmd.Flags().StringVar(&o.MachineFile, "machine", "", "The machine (machine.json: online CPUs, NUMA memory, hugepages); default: the bundle's machine.json")
	cmd.Flags().StringVar(&o.ConfigFile, "kubelet-config", "", "The KubeletConfiguration (YAML or JSON, or configz's answer); default: the bundle's kubelet-config.yaml")
	_ = cmd.MarkFlagFilename("machine", "json")
	_ = cmd.MarkFlagFilename("kubelet-config", "yaml", "yml", "json")
	return cmd
}

// Complete reads --machine and --kubelet-config, or the bundle's own.
func (o *Options) Complete(args []string) error {
	if err := o.ReadOptions.Complete(args); err != nil {
		return err
	}
	// Live nodes bring their own machine and config, unless the flags give the ones to be.
	o.ReadMachine, o.ReadKubeletConfig, o.ReadNodeFiles = o.MachineFile == "", o.ConfigFile == "", true
	bundle := map[string][]byte{}
	if o.Source.FromDir != "" && (o.MachineFile == "" || o.ConfigFile == "") {
		want := append([]string{bundleMachine}, bundleConfigs...)
		if snap, err := local.Read(o.Source.FromDir, want, local.DefaultLimits); err == nil {
			bundle = snap.Files
		}
	}
	raw, from, err := input(o.MachineFile, o.Source.FromDir, bundle, bundleMachine)
	if err != nil {
		return err
	}
	if raw != nil {
		if o.machine, err = machine.Parse(raw); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		o.notes = append(o.notes, "machine: "+from+": "+o.machine.Summary())
	}
	raw, from, err = input(o.ConfigFile, o.Source.FromDir, bundle, bundleConfigs...)
	if err != nil {
		return err
	}
	if raw != nil {
		if o.config, err = doctor.ParseKubeletConfig(raw); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		o.notes = append(o.notes, "kubelet config: "+from)
	}
	return nil
}

// input is the flag's file, else the first bundle file present.
func input(flag, dir string, bundle map[string][]byte, names ...string) ([]byte, string, error) {
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

// Validate checks the flags together.
func (o *Options) Validate() error {
	if err := o.ReadOptions.Validate(); err != nil {
		return err
	}
	if o.Source.Format == render.Wide {
		return fmt.Errorf("doctor prints no wide table: use -o json or yaml for every detail")
	}
	return nil
}

// Run reads each node, diagnoses it and prints.
func (o *Options) Run(ctx context.Context) error {
	for _, n := range o.notes {
		fmt.Fprintln(o.ErrOut, "using "+n)
	}
	var results []render.DoctorResult
	worst := cmdutil.ExitOK
	err := o.Read(ctx, o.ErrOut, func(n *nodestate.NodeResult) error {
		for _, w := range n.Warnings() {
			fmt.Fprintf(o.ErrOut, "warning: node %s: %s\n", n.Node, w)
		}
		if n.Err != nil {
			worst = max(worst, cmdutil.ReportNodeError(o.ErrOut, n.Err))
			results = append(results, render.DoctorResult{Node: n.Node, Error: n.Err.Error()})
			return nil
		}
		switch j := n.Judged; {
		case j.Basis == nodestate.BasisRecorded:
			fmt.Fprintf(o.ErrOut, "using kubelet %s: %s\n", j.Kubelet, j.Why)
		case j.Basis == nodestate.BasisFiles && j.Kubelet != nil:
			fmt.Fprintf(o.ErrOut, "using kubelet %s for the files only: %s\n", j.Kubelet, j.Why)
		}
		res, code := o.diagnose(n)
		worst = max(worst, code)
		for _, sk := range res.Skipped {
			fmt.Fprintf(o.ErrOut, "%s: skipped %s\n", n.Where, sk)
		}
		results = append(results, render.DoctorResult{Node: n.Node, Result: res})
		return nil
	})
	if err != nil && !cmdutil.Interrupted(err) {
		return err
	}
	if perr := render.Doctor(o.Out, o.RenderOptions(), results); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(worst)
}

// diagnose judges the node's files for the target kubelet and runs doctor on them.
func (o *Options) diagnose(n *nodestate.NodeResult) (doctor.Result, int) {
	s := n.Snapshot
	// The kubelet the library judged the files by: --kubelet-version, else the version collect
	// recorded, else the live node's. A release only guessed from the files' formats predicts
	// no start: the start depends on the version, which the files do not say.
	kubelet := n.Judged.Kubelet
	if n.Judged.Basis == nodestate.BasisFiles {
		kubelet = nil
	}
	judgedBy := kubelet
	config := o.config
	if config == nil && n.KubeletConfig != nil {
		config = o.nodeConfig(n)
	}
	// The config's feature gates are the kubelet's too (the command line wins): they change
	// how it reads some files.
	if kubelet != nil && config != nil && len(config.FeatureGates) > 0 {
		gates := map[string]bool{}
		for k, v := range config.FeatureGates {
			gates[k] = v
		}
		for k, v := range kubelet.Gates {
			gates[k] = v
		}
		k := *kubelet
		k.Gates = gates
		kubelet = &k
	}
	rows := n.Rows
	if kubelet != judgedBy {
		rows, _ = nodestate.Judge(s, o.kindOf, kubelet, o.Source.KubeletRootDir)
	}
	in := doctor.Input{Machine: o.machine, Config: config, Kubelet: kubelet, RootDir: o.Source.KubeletRootDir}
	o.liveInputs(n, &in)
	for _, r := range rows {
		if r.Report != nil {
			in.Files = append(in.Files, r.Report)
		}
	}
	if len(in.Files) == 0 {
		fmt.Fprintf(o.ErrOut, "%s: no checkpoint files found: the kubelet would start with fresh state\n", n.Where)
	}
	res := doctor.Diagnose(in)
	code := cmdutil.ExitOK
	if res.HasErrors() {
		code = cmdutil.ExitNotValid
	}
	return res, code
}

// nodeConfig parses the kubelet config read from a live node, saying where it came from.
func (o *Options) nodeConfig(n *nodestate.NodeResult) *doctor.KubeletConfig {
	from := "configz"
	if n.KubeletConfigFrom == nodestate.FromConfigYAML {
		from = path.Join(o.Source.KubeletRootDir, nodestate.KubeletConfigFile)
	}
	c, err := doctor.ParseKubeletConfig(n.KubeletConfig)
	if err != nil {
		fmt.Fprintf(o.ErrOut, "%s: kubelet config from %s: %v\n", n.Where, from, err)
		return nil
	}
	note := ""
	if n.KubeletConfigNote != "" {
		note = " (" + n.KubeletConfigNote + ")"
	}
	fmt.Fprintf(o.ErrOut, "%s: using kubelet config from %s%s\n", n.Where, from, note)
	return c
}

// liveInputs fills in what a live node brings: its machine (unless --machine gives one), and
// its pods, for the stale-entry checks. The plugin's own debug pods count as live: the files
// still list the one that just read them, and it is no finding.
func (o *Options) liveInputs(n *nodestate.NodeResult, in *doctor.Input) {
	in.Node = n.NodeFacts()
	if n.Node == "" {
		// A bundle of the collect script has the raw sysfs dump, not machine.json.
		if in.Machine == nil && n.Machine != nil {
			in.Machine = n.Machine
			fmt.Fprintf(o.ErrOut, "using machine: %s: %s\n", nodestate.SysfsFile, n.Machine.Summary())
		}
		return
	}
	if in.Machine == nil {
		switch {
		case n.Machine != nil:
			in.Machine = n.Machine
		case n.MachineErr != nil:
			fmt.Fprintf(o.ErrOut, "%s: machine not read: %v\n", n.Where, n.MachineErr)
		}
	}
	if in.Config == nil && n.KubeletConfig == nil && o.ReadKubeletConfig {
		fmt.Fprintf(o.ErrOut, "%s: kubelet config not read: %s\n", n.Where, n.KubeletConfigNote)
	}
	ix := n.Snapshot.Pods
	if ix == nil {
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

// kindOf is a file's kind: --kind for --from-file, else its path's.
func (o *Options) kindOf(p string) decode.Kind {
	if o.Source.FromFile != "" && o.Source.Kind != "" {
		return decode.Kind(o.Source.Kind)
	}
	k, _ := decode.ParseKind(p)
	return k
}
