// Package verify is `kubectl nodestate verify`: judge every checkpoint file of nodes (or of
// copied files) and exit non-zero when one is not valid.
package verify

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

var example = cmdutil.Examples(`
	# Verify every checkpoint of a node
	kubectl nodestate verify worker-1

	# Every node: from the conditions of the nodes that run the monitor (deploy/npd), a debug
	# pod for the others
	kubectl nodestate verify --all-nodes

	# Every node labelled as a GPU node, each read now through a debug pod, 50 at a time
	kubectl nodestate verify --all-nodes -l node-role.kubernetes.io/gpu --fresh --concurrency 50

	# Verify files copied off a node whose kubelet no longer starts
	kubectl nodestate verify --from-dir ./var-lib-kubelet

	# Would a kubelet v1.36.4 accept this file after an upgrade?
	kubectl nodestate verify --from-file ./cpu_manager_state --kubelet-version v1.36.4 -o json`)

// Options is the verify command's state.
type Options struct {
	cmdutil.ReadOptions
	genericiooptions.IOStreams
	cmdutil.FleetFlags
	// now is the clock, for tests.
	now func() time.Time
}

// NewCmdVerify returns the verify command.
func NewCmdVerify(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReadOptions: cmdutil.NewReadOptions(flags), IOStreams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "verify [NODE...] [--all-nodes] | --from-dir DIR | --from-file FILE",
		Short: "Verify the checksum and format of every checkpoint file",
		Long: cmdutil.LongDesc(`
			Verify recognises each checkpoint file's format and version, recomputes every checksum,
			and says in a sentence what one kubelet makes of each file on restart. -o wide shows
			the facts behind the sentence instead (the kubelet, the checksum rule id that accepted
			the file, stored/computed values that differ); -o json has everything, the kubelet's
			error text word for word included.

			A node runs one kubelet, so all its files are judged by one: a live node's own version;
			offline, --kubelet-version, else the version collect recorded, else the newest release
			that could have written all the files together; offline, a line on stderr says which
			and why. A file no kubelet writes beside the others (a 1.19 device file beside 1.37
			CPU files: it was never rewritten) is a finding: its row says so, and offline a
			"Finding:" line on stderr too.

			--all-nodes answers from the KubeletCheckpointsCorrupt condition of the nodes that run
			the Node Problem Detector's monitor (deploy/npd): one LIST of the nodes, one row per
			node (FILE -), with AGE since the monitor last wrote the condition (its heartbeat,
			at least every 5 minutes) and FROM conditions. A debug pod reads, file by file, only
			the nodes without the condition, those whose condition is older than
			--max-condition-age (the monitor is gone), and those whose monitor reports a problem
			or cannot judge (read now, so each file is named); --fresh reads every node so.
			Named nodes are always read now. When a node carries the monitor's conditions, a line
			on stderr says how many answers came from where.`) + "\n\n" + cmdutil.ExitStatusHelp,
		Example:           example,
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	o.ReadOptions.AddFlags(cmd)
	o.FleetFlags.AddFlags(cmd)
	return cmd
}

// Validate checks the flags together.
func (o *Options) Validate() error {
	if err := o.ReadOptions.Validate(); err != nil {
		return err
	}
	if (o.Fresh || o.MaxConditionAge != nodestate.DefaultMaxConditionAge) && !o.fleet() {
		return fmt.Errorf("--fresh and --max-condition-age choose where --all-nodes answers come from; named nodes and copies are always read as they are")
	}
	return o.FleetFlags.Validate()
}

// fleet: --all-nodes of live nodes, answered from the monitor's conditions where it runs.
func (o *Options) fleet() bool { return o.Live.AllNodes && !o.Source.Offline() }

// Run reads, judges and prints. Live nodes print as they complete: table rows in blocks, json
// and yaml items into a list written as it grows, so nothing is held until the end.
func (o *Options) Run(ctx context.Context) error {
	worst := cmdutil.ExitOK
	ro := o.RenderOptions()
	ro.Sources = o.fleet()
	results := cmdutil.NewResults(&o.Live, o.Out, ro, render.VerifyListKind, render.Verify, !o.Source.Offline())
	notes := cmdutil.NewNotes(o.ErrOut)
	var err error
	for n, rerr := range o.results(ctx) {
		if err = rerr; err != nil {
			break
		}
		for _, w := range n.Warnings() {
			if n.Node == "" { // offline
				fmt.Fprintf(o.ErrOut, "warning: %s\n", w)
				continue
			}
			notes.Addf(n.Node, "warning: node %s: %s", n.Node, w)
		}
		// Offline, the one kubelet judging the files and the files apart from the others head
		// the output (on stderr: -o json stays parseable). Live, each node is judged by its own
		// kubelet (-o wide shows it) and a file apart says so in its row, so that a fan-out's
		// stderr stays one line per node not read.
		if o.Source.Offline() && n.Err == nil {
			if line := n.Judged.Sentence(); line != "" {
				fmt.Fprintln(o.ErrOut, line)
			}
			for _, a := range n.Judged.Apart {
				fmt.Fprintln(o.ErrOut, "Finding: "+a.Sentence())
			}
		}
		if n.Err != nil {
			worst = max(worst, cmdutil.ReportNodeError(o.ErrOut, n))
		} else if len(n.Rows) == 0 {
			notes.Addf(n.Node, "%s: no checkpoint files found (is it the kubelet root dir? see --kubelet-root-dir)", n.Where)
			worst = max(worst, cmdutil.ExitUnreadable)
		}
		for _, r := range n.Rows {
			if v := r.Verdict(); v != nodestate.Valid && v != nodestate.NotRead {
				worst = max(worst, cmdutil.ExitNotValid)
			}
		}
		results.Add(n.Rows...)
	}
	notes.Flush()
	// Interrupted: still print what was read, then say so.
	if err != nil && !cmdutil.Interrupted(err) {
		return err
	}
	if perr := results.Close(func(held []nodestate.FileRow) error {
		return render.Verify(o.Out, ro, held)
	}); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(worst)
}

// results are the nodes' results: read through debug pods, or, for --all-nodes, first one
// row for each node its monitor answers for (ListFleet), then the others read, each row
// saying where it came from and how old it is.
func (o *Options) results(ctx context.Context) iter.Seq2[*nodestate.NodeResult, error] {
	if !o.fleet() {
		return o.Read(ctx, o.ErrOut)
	}
	return func(yield func(*nodestate.NodeResult, error) bool) {
		cfg, err := o.Config()
		if err != nil {
			yield(nil, &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()})
			return
		}
		fo := o.FleetFlags.Options(o.now())
		fo.Checks, fo.ReadProblems = []nodestate.NodeCheck{nodestate.CheckCheckpoints}, true
		split, err := nodestate.ListFleet(ctx, cfg, fo)
		if err != nil {
			yield(nil, &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()})
			return
		}
		// No node runs the monitor: the fan-out as ever, its stderr one line per node not read.
		if line := split.Summary(); line != "" && split.AnyMonitor() {
			fmt.Fprintln(o.ErrOut, line)
		}
		o.Live.Resolved = nil
		for _, m := range split.Monitored {
			o.Live.Resolved = append(o.Live.Resolved, m.Node)
		}
		for _, r := range split.Read {
			o.Live.Resolved = append(o.Live.Resolved, r.Info.Name)
			if r.Why == nodestate.ReadProblem {
				for _, a := range r.Monitor {
					fmt.Fprintf(o.ErrOut, "node %s: the monitor said %s ago: %s; reading it now\n", r.Info.Name, nodestate.ConditionAge(a, fo.Now), a.Summary)
				}
			}
		}
		for _, m := range split.Monitored {
			if !yield(&nodestate.NodeResult{Node: m.Node, Where: "node " + m.Node, Rows: m.MonitorRows()}, nil) {
				return
			}
		}
		if len(split.Read) == 0 {
			return
		}
		cfg.AllNodes, cfg.Selector, cfg.Listed = false, "", split.Infos()
		for n, err := range o.ReadConfig(ctx, o.ErrOut, cfg) {
			if n != nil {
				src := nodestate.ReadNow(o.now())
				for i := range n.Rows {
					n.Rows[i].Source = src
				}
			}
			if !yield(n, err) {
				return
			}
		}
	}
}
