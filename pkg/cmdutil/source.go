package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// SourceOptions are the flags every reading command shares: where the files come from and which
// kubelet to judge them for.
type SourceOptions struct {
	FromDir        string
	FromFile       string
	Kind           string
	KubeletVersion string
	FeatureGates   string
	KubeletRootDir string
	Output         string
	NoHeaders      bool

	// Set by Complete.
	Kubelet *nodestate.Kubelet
	Format  render.Format
}

// AddFlags registers the shared flags.
func (o *SourceOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.FromDir, "from-dir", "", "Read files copied off a node: a directory laid out like the kubelet root dir, or a tar/tar.gz of one")
	f.StringVar(&o.FromFile, "from-file", "", "Read one checkpoint file (its kind is taken from its name unless --kind is given)")
	f.StringVar(&o.Kind, "kind", "", "Kind of the --from-file file: "+strings.Join(kindNames(), ", "))
	f.StringVar(&o.KubeletVersion, "kubelet-version", "", "Judge the files as this kubelet version would on restart (e.g. v1.36.4); default: the node's version; offline, the version collect recorded, else the newest release that could have written all the files")
	f.StringVar(&o.FeatureGates, "feature-gates", "", "Feature gates of that kubelet, e.g. PodLevelResourceManagers=true")
	f.StringVar(&o.KubeletRootDir, "kubelet-root-dir", nodestate.DefaultRootDir, "The kubelet's --root-dir on the node")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: one of "+strings.Join(render.Formats, "|"))
	f.BoolVar(&o.NoHeaders, "no-headers", false, "Don't print headers")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(kindNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(render.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("from-dir")
}

func kindNames() []string {
	var out []string
	for _, k := range nodestate.Kinds() {
		out = append(out, string(k))
	}
	return out
}

// Complete parses the flags into a reader and an output format.
func (o *SourceOptions) Complete() error {
	format, err := render.ParseFormat(o.Output)
	if err != nil {
		return err
	}
	o.Format = format
	gates, err := ParseFeatureGates(o.FeatureGates)
	if err != nil {
		return err
	}
	if o.KubeletVersion != "" {
		if o.Kubelet, err = nodestate.ParseKubelet(o.KubeletVersion, gates); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks that the source flags make sense together.
func (o *SourceOptions) Validate(nodes []string, allNodes bool) error {
	offline := o.FromDir != "" || o.FromFile != ""
	switch {
	case o.FromDir != "" && o.FromFile != "":
		return fmt.Errorf("--from-dir and --from-file cannot be used together")
	case offline && (len(nodes) > 0 || allNodes):
		return fmt.Errorf("node names and --all-nodes read live nodes; they cannot be combined with --from-dir or --from-file")
	case !offline && len(nodes) == 0 && !allNodes:
		return fmt.Errorf("you must name a node (or use --all-nodes), or read copied files with --from-dir or --from-file")
	case o.Kind != "" && o.FromFile == "":
		return fmt.Errorf("--kind only applies to --from-file")
	case o.FeatureGates != "" && o.KubeletVersion == "":
		return fmt.Errorf("--feature-gates needs --kubelet-version: gates only matter for the kubelet they belong to")
	}
	if o.Kind != "" {
		if _, ok := nodestate.ParseKind(o.Kind); !ok {
			return fmt.Errorf("unknown --kind %q: want one of %s", o.Kind, strings.Join(kindNames(), ", "))
		}
	}
	return nil
}

// Offline reports whether the files come from disk.
func (o *SourceOptions) Offline() bool { return o.FromDir != "" || o.FromFile != "" }

// ParseFeatureGates parses "A=true,B=false".
func ParseFeatureGates(s string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		on, err := strconv.ParseBool(strings.TrimSpace(val))
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("invalid --feature-gates entry %q: want Name=true|false", kv)
		}
		gates[name] = on
	}
	return gates, nil
}

// MachineConfigOptions are the machine and kubelet config about to be used (doctor, admit);
// empty takes the node's own, or a collect bundle's.
type MachineConfigOptions struct {
	MachineFile string
	ConfigFile  string
}

// AddFlags registers --machine and --kubelet-config.
func (o *MachineConfigOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.MachineFile, "machine", "", "The machine (machine.json: online CPUs, NUMA memory, hugepages); default: the node's sysfs, or the bundle's machine.json")
	cmd.Flags().StringVar(&o.ConfigFile, "kubelet-config", "", "The KubeletConfiguration (YAML or JSON, or configz's answer); default: the node's, or the bundle's kubelet-config.yaml")
	_ = cmd.MarkFlagFilename("machine", "json")
	_ = cmd.MarkFlagFilename("kubelet-config", "yaml", "yml", "json")
}
