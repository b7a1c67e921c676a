// 1.15-1.17 (1.12-1.17 row): V1 files (container ID -> set), restored without a runtime (1.17
// reads only V1, keyed by container ID).
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const format = "cpu-v1"

func fill(cp *state.CPUManagerCheckpoint, c restorevec.Case) { cp.Entries = c.V1Entries() }

func restore(dir string, _ []restorevec.Container) (any, error) {
	st, err := state.NewCheckpointState(dir, name, "static")
	if err != nil {
		return nil, err
	}
	entries := map[string]string{}
	for id, set := range st.GetCPUAssignments() {
		entries[id] = set.String()
	}
	return map[string]any{"policyName": "static", "defaultCpuSet": st.GetDefaultCPUSet().String(), "entries": entries}, nil
}
