// Command restorevec for kubelet v1.17.17 (1.12-1.17 row): writes V1 cpu_manager_state files
// (container ID -> set) with the real checkpoint code and restores files with the real
// state.NewCheckpointState (no runtime: 1.17 reads only V1, keyed by container ID). See ../README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

func main() {
	restorevec.Main(restorevec.Release{
		Name:    "v1.17.17",
		Writers: []restorevec.Writer{{Format: "cpu-v1", Write: write}},
		Readers: []restorevec.Reader{{}},
		Restore: restore,
	})
}

func write(dir string, c restorevec.Case) (any, error) {
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return nil, err
	}
	cp := state.NewCPUManagerCheckpoint()
	cp.PolicyName, cp.DefaultCPUSet, cp.Entries = "static", c.DefaultCPUSet, c.V1Entries()
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	back := state.NewCPUManagerCheckpoint()
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	return map[string]any{"policyName": back.PolicyName, "defaultCpuSet": back.DefaultCPUSet, "entries": back.Entries}, nil
}

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
