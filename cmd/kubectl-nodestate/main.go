// Command kubectl-nodestate reads the kubelet's resource-manager checkpoints.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(cmd.Execute(cmd.NewCmdNodestate(streams), streams))
}
