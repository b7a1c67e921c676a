// Package nodecheck is `kubectl-nodestate node-check CHECK`: one check of the node this binary
// runs on, answered as a Node Problem Detector custom plugin answers (one short line, exit 0 OK,
// 1 problem, 2 unknown), so that the Node Problem Detector turns it into a node condition. The
// logic is nodestate.CheckNode's; this is the glue.
package nodecheck

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// MaxLine is the Node Problem Detector's default max_output_length: it cuts a plugin's output
// there, so the line is shaped to fit.
const MaxLine = 80

var example = cmdutil.Examples(`
	# On the node (or in the Node Problem Detector's pod, with the host's dirs mounted read-only):
	# are the checkpoints intact for this kubelet?
	kubectl-nodestate node-check checkpoints

	# Would the kubelet start again with its config (the kubelet binary gives the version)?
	kubectl-nodestate node-check restart --kubelet-config /var/lib/kubelet/config.yaml

	# Do the CPU and memory states agree with the cgroups? (the host's cgroup mount, as the
	# DaemonSet in deploy/npd mounts it)
	kubectl-nodestate node-check cgroups --cgroup-root /host/sys/fs/cgroup

	# Do the device and DRA checkpoints agree with the device plugins and CDI specs?
	kubectl-nodestate node-check devices`)

// Options is the node-check command's state.
type Options struct {
	genericiooptions.IOStreams

	Local          nodestate.LocalConfig
	ContainerdRoot string
	CRIORunRoot    string
	// InstallTo copies this binary into a dir instead of checking (the DaemonSet's init
	// container: the image has no shell and no cp).
	InstallTo string

	check nodestate.NodeCheck
}

// NewCmdNodeCheck returns the node-check command.
func NewCmdNodeCheck(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, Local: nodestate.LocalDefaults()}
	checks := nodestate.NodeCheckNames()
	cmd := &cobra.Command{
		Use:   "node-check " + strings.Join(checks, "|"),
		Short: "Check the node this runs on, as a Node Problem Detector plugin: one line, exit 0 OK, 1 problem, 2 unknown",
		Long: cmdutil.LongDesc(`
			Node-check answers one question about the node it runs on, from the node's own files,
			without the API server: it is the Node Problem Detector's custom plugin (deploy/npd),
			each check one rule and one node condition.

			checkpoints: every checkpoint file is one this node's kubelet restores (as verify).
			restart: the kubelet would start again with its config, files and machine (as
			doctor's start prediction): a restart or a reboot is safe.
			cgroups: the CPU and memory managers' states agree with the containers' cgroups: no
			cpuset drift, no CPUs leaked or handed out twice (as doctor's cgroup audit; the
			containers are found from the container runtime's state).
			devices: the device and DRA checkpoints agree with the device plugins' sockets and
			the CDI specs (as doctor's device audit; ResourceClaims are not read).

			The kubelet's version is --kubelet-version, else read from the kubelet binary's Go
			build info without running it (--kubelet-binary); its config is --kubelet-config,
			else config.yaml in the kubelet root dir (where kubeadm writes it).

			It prints one line of at most 80 characters on stdout (the Node Problem Detector's
			max_output_length) naming the finding, and each problem on stderr. Exit status: 0
			OK, 1 a problem, 2 when it cannot judge (unknown to the Node Problem Detector), 3 on a
			usage error.`),
		Example:   example,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: checks,
		RunE:      cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Local.RootDir, "kubelet-root-dir", nodestate.DefaultRootDir, "The kubelet's --root-dir")
	f.StringVar(&o.Local.CgroupRoot, "cgroup-root", o.Local.CgroupRoot, "The host's cgroup mount (in a container, where the host's /sys/fs/cgroup is mounted)")
	f.StringSliceVar(&o.Local.CDIDirs, "cdi-dirs", o.Local.CDIDirs, "The CDI spec dirs")
	f.StringVar(&o.Local.SysRoot, "sys-root", o.Local.SysRoot, "Where the host's sysfs is (the machine's CPUs and NUMA nodes)")
	f.StringVar(&o.Local.ProcRoot, "proc-root", o.Local.ProcRoot, "Where the host's procfs is (its memory)")
	f.StringVar(&o.ContainerdRoot, "containerd-state", nodestate.DefaultContainerdState, "containerd's state dir (the running containers' bundles)")
	f.StringVar(&o.CRIORunRoot, "crio-runroot", nodestate.DefaultCRIORunRoot, "CRI-O's run root (the running containers' bundles)")
	f.StringVar(&o.Local.KubeletVersion, "kubelet-version", "", "The kubelet's version (default: read from the kubelet binary)")
	f.StringSliceVar(&o.Local.KubeletBinaries, "kubelet-binary", o.Local.KubeletBinaries, "The kubelet binary whose build info gives its version; the first present is read")
	f.StringVar(&o.Local.KubeletConfigFile, "kubelet-config", "", "The kubelet's --config file (default: config.yaml in the kubelet root dir)")
	f.StringVar(&o.InstallTo, "install-to", "", "Copy this binary into DIR as kubectl-nodestate and exit, checking nothing (the Node Problem Detector DaemonSet's init container)")
	return cmd
}

// Complete names the check and the runtimes' state dirs.
func (o *Options) Complete(args []string) error {
	switch {
	case o.InstallTo != "" && len(args) > 0:
		return fmt.Errorf("--install-to copies the binary and checks nothing: give no CHECK")
	case o.InstallTo != "":
		return nil
	case len(args) == 0:
		return fmt.Errorf("name the check: one of %s", strings.Join(nodestate.NodeCheckNames(), ", "))
	}
	c, err := nodestate.ParseNodeCheck(args[0])
	if err != nil {
		return err
	}
	o.check = c
	o.Local.Runtimes = nodestate.RuntimesAt(o.ContainerdRoot, o.CRIORunRoot)
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.Local.RootDir == "" {
		return fmt.Errorf("--kubelet-root-dir must not be empty")
	}
	return nil
}

// Run runs the check and answers as the Node Problem Detector reads a plugin.
func (o *Options) Run(ctx context.Context) error {
	if o.InstallTo != "" {
		return install(o.InstallTo)
	}
	results, err := nodestate.CheckNode(ctx, o.Local, o.check)
	if err != nil {
		fmt.Fprintln(o.Out, Line("cannot judge: "+err.Error()))
		return &cmdutil.ExitError{Code: int(nodestate.CheckUnknown)}
	}
	r := results[0]
	if r.Unchecked != "" {
		fmt.Fprintf(o.ErrOut, "%s: note: %s\n", r.Check, r.Unchecked)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(o.ErrOut, "%s: %s %s %s: %s\n", r.Check, p.Severity, p.Check, strings.TrimSpace(p.File+" "+p.Entry), p.Message)
	}
	fmt.Fprintln(o.Out, Line(r.Summary))
	return cmdutil.Exit(int(r.Status))
}

// Line is s on one line of at most MaxLine bytes, cut with "..." when longer.
func Line(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxLine {
		return s
	}
	cut := MaxLine - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// install copies the running binary to dir/kubectl-nodestate (through a temp file and a
// rename, so that a plugin run never sees half a binary).
func install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".kubectl-nodestate-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, "kubectl-nodestate"))
}
