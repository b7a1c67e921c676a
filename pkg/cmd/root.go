// Package cmd wires the kubectl-nodestate subcommands together. Each subcommand lives in its
// own package with an Options struct (Complete / Validate / Run), as kubectl's commands do.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	// Cloud kubeconfigs (exec, oidc, ...) must work as they do for kubectl.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/cleanup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd/collect"
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

	root.AddCommand(verify.NewCmdVerify(configFlags, streams))
	for _, c := range show.NewCmds(configFlags, streams) {
		root.AddCommand(c)
	}
	root.AddCommand(collect.NewCmdCollect(configFlags, streams))
	root.AddCommand(cleanup.NewCmdCleanup(configFlags, streams))
	root.AddCommand(versioncmd.NewCmdVersion(streams))
	return root
}

// Execute runs the command and turns its error into a message on stderr and an exit code.
func Execute(root *cobra.Command, streams genericiooptions.IOStreams) int {
	// Ctrl-C and SIGTERM cancel the context: fan-out stops starting nodes and every debug pod
	// already created is deleted before the command returns.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
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
	fmt.Fprintln(streams.ErrOut, "error: "+err.Error())
	return 1
}
