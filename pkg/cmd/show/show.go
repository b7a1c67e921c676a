// Package show holds the commands that show what a checkpoint holds: cpus, memory, devices,
// claims and pods. They share one Options; each command is a view: which files it reads and how
// it prints their models.
package show

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

// A view is one show command: the files it shows (render.Show prints them by the first kind).
type view struct {
	Use, Short, Long, Example string
	Kinds                     []nodestate.Kind
	// WideCgroups: -o wide (and json, yaml) also show what the node's cgroups hold (read live in
	// the same exec).
	WideCgroups bool
}

// Options is a show command's state.
type Options struct {
	cmdutil.ReadOptions
	view *view

	genericiooptions.IOStreams
}

// NewCmds returns the show commands.
func NewCmds(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) []*cobra.Command {
	var cmds []*cobra.Command
	for _, v := range views {
		cmds = append(cmds, newCmd(v, flags, streams))
	}
	return cmds
}

func newCmd(v *view, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReadOptions: cmdutil.NewReadOptions(flags), view: v, IOStreams: streams}
	o.ReadPodNames = true // its tables name the pods and containers
	cmd := &cobra.Command{
		Use:               v.Use + " NODE... | --all-nodes | --from-dir DIR | --from-file FILE",
		Short:             v.Short,
		Long:              cmdutil.LongDesc(v.Long) + "\n\n" + cmdutil.ExitStatusHelp,
		Example:           cmdutil.Examples(v.Example),
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	o.AddFlags(cmd)
	return cmd
}

// Validate checks the flags, and that --kind names a file this command shows.
func (o *Options) Validate() error {
	if err := o.ReadOptions.Validate(); err != nil {
		return err
	}
	if o.Source.Kind != "" && !o.wants(nodestate.Kind(o.Source.Kind)) {
		return fmt.Errorf("%s shows %v, not %s", o.view.Use, o.view.Kinds, o.Source.Kind)
	}
	return nil
}

func (o *Options) wants(k nodestate.Kind) bool {
	for _, want := range o.view.Kinds {
		if want == k {
			return true
		}
	}
	return false
}

// Run reads the files, warns about the ones that are not valid, and prints the rest. With -o
// json|yaml, live nodes' items are written as each node completes, into one list.
func (o *Options) Run(ctx context.Context) error {
	var nodes []*nodestate.NodeResult
	worst := cmdutil.ExitOK
	ro := o.RenderOptions()
	// -o wide shows the cgroups' values, and json/yaml carry every field.
	o.ReadCgroups = o.view.WideCgroups && ro.Format != render.Table
	if !o.Source.Offline() {
		ro.List = render.NewListWriter[any](o.Out, ro, "")
	}
	var err error
	// A fleet's warnings are said once across the nodes that share them (a release day's
	// kubelet build on every node upgraded), after the nodes.
	notes := cmdutil.NewNotes(o.ErrOut)
	defer notes.Flush()
	for n, rerr := range o.Read(ctx, o.ErrOut) {
		if err = rerr; err != nil {
			break
		}
		for _, w := range n.Warnings() {
			notes.Addf(n.Node, "warning: %s: %s", n.Where, w)
		}
		if n.Err != nil {
			worst = max(worst, cmdutil.ReportNodeError(o.ErrOut, n))
			continue
		}
		found := false
		for _, r := range n.Rows {
			if !o.wants(r.Kind()) {
				continue
			}
			found = true
			switch r.Verdict() {
			case nodestate.Valid:
			case nodestate.NotRead:
				fmt.Fprintf(o.ErrOut, "note: %s: kubelet %s does not read %s; showing what it holds\n", n.Where, r.Kubelet(), r.File())
			default:
				worst = max(worst, cmdutil.ExitNotValid)
				fmt.Fprintf(o.ErrOut, "warning: %s: %s is %s (%s)%s\n", n.Where, r.File(), r.Verdict(), r.Why(), shownAnyway(r.Model()))
			}
		}
		if !found {
			fmt.Fprintf(o.ErrOut, "%s: no %v file\n", n.Where, o.view.Kinds)
		}
		if ro.List != nil {
			// Streamed: the node is written and dropped.
			if err = render.Show(o.Out, ro, o.view.Kinds, []*nodestate.NodeResult{n}); err != nil {
				break
			}
			continue
		}
		nodes = append(nodes, n)
	}
	switch {
	case err != nil && (ro.List == nil || !cmdutil.Interrupted(err)):
		return err
	case ro.List != nil && !ro.List.Empty():
		if cerr := ro.List.Close(); cerr != nil {
			return cerr
		}
	default:
		// Nothing streamed (or a table): print whole, which also names an empty list's kind.
		ro.List = nil
		if perr := render.Show(o.Out, ro, o.view.Kinds, nodes); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(worst)
}

func shownAnyway(decoded nodestate.Model) string {
	if decoded.IsZero() {
		return "; nothing to show"
	}
	return "; showing what it holds, but the kubelet would not accept it"
}
