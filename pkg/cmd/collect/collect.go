// Package collect is `kubectl nodestate collect`: copy the raw checkpoint files of nodes into a
// directory, with a verification summary, for support bundles.
package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/version"
)

// Options is the collect command's state.
type Options struct {
	cmdutil.ReadOptions
	Dir string
	// PrintScript prints the collect script for a node whose kubelet is down, and reads nothing.
	PrintScript bool

	genericiooptions.IOStreams
}

// NewCmdCollect returns the collect command.
func NewCmdCollect(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{ReadOptions: cmdutil.NewReadOptions(flags), IOStreams: streams}
	o.ReadMachine, o.ReadKubeletConfig, o.ReadNodeFiles, o.ReadCgroups = true, true, true, true
	o.ReadPodNames = true // node.json's pods: the kubelet-restart outlook of doctor --from-dir
	cmd := &cobra.Command{
		Use:   "collect NODE... | --all-nodes -d DIR | --print-script",
		Short: "Copy nodes' raw checkpoint files into a directory, with a verification summary",
		Long: cmdutil.LongDesc(`
			Collect copies every checkpoint file of each node to DIR/<node>/<path under the kubelet
			root dir> (mode 0600), writes DIR/<node>/verify.json, and DIR/summary.json for all
			nodes. The copies can be read later with --from-dir DIR/<node>, judged by the kubelet
			version recorded in node.json.

			Beside the files it writes what doctor needs to judge the node offline:
			machine.json (the node's CPUs, NUMA memory and hugepages, from sysfs), the kubelet
			config it could read (kubelet-config.json from configz, when you may GET
			nodes/proxy; else kubelet-config.yaml, the config.yaml of the kubelet root dir), and
			node.json (the kubelet version and where each came from, and the node's pods as the
			API server lists them: names, owners, creation times and which containers run, for
			doctor's kubelet-restart outlook); and, raw, the sections
			the debug pod printed: machine.sysfs, device-plugins.sockets (the device plugins'
			sockets) and cdi.specs (the CDI spec files of /etc/cdi and /var/run/cdi).

			A node whose kubelet is down cannot run the debug pod. --print-script prints a POSIX sh
			script that reads the same files on the node itself and writes the same bundle, with
			the kubelet's version from its binary, as one tar.gz on stdout: run it as root over
			ssh or a serial console, then read the tar.gz with --from-dir.`) + "\n\n" + cmdutil.ExitStatusHelp,
		Example: cmdutil.Examples(`
			kubectl nodestate collect worker-1 worker-2 -d ./nodestate-bundle
			kubectl nodestate collect --all-nodes -l node-role.kubernetes.io/gpu -d ./bundle

		# A node whose kubelet is down: the same bundle, read on the node itself
		kubectl nodestate collect --print-script > collect.sh
		ssh worker-1 sudo sh -s < collect.sh > worker-1.tar.gz
		kubectl nodestate doctor --from-dir worker-1.tar.gz`),
		ValidArgsFunction: cmdutil.CompleteNodeNames(flags),
		RunE:              cmdutil.RunE(o),
	}
	cmd.Flags().StringVarP(&o.Dir, "dir", "d", "", "Directory to write into (created if missing)")
	cmd.Flags().BoolVar(&o.PrintScript, "print-script", false, "Print a POSIX sh script that writes the same bundle as one tar.gz on stdout when run on a node, for a node whose kubelet is down; --kubelet-root-dir is its default root dir")
	cmd.Flags().StringVar(&o.Source.KubeletVersion, "kubelet-version", "", "Judge the files for this kubelet version instead of each node's")
	cmd.Flags().StringVar(&o.Source.KubeletRootDir, "kubelet-root-dir", nodestate.DefaultRootDir, "The kubelet's --root-dir on the node")
	o.Live.AddFlags(cmd)
	return cmd
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.PrintScript {
		if o.Dir != "" || len(o.Nodes) > 0 || o.Live.AllNodes {
			return fmt.Errorf("--print-script prints the script and reads no node: it takes no node, --all-nodes or --dir")
		}
		return nil
	}
	if o.Dir == "" {
		return fmt.Errorf("you must give a directory to write into with -d/--dir")
	}
	if len(o.Nodes) == 0 && !o.Live.AllNodes {
		return fmt.Errorf("you must name a node or use --all-nodes")
	}
	for _, n := range o.Nodes {
		if strings.ContainsAny(n, `/\`) || n == ".." || n == "." {
			return fmt.Errorf("%q is not a node name", n)
		}
	}
	return o.Live.Validate(o.Nodes)
}

// nodeSummary is one node's entry in summary.json.
type nodeSummary struct {
	Node string `json:"node"`
	// KubeletVersion is the node's status.nodeInfo.kubeletVersion, also written to
	// DIR/<node>/node.json so that --from-dir DIR/<node> judges by it.
	KubeletVersion string              `json:"kubeletVersion,omitempty"`
	Error          string              `json:"error,omitempty"`
	Files          []nodestate.FileRow `json:"files,omitempty"`
}

// Run copies, verifies and summarises.
func (o *Options) Run(ctx context.Context) error {
	if o.PrintScript {
		_, err := fmt.Fprint(o.Out, nodestate.CollectScript(o.Source.KubeletRootDir, version.Get().Version))
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	var summary []nodeSummary
	var all []nodestate.FileRow
	worst := cmdutil.ExitOK
	for n, err := range o.Read(ctx, o.ErrOut) {
		if err != nil {
			return err
		}
		if n.Err != nil {
			worst = max(worst, cmdutil.ReportNodeError(o.ErrOut, n))
			summary = append(summary, nodeSummary{Node: n.Node, Error: n.Err.Error()})
			continue
		}
		rows, exit, err := o.writeNode(n)
		if err != nil {
			return err
		}
		worst = max(worst, exit)
		summary = append(summary, nodeSummary{Node: n.Node, KubeletVersion: n.Snapshot.KubeletVersion, Files: rows})
		all = append(all, rows...)
	}
	if err := writeJSON(filepath.Join(o.Dir, "summary.json"), summary); err != nil {
		return err
	}
	if err := render.Verify(o.Out, render.Options{ShowNode: true}, all); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "wrote %d node(s) to %s\n", len(summary), o.Dir)
	return cmdutil.Exit(worst)
}

// writeNodeInfo writes machine.json, the kubelet config and node.json; what could not be read
// is said on stderr and in node.json, and is no failure of collect.
func (o *Options) writeNodeInfo(dir string, n *nodestate.NodeResult) error {
	info := nodestate.NodeInfo{Schema: nodestate.NodeInfoSchema, Node: n.Node, KubeletVersion: n.Snapshot.KubeletVersion, KubeletConfigNote: n.KubeletConfigNote}
	info.Devices = n.Snapshot.Devices
	info.Pods = nodestate.RecordPods(n)
	if n.Machine != nil {
		if err := writeJSON(filepath.Join(dir, nodestate.MachineFile), n.Machine); err != nil {
			return err
		}
		info.Machine = nodestate.MachineFile
	} else if n.MachineErr != nil {
		info.MachineError = n.MachineErr.Error()
		fmt.Fprintf(o.ErrOut, "warning: node %s: no %s: %v\n", n.Node, nodestate.MachineFile, n.MachineErr)
	}
	if n.KubeletConfig != nil {
		name := nodestate.ConfigYAMLFile
		if n.KubeletConfigFrom == nodestate.FromConfigz {
			name = nodestate.ConfigzFile
		}
		if err := os.WriteFile(filepath.Join(dir, name), n.KubeletConfig, 0o600); err != nil {
			return err
		}
		info.KubeletConfig, info.KubeletConfigFrom = name, n.KubeletConfigFrom
	} else {
		fmt.Fprintf(o.ErrOut, "warning: node %s: no kubelet config: %s\n", n.Node, n.KubeletConfigNote)
	}
	return writeJSON(filepath.Join(dir, nodestate.NodeInfoFile), info)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// writeNode writes a read node's files, their verdicts (the models left out: the raw files are
// beside them), its record and its dumps into the node's directory, and returns its rows and the
// exit status its verdicts call for.
func (o *Options) writeNode(n *nodestate.NodeResult) ([]nodestate.FileRow, int, error) {
	exit := cmdutil.ExitOK
	nodeDir := filepath.Join(o.Dir, n.Node)
	if err := n.WriteFiles(nodeDir); err != nil {
		return nil, exit, err
	}
	rows := make([]nodestate.FileRow, len(n.Rows))
	for i, r := range n.Rows {
		if v := r.Verdict(); v != nodestate.Valid && v != nodestate.NotRead {
			exit = cmdutil.ExitNotValid
		}
		if r.Report != nil {
			rep := *r.Report
			rep.Decoded = nodestate.Model{} // the raw files are next to it
			r.Report = &rep
		}
		rows[i] = r
	}
	if err := writeJSON(filepath.Join(nodeDir, "verify.json"), rows); err != nil {
		return nil, exit, err
	}
	if err := o.writeNodeInfo(nodeDir, n); err != nil {
		return nil, exit, err
	}
	return rows, exit, nil
}
