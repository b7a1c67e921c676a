package cmdutil

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// LiveOptions are the flags for reading live nodes through a debug pod.
type LiveOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags

	AllNodes        bool
	Selector        string
	Concurrency     int
	Image           string
	ImagePullSecret string
	Timeout         time.Duration
	// Reader is what reads the node in the debug pod (--reader): nodestate.ReaderShell or
	// nodestate.ReaderBinary.
	Reader string

	// image is --image's flag, to tell its default from a choice.
	image *pflag.Flag

	// Resolved is the node list being read, once known (after --all-nodes listed them).
	Resolved []string
}

// Defaults for live reading: the library's.
const (
	DefaultConcurrency = nodestate.DefaultConcurrency
	DefaultImage       = nodestate.DefaultImage
	DefaultTimeout     = nodestate.DefaultTimeout
)

// AddFlags registers the live-reading flags.
func (o *LiveOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.AllNodes, "all-nodes", false, "Read every node (with -l, every matching node)")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector of the nodes to read with --all-nodes")
	f.IntVar(&o.Concurrency, "concurrency", DefaultConcurrency, "How many nodes to read at once")
	f.StringVar(&o.Image, "image", DefaultImage, "Image of the debug pod; it needs sh and tar (use a mirror in air-gapped clusters)")
	o.image = f.Lookup("image")
	f.StringVar(&o.Reader, "reader", nodestate.ReaderShell, "What reads the node in the debug pod: shell (--image's sh and tar) or binary (the plugin's own image, "+
		"which also asks the kubelet's PodResources API; --image defaults to this version's image, or give its mirror)")
	f.StringVar(&o.ImagePullSecret, "image-pull-secret", "", "Name of a pull secret for --image in the debug pod's namespace")
	f.DurationVar(&o.Timeout, "pod-running-timeout", DefaultTimeout, "How long to wait for each debug pod to run (image pull included), and for each copy")
}

// Validate checks the live flags.
func (o *LiveOptions) Validate(nodes []string) error {
	switch {
	case o.AllNodes && len(nodes) > 0:
		return fmt.Errorf("name nodes or use --all-nodes, not both")
	case o.Selector != "" && !o.AllNodes:
		return fmt.Errorf("-l/--selector selects nodes for --all-nodes; add --all-nodes")
	case o.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1")
	case o.Timeout <= 0:
		return fmt.Errorf("--pod-running-timeout must be positive")
	case o.Reader != "" && o.Reader != nodestate.ReaderShell && o.Reader != nodestate.ReaderBinary:
		return fmt.Errorf("--reader must be %s or %s", nodestate.ReaderShell, nodestate.ReaderBinary)
	}
	return nil
}

// DebugImage is the debug pod's image: --image, or under --reader=binary without --image, ""
// (the plugin's own image of this version, the library's default for that reader).
func (o *LiveOptions) DebugImage() string {
	if o.Reader == nodestate.ReaderBinary && (o.image == nil || !o.image.Changed) {
		return ""
	}
	return o.Image
}

// CompleteNodeNames completes node names for NODE arguments.
func CompleteNodeNames(flags *genericclioptions.ConfigFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return completeNodes(cmd.Context(), flags, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// NodeColumnWidth is the NODE column's width when rows stream in: the longest name given, or a
// width that fits typical node names with --all-nodes.
func NodeColumnWidth(nodes []string) int {
	width := 4
	for _, n := range nodes {
		width = max(width, len(n))
	}
	if len(nodes) == 0 {
		width = 30
	}
	return width
}

// ReadOptions are what every reading command shares: where the files come from (live nodes or
// copied files) and which kubelet to judge them for.
type ReadOptions struct {
	Source SourceOptions
	Live   LiveOptions
	Nodes  []string
	// ReadMachine and ReadKubeletConfig also read each live node's machine and kubelet config
	// (collect); see nodestate.Config.
	ReadMachine, ReadKubeletConfig bool
	// ReadNodeFiles also reads the device plugin sockets and CDI specs (nodestate.Config.NodeFiles).
	ReadNodeFiles bool
	// ReadPodNames also lists each live node's pods, to name the IDs the files hold
	// (nodestate.Config.PodNames; doctor and admit always do).
	ReadPodNames bool
	// ReadCgroups also reads what the node's cgroups show (nodestate.Config.Cgroups).
	ReadCgroups bool
	// Engines are the library's engines to run beyond decode (doctor).
	Engines nodestate.Engines
	// Published answers live nodes from the states they published instead of debug pods
	// (admit --from-published); nil reads them.
	Published *nodestate.PublishedRead
}

// NewReadOptions returns ReadOptions reading live nodes through flags.
func NewReadOptions(flags *genericclioptions.ConfigFlags) ReadOptions {
	return ReadOptions{Live: LiveOptions{ConfigFlags: flags}}
}

// AddFlags registers the source and live flags.
func (o *ReadOptions) AddFlags(cmd *cobra.Command) {
	o.Source.AddFlags(cmd)
	o.Live.AddFlags(cmd)
}

// Complete takes the node names and parses the flags.
func (o *ReadOptions) Complete(args []string) error {
	o.Nodes = args
	return o.Source.Complete()
}

// Validate checks the flags together.
func (o *ReadOptions) Validate() error {
	if err := o.Source.Validate(o.Nodes, o.Live.AllNodes); err != nil {
		return err
	}
	return o.Live.Validate(o.Nodes)
}

// RenderOptions are the printer options the flags ask for.
func (o *ReadOptions) RenderOptions() render.Options {
	return render.Options{Format: o.Source.Format, NoHeader: o.Source.NoHeaders, ShowNode: !o.Source.Offline()}
}

// DebugNamespace is where the debug pods go: --namespace when given, else the plugin's own
// namespace (deploy/rbac.yaml), never the kubeconfig context's, whose Pod Security level and
// RBAC the plugin's Role knows nothing of.
func DebugNamespace(flags *genericclioptions.ConfigFlags) string {
	if flags != nil && flags.Namespace != nil && *flags.Namespace != "" {
		return *flags.Namespace
	}
	return nodestate.DefaultNamespace
}
