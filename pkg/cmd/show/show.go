// Package show holds the commands that show what a checkpoint holds: cpus, memory, devices,
// claims and pods. They share one Options; each command is a view: which files it reads and how
// it prints their models.
package show

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// A view is one show command: the files it shows and how it prints them.
type view struct {
	Use, Short, Long, Example string
	Kinds                     []decode.Kind
	// Print prints the decoded models (one per node and file).
	Print func(w io.Writer, o render.Options, items []item) error
}

// item is one decoded file of one node.
type item struct {
	render.Source
	Kind  decode.Kind
	Model any
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
	cmd := &cobra.Command{
		Use:               v.Use + " NODE... | --all-nodes | --from-dir DIR | --from-file FILE",
		Short:             v.Short,
		Long:              cmdutil.LongDesc(v.Long),
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
	if o.Source.Kind != "" && !o.wants(decode.Kind(o.Source.Kind)) {
		return fmt.Errorf("%s shows %v, not %s", o.view.Use, o.view.Kinds, o.Source.Kind)
	}
	return nil
}

func (o *Options) wants(k decode.Kind) bool {
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
	var items []item
	worst := cmdutil.ExitOK
	ro := o.RenderOptions()
	if !o.Source.Offline() {
		ro.List = render.NewListWriter[any](o.Out, ro, "")
	}
	err := o.Each(ctx, o.ErrOut, func(s *cmdutil.Snapshot) error {
		if ro.List != nil {
			defer func() { items = items[:0] }()
		}
		where := cmdutil.Where(s, &o.Source)
		for _, w := range s.Warnings {
			fmt.Fprintf(o.ErrOut, "warning: %s: %s\n", where, w)
		}
		if s.Err != nil {
			worst = max(worst, cmdutil.ReportNodeError(o.ErrOut, s.Err))
			return nil
		}
		results, err := o.Source.Decode(s)
		if err != nil {
			return err
		}
		found := false
		for _, r := range results {
			if !o.wants(r.Kind) {
				continue
			}
			found = true
			switch r.Verdict {
			case decode.Valid:
			case decode.NotRead:
				fmt.Fprintf(o.ErrOut, "note: %s: kubelet %s does not read %s; showing what it holds\n", where, r.Reader, r.File)
			default:
				worst = max(worst, cmdutil.ExitNotValid)
				why := r.Cause
				if why == "" {
					why = r.Error
				}
				fmt.Fprintf(o.ErrOut, "warning: %s: %s is %s (%s)%s\n", where, r.File, r.Verdict, why, shownAnyway(r.Decoded))
			}
			if r.Decoded != nil {
				items = append(items, item{Source: render.Source{Node: s.Node, Names: s.Names}, Kind: r.Kind, Model: r.Decoded})
			}
		}
		if !found {
			fmt.Fprintf(o.ErrOut, "%s: no %v file\n", where, o.view.Kinds)
		}
		if ro.List != nil {
			return o.view.Print(o.Out, ro, items)
		}
		return nil
	})
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
		if perr := o.view.Print(o.Out, ro, items); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	return cmdutil.Exit(worst)
}

func shownAnyway(decoded any) string {
	if decoded == nil {
		return "; nothing to show"
	}
	return "; showing what it holds, but the kubelet would not accept it"
}

// modelsOf picks the items' models of type T and pairs them with their sources.
func modelsOf[T any](items []item) []struct {
	render.Source
	State T
} {
	var out []struct {
		render.Source
		State T
	}
	for _, it := range items {
		if m, ok := it.Model.(T); ok {
			out = append(out, struct {
				render.Source
				State T
			}{it.Source, m})
		}
	}
	return out
}
