// Package cleanup is `kubectl nodestate cleanup`: delete debug pods a killed run left behind.
package cleanup

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Options is the cleanup command's state.
type Options struct {
	ConfigFlags   *genericclioptions.ConfigFlags
	AllNamespaces bool
	OlderThan     time.Duration

	namespace string
	client    kubernetes.Interface
	genericiooptions.IOStreams
}

// NewCmdCleanup returns the cleanup command.
func NewCmdCleanup(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ConfigFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "cleanup [-n NAMESPACE | -A] [--older-than DURATION]",
		Short: "Delete debug pods left behind (label " + nodestate.DebugPodLabel + ")",
		Long: cmdutil.LongDesc(`
			Every debug pod is deleted when its command ends, and dies on its own at its
			activeDeadlineSeconds. A client killed with SIGKILL or cut off from the API server can
			still leave one behind for that long: cleanup deletes them now.`),
		Example: cmdutil.Examples(`
			# Delete leftovers in every namespace, sparing runs started in the last 10 minutes
			kubectl nodestate cleanup -A --older-than 10m`),
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Delete leftovers in every namespace")
	cmd.Flags().DurationVar(&o.OlderThan, "older-than", 0, "Only delete pods older than this (keeps runs in progress)")
	return cmd
}

// Complete builds the client and picks the namespace.
func (o *Options) Complete([]string) error {
	config, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	if o.client, err = kubernetes.NewForConfig(config); err != nil {
		return err
	}
	if !o.AllNamespaces {
		o.namespace = cmdutil.DebugNamespace(o.ConfigFlags)
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.OlderThan < 0 {
		return fmt.Errorf("--older-than must not be negative")
	}
	return nil
}

// Run deletes the leftovers, one line each, as kubectl delete prints them.
func (o *Options) Run(ctx context.Context) error {
	deleted, err := nodestate.Cleanup(ctx, o.client, o.namespace, o.OlderThan)
	for _, p := range deleted {
		fmt.Fprintf(o.Out, "pod %s deleted\n", p)
	}
	if len(deleted) == 0 && err == nil {
		fmt.Fprintln(o.ErrOut, "No leftover debug pods found.")
	}
	return err
}
