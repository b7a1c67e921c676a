// Package noderead is `kubectl-nodestate node-read`, hidden: the node reader that runs inside
// the debug pod when its image is the plugin's own (--reader=binary), which has no shell, no tar
// and no sleep. Exec'd, it answers the collect script's protocol (package fetch): the sections
// asked for on stderr, a tar of the requested files on stdout, then the end marker on stderr.
// As the pod's own command (--sleep), it waits out the pod's deadline. The logic is
// nodestate.NodeRead's; this is the glue.
package noderead

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Options is the node-read command's state.
type Options struct {
	genericiooptions.IOStreams

	Read nodestate.NodeRead
	// Sleep, when positive, waits that many seconds (or until SIGTERM) and reads nothing.
	Sleep int64
}

// NewCmdNodeRead returns the hidden node-read command.
func NewCmdNodeRead(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, Read: nodestate.NodeReadInPod()}
	cmd := &cobra.Command{
		Use:    nodestate.NodeReadVerb + " [--section NAME[=DIR,...]]... -- [FILE]...",
		Short:  "Read this node for a debug pod: sections on stderr, a tar of FILEs on stdout (run by the plugin in its own image)",
		Hidden: true,
		Long: cmdutil.LongDesc(`
			Node-read is what the plugin execs in its debug pod when the pod runs the plugin's own
			image (--reader=binary). It prints each --section on stderr, writes a tar of the FILEs
			(relative to the kubelet root dir, the working directory) that are regular files on
			stdout, and ends with the collect end marker on stderr. It writes nothing on the node
			and reads no file outside the kubelet root dir but the sections' own (sysfs, the
			mounted CDI and cgroup dirs, the kubelet's PodResources socket).

			With --sleep it reads nothing and waits that many seconds: the debug pod's command.`),
		RunE: cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Read.Sections, "section", nil, "A section to print on stderr, in order: sysfs, pci, sockets, podresources, cdi=DIR,..., cgroups=DIR")
	f.StringVar(&o.Read.RootDir, "kubelet-root-dir", o.Read.RootDir, "The kubelet root dir as mounted here")
	f.StringVar(&o.Read.SysRoot, "sys-root", o.Read.SysRoot, "Where sysfs is")
	f.StringVar(&o.Read.ProcRoot, "proc-root", o.Read.ProcRoot, "Where procfs is")
	f.DurationVar(&o.Read.PodResourcesTimeout, "podresources-timeout", o.Read.PodResourcesTimeout, "How long the kubelet's PodResources API may take to answer")
	f.Int64Var(&o.Sleep, "sleep", 0, "Read nothing: wait this many seconds, or until SIGTERM (the debug pod's command)")
	return cmd
}

// Complete takes the files.
func (o *Options) Complete(args []string) error {
	o.Read.Files = args
	return nil
}

// Validate checks the request before anything is written.
func (o *Options) Validate() error {
	switch {
	case o.Sleep < 0:
		return fmt.Errorf("--sleep must not be negative")
	case o.Sleep > 0 && (len(o.Read.Files) > 0 || len(o.Read.Sections) > 0):
		return fmt.Errorf("--sleep reads nothing: give no FILE and no --section")
	}
	return o.Read.Validate()
}

// Run reads, or sleeps.
func (o *Options) Run(ctx context.Context) error {
	if o.Sleep > 0 {
		t := time.NewTimer(time.Duration(o.Sleep) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	return o.Read.Run(ctx, o.Out, o.ErrOut)
}
