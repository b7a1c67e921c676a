// Command kube-scheduler is kube-scheduler with the NodeStateAdmission plugin compiled in, the
// out-of-tree way: a profile enables it (deploy/scheduler).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kubectl-nodestate/kubectl-nodestate/scheduler/pkg/nodestateadmission"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(nodestateadmission.Name, nodestateadmission.New))
	os.Exit(cli.Run(command))
}
