// Command kubectl-nodestate reads the kubelet's resource-manager checkpoints.
package main

import (
	"os"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmd"
)

func main() { os.Exit(cmd.Main()) }
