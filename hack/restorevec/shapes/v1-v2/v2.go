// 1.18-1.35: V2 files (pod -> container -> set), restored by ../reader, whose state holds
// nothing beyond V2's.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const format = "cpu-v2"

func fill(cp *state.CPUManagerCheckpoint, c restorevec.Case) {
	for pod, containers := range c.Entries {
		cp.Entries[pod] = containers
	}
}

func restoredMore(state.State, map[string]any) {}
