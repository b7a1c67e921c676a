// Package conditions is `kubectl nodestate conditions`: the node-local checks' answers for a
// fleet, read back from the node conditions the Node Problem Detector's monitor (deploy/npd)
// sets: one LIST of the nodes instead of a debug pod per node; a debug pod only for the nodes
// that run no monitor, or for every node with --fresh. The logic is nodestate.CheckFleet's.
package conditions

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

var example = cmdutil.Examples(`
	# Every node's checks, from the conditions the monitor set (one LIST of nodes)
	kubectl nodestate conditions --all-nodes

	# A pool, reading every node now through debug pods instead
	kubectl nodestate conditions --all-nodes -l pool=gpu --fresh`)

// Options is the conditions command's state.
type Options struct {
	cmdutil.ReadOptions
	genericiooptions.IOStreams
	cmdutil.FleetFlags
	// now is the clock, for tests.
	now func() time.Time
}

// NewCmdConditions returns the conditions command.
func NewCmdConditions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReadOptions: cmdutil.NewReadOptions(flags), IOStreams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "conditions [NODE...] [--all-nodes [-l SEL]] [--fresh]",
		Short: "Show each node's node-check answers, from the conditions the Node Problem Detector set",
		Long: cmdutil.LongDesc(`
			Conditions shows, for every node, the answers of the node-local checks (checkpoints,
			restart, cgroups, devices: see node-check) as the Node Problem Detector's monitor of
			deploy/npd set them as node conditions, with how old each answer is (AGE: since the
			detector last wrote the condition; it writes one on a change and every heartbeat, 5
			minutes by default). It reads them with one LIST of the nodes. A node that lacks one
			of the monitor's conditions, or whose conditions are older than --max-condition-age
			(the monitor is gone), is read now through a debug pod and judged by the same rules
			(FROM debug-pod); --fresh reads every node so. verify --all-nodes reads the
			checkpoints answer the same way, and each file where there is a problem.

			Exit status: 0 when every answer is OK, 1 when one is a problem, 2 when one is
			unknown or a node could not be read, 3 on a usage error.`),
		Example:           example,
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	o.ReadOptions.AddFlags(cmd)
	o.FleetFlags.AddFlags(cmd)
	return cmd
}

// Validate checks that live nodes are named.
func (o *Options) Validate() error {
	if err := o.ReadOptions.Validate(); err != nil {
		return err
	}
	if err := o.FleetFlags.Validate(); err != nil {
		return err
	}
	if o.Source.Offline() {
		return fmt.Errorf("conditions are the live nodes': name nodes or give --all-nodes, not --from-dir or --from-file")
	}
	return nil
}

// Run reads the fleet's answers and prints one row per node and check.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := o.Config()
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()}
	}
	now := o.now()
	fleet, err := nodestate.CheckFleet(ctx, cfg, o.FleetFlags.Options(now))
	if err != nil && fleet == nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()}
	}
	if line := fleet.Split.Summary(); line != "" {
		fmt.Fprintln(o.ErrOut, line)
	}
	worst := cmdutil.ExitOK
	w := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
	if !o.Source.NoHeaders {
		fmt.Fprintln(w, "NODE\tCHECK\tSTATUS\tAGE\tFROM\tMESSAGE")
	}
	for _, n := range fleet.Nodes {
		from := "conditions"
		if !n.FromConditions {
			from = "debug-pod"
		}
		if n.Err != nil {
			worst = max(worst, cmdutil.ExitUnreadable)
			fmt.Fprintf(w, "%s\t-\tUnreadable\t-\t%s\t%s\n", n.Node, from, n.Err)
			continue
		}
		for _, r := range n.Results {
			status := "OK"
			switch r.Status {
			case nodestate.CheckProblem:
				status, worst = "Problem", max(worst, cmdutil.ExitNotValid)
			case nodestate.CheckUnknown:
				status, worst = "Unknown", max(worst, cmdutil.ExitUnreadable)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, r.Check, status, nodestate.ConditionAge(r, now), from, r.Summary)
		}
	}
	if ferr := w.Flush(); ferr != nil {
		return ferr
	}
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()}
	}
	return cmdutil.Exit(worst)
}
