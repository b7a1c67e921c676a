package cmdutil

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// ReplayOptions are what the commands that replay the kubelet (doctor, admit) share: the read,
// the machine and kubelet config about to be used, and the streams.
type ReplayOptions struct {
	ReadOptions
	MachineConfigOptions
	genericiooptions.IOStreams

	// Inputs are the machine and config CompleteInputs loaded (nil parts: each node's own).
	Inputs *nodestate.DoctorConfig
	// inputNotes say which files the inputs came from.
	inputNotes []string
}

// NewReplayOptions returns ReplayOptions reading live nodes through flags.
func NewReplayOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) ReplayOptions {
	return ReplayOptions{ReadOptions: NewReadOptions(flags), IOStreams: streams}
}

// AddFlags registers the read's flags, then --machine and --kubelet-config.
func (o *ReplayOptions) AddFlags(cmd *cobra.Command) {
	o.ReadOptions.AddFlags(cmd)
	o.MachineConfigOptions.AddFlags(cmd)
}

// CompleteInputs takes the nodes and the flags, and loads --machine and --kubelet-config, or a
// collect bundle's own.
func (o *ReplayOptions) CompleteInputs(nodes []string) error {
	if err := o.ReadOptions.Complete(nodes); err != nil {
		return err
	}
	var err error
	o.Inputs, o.inputNotes, err = nodestate.LoadDoctorConfig(o.MachineFile, o.ConfigFile, o.Source.FromDir)
	return err
}

// A Replay is one run of a replaying command: the nodes as they are read, what was said of
// them, and the exit status that calls for.
type Replay struct {
	o *ReplayOptions
	// Notes are said once across nodes (-v=1: each), when Done flushes them.
	Notes *Notes
	// Worst is the exit status so far.
	Worst int
	err   error
}

// StartReplay says which inputs are used and starts a run.
func (o *ReplayOptions) StartReplay() *Replay {
	for _, n := range o.inputNotes {
		fmt.Fprintln(o.ErrOut, "using "+n)
	}
	return &Replay{o: o, Notes: NewNotes(o.ErrOut), Worst: ExitOK}
}

// Nodes reads the nodes and returns each with whether it was read: a node's warnings and, for
// one not read, its error are said first (NoteNode) and counted in Worst. A read that stops
// early ends the sequence; Done returns why.
func (r *Replay) Nodes(ctx context.Context) iter.Seq2[*nodestate.NodeResult, bool] {
	return func(yield func(*nodestate.NodeResult, bool) bool) {
		for n, err := range r.o.Read(ctx, r.o.ErrOut) {
			if err != nil {
				r.err = err
				return
			}
			exit, read := NoteNode(r.Notes, n)
			r.Worst = max(r.Worst, exit)
			if !yield(n, read) {
				return
			}
		}
	}
}

// Done flushes the notes and returns what stopped the read: nil, Ctrl-C (Interrupted: print
// what was read, then return it), or a failure to return at once.
func (r *Replay) Done() error {
	r.Notes.Flush()
	return r.err
}

// Results are a fan-out command's answers, one per node: printed as each comes in when
// streaming (live nodes: render.FleetWriter, so a fleet's answers are not held until the end),
// else held for Close (copies read offline, or one node named, whose object is printed).
type Results[T any] struct {
	fleet *render.FleetWriter[T]
	live  *LiveOptions
	held  []T
	err   error
}

// NewResults returns the results of a command reading live through live, printing with print
// in ro's format, kind naming the json/yaml List; stream prints each as it comes.
func NewResults[T any](live *LiveOptions, w io.Writer, ro render.Options, kind string, print func(io.Writer, render.Options, []T) error, stream bool) *Results[T] {
	r := &Results[T]{live: live}
	if stream {
		r.fleet = render.NewFleetWriter(w, ro, kind, print)
	}
	return r
}

// Add prints a node's answers, or holds them. A failure to print stops the printing; Close
// returns it.
func (r *Results[T]) Add(items ...T) {
	switch {
	case r.fleet == nil:
		r.held = append(r.held, items...)
	case r.err == nil:
		if r.fleet.NodeWidth == 0 {
			r.fleet.NodeWidth = NodeColumnWidth(r.live.Resolved)
		}
		r.err = r.fleet.Add(items...)
	}
}

// Close ends a streamed output, or prints the answers held with printHeld.
func (r *Results[T]) Close(printHeld func([]T) error) error {
	if r.fleet == nil {
		return printHeld(r.held)
	}
	if err := r.fleet.Close(); r.err == nil {
		r.err = err
	}
	return r.err
}
