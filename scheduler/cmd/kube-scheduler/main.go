// Command kube-scheduler is kube-scheduler with the NodeStateAdmission plugin compiled in, the
// out-of-tree way: a profile enables it (deploy/scheduler). The upstream
// NodeResourceTopologyMatch, which NodeStateAdmission runs as its fallback, is registered too,
// so that a profile can enable its Score (NUMA-aware scoring from the nodes'
// NodeResourceTopology objects, which node-publish writes) beside this plugin's Filter.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"

	"github.com/kubectl-nodestate/kubectl-nodestate/scheduler/pkg/nodestateadmission"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(nodestateadmission.Name, nodestateadmission.New),
		app.WithPlugin(noderesourcetopology.Name, noderesourcetopology.New))
	os.Exit(cli.Run(command))
}
