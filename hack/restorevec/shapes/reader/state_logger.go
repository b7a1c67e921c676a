// The restore of 1.35+, which takes a logger first.
package main

import (
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

func newCheckpointState(dir, name, policy string, runtime containermap.ContainerMap) (state.State, error) {
	return state.NewCheckpointState(klog.Background(), dir, name, policy, runtime)
}
