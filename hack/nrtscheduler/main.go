// Command nrt-scheduler is kube-scheduler with the upstream NodeResourceTopologyMatch plugin
// (scheduler-plugins, pinned in third_party/), built the way out-of-tree plugins are: the
// baseline our kubelet-replaying filter is measured against (docs/scheduler-baseline.md).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // the REST client's metrics, as upstream's main
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as upstream's main
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// The plugins' args types, their defaulting and conversion, registered in kube-scheduler's
	// config scheme: without it a pluginConfig for NodeResourceTopologyMatch does not decode.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(noderesourcetopology.Name, noderesourcetopology.New))
	os.Exit(cli.Run(command))
}
