// Package doctor is `kubectl nodestate doctor`: would the kubelet start with the checkpoints,
// config and machine it has (or is about to get)? The logic is pkg/doctor's; this is the glue.
package doctor

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
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

// Options is the doctor command's state.
type Options struct {
	cmdutil.ReplayOptions
}

// NewCmdDoctor returns the doctor command.
func NewCmdDoctor(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReplayOptions: cmdutil.NewReplayOptions(flags, streams)}
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
	o.ReplayOptions.AddFlags(cmd)
	return cmd
}

// Complete reads --machine and --kubelet-config, or the bundle's own.
func (o *Options) Complete(args []string) error {
	if err := o.CompleteInputs(args); err != nil {
		return err
	}
	o.Engines.Doctor = o.Inputs
	return nil
}

// Validate checks the flags together.
func (o *Options) Validate() error {
	return o.ReadOptions.Validate()
}

// Run reads each node, diagnoses it and prints. Live nodes print as each is diagnosed (in the
// order they complete), so a fleet's answers are not held until the end.
func (o *Options) Run(ctx context.Context) error {
	// One block per finding, wrapped to the terminal; -o wide: one row per finding.
	ro := o.RenderOptions()
	results := cmdutil.NewResults(&o.Live, o.Out, ro, render.DoctorListKind, render.DoctorFindings, !o.Source.Offline())
	run := o.StartReplay()
	for n, read := range run.Nodes(ctx) {
		if !read {
			results.Add(render.DoctorResult{Node: n.Node, Error: n.Err.Error()})
			continue
		}
		switch j := n.Judged; {
		case j.Basis == nodestate.BasisRecorded:
			fmt.Fprintf(o.ErrOut, "using kubelet %s: %s\n", j.Kubelet, j.Why)
		case j.Basis == nodestate.BasisFiles && j.Kubelet != nil:
			fmt.Fprintf(o.ErrOut, "using kubelet %s for the files only: %s\n", j.Kubelet, j.Why)
		}
		for _, note := range n.Doctor.Notes {
			run.Notes.Addf(n.Node, "%s: %s", n.Where, note)
		}
		res := n.Doctor.Result
		if res.HasErrors() {
			run.Worst = max(run.Worst, cmdutil.ExitNotValid)
		}
		for _, sk := range res.Skipped {
			run.Notes.Addf(n.Node, "%s: skipped %s", n.Where, sk)
		}
		results.Add(render.DoctorResult{Node: n.Node, DoctorPrediction: res, RestartOutlook: n.Doctor.Restart})
	}
	err := run.Done()
	if err != nil && !cmdutil.Interrupted(err) {
		return err
	}
	if perr := results.Close(func(held []render.DoctorResult) error {
		return render.DoctorFindings(o.Out, ro, held)
	}); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(run.Worst)
}
