// The restore of 1.18-1.34, without a logger.
package main

import "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"

var newCheckpointState = state.NewCheckpointState
