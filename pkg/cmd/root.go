// Package cmd wires the kubectl-nodestate subcommands together. Each subcommand lives in its
// own package with an Options struct (Complete / Validate / Run), as kubectl's commands do.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	// Cloud kubeconfigs (exec, oidc, ...) must work as they do for kubectl.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/cleanup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/collect"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/conditions"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/nodecheck"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/nodepublish"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/noderead"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/rbac"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/show"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/verify"
	versioncmd "github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/version"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
)

// NewCmdNodestate builds the root command.
func NewCmdNodestate(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-nodestate",
		Short: "Read and verify the kubelet's resource-manager checkpoints",
		Long: `kubectl nodestate reads the kubelet's checkpoint files (cpu_manager_state,
memory_manager_state, device-plugins/kubelet_internal_checkpoint, dra_manager_state and the pod
allocation files), verifies each checksum with the exact rule of the kubelet version that wrote
it, and shows who holds which CPUs, memory, devices and DRA claims.

It reads live nodes through a short-lived read-only debug pod, or files copied off a node
(--from-dir, --from-file).`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl nodestate",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	configFlags.AddFlags(root.PersistentFlags())
	// Rarely needed with a plugin; still accepted, as stern does.
	for _, name := range []string{"as", "as-group", "as-uid", "as-user-extra", "cache-dir", "certificate-authority",
		"client-certificate", "client-key", "disable-compression", "tls-server-name", "token", "user", "username", "password"} {
		_ = root.PersistentFlags().MarkHidden(name)
	}

	addKlogFlags(root)
	prof := &profiling{}
	prof.addFlags(root.PersistentFlags())
	klogPreRun := root.PersistentPreRun
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		klogPreRun(cmd, args)
		if err := prof.start(); err != nil {
			return err
		}
		running = prof
		return nil
	}

	root.AddCommand(verify.NewCmdVerify(configFlags, streams))
	for _, c := range show.NewCmds(configFlags, streams) {
		root.AddCommand(c)
	}
	root.AddCommand(doctor.NewCmdDoctor(configFlags, streams))
	root.AddCommand(admit.NewCmdAdmit(configFlags, streams))
	root.AddCommand(collect.NewCmdCollect(configFlags, streams))
	root.AddCommand(cleanup.NewCmdCleanup(configFlags, streams))
	root.AddCommand(rbac.NewCmdRBAC(configFlags, streams))
	root.AddCommand(nodecheck.NewCmdNodeCheck(streams))
	root.AddCommand(noderead.NewCmdNodeRead(streams))
	root.AddCommand(nodepublish.NewCmdNodePublish(configFlags, streams))
	root.AddCommand(conditions.NewCmdConditions(configFlags, streams))
	root.AddCommand(versioncmd.NewCmdVersion(streams))
	return root
}

// Main runs the plugin as a process: signals, streams, exit code.
func Main() int {
	// Ctrl-C, SIGTERM and a closed terminal (SIGHUP) cancel the context: fan-out stops starting
	// nodes and every debug pod already created is deleted before the command returns.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A closed stdout (`kubectl nodestate verify --all-nodes | head`) would kill the process
	// with SIGPIPE in the middle of a fan-out, leaving pods behind: turn it into an error that
	// cancels the same way.
	signal.Ignore(syscall.SIGPIPE)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: cancelOnBrokenPipe{os.Stdout, stop}, ErrOut: os.Stderr}
	return Execute(ctx, NewCmdNodestate(streams), streams)
}

// cancelOnBrokenPipe cancels when the reader of stdout has gone away. It keeps the file's Fd,
// so that printers can tell a terminal and its width.
type cancelOnBrokenPipe struct {
	*os.File
	cancel func()
}

func (w cancelOnBrokenPipe) Write(p []byte) (int, error) {
	n, err := w.File.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		w.cancel()
	}
	return n, err
}

// Execute runs the command and turns its error into a message on stderr and an exit code.
func Execute(ctx context.Context, root *cobra.Command, streams genericiooptions.IOStreams) int {
	err := root.ExecuteContext(ctx)
	if running != nil {
		if perr := running.stop(); perr != nil {
			fmt.Fprintln(streams.ErrOut, "error: --profile: "+perr.Error())
		}
		running = nil
	}
	if err == nil {
		return 0
	}
	var exit *cmdutil.ExitError
	if errors.As(err, &exit) {
		if exit.Message != "" {
			fmt.Fprintln(streams.ErrOut, "error: "+exit.Message)
		}
		return exit.Code
	}
	// Not from a command's Run (RunE gives those an exit code): cobra's own parsing failed.
	fmt.Fprintln(streams.ErrOut, "error: "+err.Error())
	return cmdutil.ExitUsage
}

// addKlogFlags adds kubectl's -v. At the default level client-go's own log lines (such as the
// copy errors every exec stream logs when Ctrl-C cancels it) are dropped: the command reports
// what went wrong itself.
func addKlogFlags(root *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	root.PersistentFlags().AddGoFlag(fs.Lookup("v"))
	root.PersistentPreRun = func(*cobra.Command, []string) {
		if fs.Lookup("v").Value.String() == "0" {
			_ = fs.Set("logtostderr", "false")
			_ = fs.Set("stderrthreshold", "FATAL")
			klog.SetOutput(io.Discard)
		}
	}
}
