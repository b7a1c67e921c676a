// Package nodepublish is `kubectl-nodestate node-publish`, hidden: the DaemonSet's process
// (deploy/publish) that publishes the state of the node it runs on, for admit --from-published
// and the scheduler's filter, and as the node's NodeResourceTopology object. The logic is
// nodestate.Publisher's; this is the glue.
package nodepublish

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// NodeNameEnv is where the DaemonSet puts the node's name (the downward API's spec.nodeName).
const NodeNameEnv = "NODE_NAME"

// Options is the node-publish command's state.
type Options struct {
	genericiooptions.IOStreams
	flags *genericclioptions.ConfigFlags

	Node              string
	Local             nodestate.LocalConfig
	Refresh, Debounce time.Duration
	// Once publishes one state and exits (a test, a one-off).
	Once bool
	// NoTopology writes no NodeResourceTopology object.
	NoTopology bool

	publisher *nodestate.Publisher
}

// NewCmdNodePublish returns the hidden node-publish command.
func NewCmdNodePublish(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, flags: flags, Local: nodestate.LocalDefaults()}
	cmd := &cobra.Command{
		Use:    "node-publish --node NAME",
		Short:  "Publish the state of the node this runs on (the deploy/publish DaemonSet's process)",
		Hidden: true,
		Long: cmdutil.LongDesc(`
			Node-publish reads the node it runs on as node-check does (the checkpoint files, the
			kubelet's config and version, sysfs, PCI, the NVIDIA driver, the kubelet's
			PodResources API) and publishes it: the ConfigMap named after the node in namespace
			` + nodestate.PublishedNamespace + ` (owned by the Node), which admit --from-published and
			the scheduler's filter replay, and the node's NodeResourceTopology object
			(topology.node.k8s.io/v1alpha2) where that CRD is served.

			It writes when the state changed (inotify on the checkpoint files and the device
			plugins' dir, debounced) and on every --refresh, which renews the state's read time.`),
		RunE: cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Node, "node", os.Getenv(NodeNameEnv), "The node this runs on (default $"+NodeNameEnv+")")
	f.StringVar(&o.Local.RootDir, "kubelet-root-dir", nodestate.DefaultRootDir, "The kubelet's --root-dir")
	f.StringVar(&o.Local.SysRoot, "sys-root", o.Local.SysRoot, "Where the host's sysfs is")
	f.StringVar(&o.Local.ProcRoot, "proc-root", o.Local.ProcRoot, "Where the host's procfs is")
	f.StringVar(&o.Local.KubeletVersion, "kubelet-version", "", "The kubelet's version (default: read from the kubelet binary)")
	f.StringSliceVar(&o.Local.KubeletBinaries, "kubelet-binary", o.Local.KubeletBinaries, "The kubelet binary whose build info gives its version; the first present is read")
	f.StringVar(&o.Local.KubeletConfigFile, "kubelet-config", "", "The kubelet's --config file (default: config.yaml in the kubelet root dir)")
	f.DurationVar(&o.Refresh, "refresh", nodestate.DefaultPublishRefresh, "Publish again this often whatever changed (consumers take a state older than three of these for a dead publisher's)")
	f.DurationVar(&o.Debounce, "debounce", nodestate.DefaultPublishDebounce, "How long the files must be still before a change is published")
	f.BoolVar(&o.Once, "once", false, "Publish once and exit")
	f.BoolVar(&o.NoTopology, "no-topology", false, "Write no NodeResourceTopology object")
	return cmd
}

// Complete makes the clients.
func (o *Options) Complete([]string) error {
	if o.Node == "" {
		return errors.New("name the node: --node NAME, or $" + NodeNameEnv)
	}
	config, err := o.flags.ToRESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	o.publisher = &nodestate.Publisher{Client: client, Node: o.Node, Local: o.Local, Refresh: o.Refresh, Debounce: o.Debounce,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(o.ErrOut, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
		}}
	if !o.NoTopology {
		if o.publisher.Dynamic, err = dynamic.NewForConfig(config); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch {
	case o.Local.RootDir == "":
		return errors.New("--kubelet-root-dir must not be empty")
	case o.Refresh <= 0 || o.Debounce <= 0:
		return errors.New("--refresh and --debounce must be positive")
	case o.Debounce >= o.Refresh:
		return errors.New("--debounce must be shorter than --refresh")
	}
	return nil
}

// Run publishes, once or until the process is stopped.
func (o *Options) Run(ctx context.Context) error {
	if !o.Once {
		return o.publisher.Run(ctx)
	}
	out, err := o.publisher.Publish(ctx, true)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUnreadable, Message: err.Error()}
	}
	fmt.Fprintf(o.Out, "published %s: %d bytes\n", out.Fingerprint, out.Bytes)
	return nil
}
