// Package rbac implements `kubectl nodestate rbac`: the manifests that set a cluster up for the
// plugin (its namespace, Role and ClusterRole, and the admission policies that admit only the
// debug pod's shape there), for the namespace, images and kubelet root dirs given.
package rbac

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

const example = `  # Set a cluster up: namespace kubectl-nodestate, RBAC, and the admission policy
  kubectl nodestate rbac | kubectl apply -f -

  # Debug pods from a mirror, in another namespace, on nodes whose kubelet has --root-dir /data/kubelet
  kubectl nodestate rbac --image registry.internal/busybox:1.37 -n nodestate \
    --kubelet-root-dir /var/lib/kubelet --kubelet-root-dir /data/kubelet | kubectl apply -f -`

// Options holds the flags and streams of the rbac command.
type Options struct {
	Images          []string
	KubeletRootDirs []string

	configFlags *genericclioptions.ConfigFlags
	config      nodestate.ManifestsConfig

	genericiooptions.IOStreams
}

// NewOptions returns Options printing to streams.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	return &Options{configFlags: configFlags, IOStreams: streams}
}

// NewCmdRBAC returns the `rbac` command.
func NewCmdRBAC(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(configFlags, streams)
	cmd := &cobra.Command{
		Use:                   "rbac [--image IMAGE]... [--kubelet-root-dir DIR]... [-n NAMESPACE]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the manifests that set a cluster up: namespace, RBAC and admission policy",
		Long: `Print, for kubectl apply, what the plugin needs on a cluster: its namespace (Pod Security
privileged, for the debug pod's read-only hostPath mounts), a Role there and a ClusterRole granting
exactly the API calls it makes, bindings for the group kubectl-nodestate-users, and the
ValidatingAdmissionPolicies (Kubernetes 1.30+) that admit in that namespace only the debug pod's
shape (its image, its read-only mounts, no privilege) and let exec reach only debug pods.
With no flags it prints deploy/rbac.yaml and deploy/shape-policy.yaml. See docs/security.md.`,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringArrayVar(&o.Images, "image", nil,
		"An image the debug pod may run, as given to the other commands' --image (repeat for several; default "+cmdutil.DefaultImage+")")
	cmd.Flags().StringArrayVar(&o.KubeletRootDirs, "kubelet-root-dir", nil,
		"A kubelet --root-dir the debug pod may mount (repeat for several; default /var/lib/kubelet)")
	return cmd
}

// Complete reads the namespace (-n, else the plugin's own) and records the flags in the header.
func (o *Options) Complete(cmd *cobra.Command, _ []string) error {
	o.config = nodestate.ManifestsConfig{
		Namespace:       cmdutil.DebugNamespace(o.configFlags),
		Images:          o.Images,
		KubeletRootDirs: o.KubeletRootDirs,
	}
	var args []string
	if cmd != nil {
		for _, name := range []string{"namespace", "image", "kubelet-root-dir"} {
			f := cmd.Flags().Lookup(name)
			if f == nil || !f.Changed {
				continue
			}
			values := []string{f.Value.String()}
			if s, ok := f.Value.(interface{ GetSlice() []string }); ok {
				values = s.GetSlice()
			}
			for _, v := range values {
				args = append(args, "--"+name+" "+v)
			}
		}
	}
	if len(args) > 0 {
		o.config.Args = " " + strings.Join(args, " ")
	}
	return nil
}

// Validate checks the namespace, images and dirs.
func (o *Options) Validate() error {
	return o.config.Validate()
}

// Run prints the manifests, one YAML stream.
func (o *Options) Run() error {
	m, err := nodestate.GenerateManifests(o.config)
	if err != nil {
		return err
	}
	if _, err := o.Out.Write(m.All()); err != nil {
		return fmt.Errorf("write the manifests: %w", err)
	}
	return nil
}
