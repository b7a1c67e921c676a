// Package version implements `kubectl nodestate version`: the build stamp of this binary, and
// the kubelet builds it was checked against.
package version

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/version"
)

// getInfo returns the build stamp; tests replace it.
var getInfo = version.Get

// outputFormats are the accepted values of -o, in the order the help text lists them.
var outputFormats = []string{"json", "yaml"}

const long = "Print the version, commit, build date, Go version and platform of this kubectl-nodestate binary, " +
	"and the kubelet builds its rules were checked against (another build is judged by the rules of the newest, and every command says so)."

const example = `  # Print the version line, and the kubelet builds this binary was checked against
  kubectl nodestate version

  # Print the build stamp as JSON (or yaml)
  kubectl nodestate version -o json`

// Options holds the flags and streams of the version command.
type Options struct {
	Output string

	info Info

	genericiooptions.IOStreams
}

// NewOptions returns Options that print the stamp of this binary to streams.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{IOStreams: streams}
}

// NewCmdVersion returns the `version` command.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "version [-o json|yaml]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the version of kubectl-nodestate",
		Long:                  long,
		Example:               example,
		Args:                  cobra.NoArgs,
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
	cmd.Flags().StringVarP(&o.Output, "output", "o", "",
		"Output format. One of: ("+strings.Join(outputFormats, ", ")+"). Default: one line of text.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return outputFormats, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// Info is what version prints: the build stamp, and the kubelet builds checked.
type Info struct {
	version.Info
	KubeletBuildsChecked []string `json:"kubeletBuildsChecked"`
}

// Complete reads the build stamp.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	o.info = Info{Info: getInfo(), KubeletBuildsChecked: nodestate.KubeletBuildsChecked()}
	return nil
}

// Validate checks the -o value.
func (o *Options) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q is not supported by version; use one of: %s (or omit -o for one line of text)",
		o.Output, strings.Join(outputFormats, ", "))
}

// Run prints the stamp in the chosen format to Out.
func (o *Options) Run() error {
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(o.info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(o.info)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	default:
		_, err := fmt.Fprintf(o.Out, "%s\nkubelet builds checked: %s\n", Line(o.info.Info), strings.Join(o.info.KubeletBuildsChecked, ", "))
		return err
	}
}

// Line is the one-line form of the stamp:
// "kubectl-nodestate v0.1.0 (commit abc1234, built 2026-11-21T10:00:00Z, go1.26.8 linux/amd64)".
func Line(i version.Info) string {
	return fmt.Sprintf("kubectl-nodestate %s (commit %s, built %s, %s %s)",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
