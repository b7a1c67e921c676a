// Command restorevec for kubelet v1.18.20 (first release of the 1.18-1.21 row: V2, V1 migrated): writes V2 cpu_manager_state files (pod ->
// container -> set) with the real checkpoint code and restores files with the real
// state.NewCheckpointState, V1 files migrated through a runtime that knows their containers.
// See ../README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

func main() {
	restorevec.Main(restorevec.Release{
		Name:    "v1.18.20",
		Writers: []restorevec.Writer{{Format: "cpu-v2", Write: write}},
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
	cp.PolicyName, cp.DefaultCPUSet = "static", c.DefaultCPUSet
	for pod, containers := range c.Entries {
		cp.Entries[pod] = containers
	}
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	back := state.NewCPUManagerCheckpoint()
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	return map[string]any{"policyName": back.PolicyName, "defaultCpuSet": back.DefaultCPUSet, "entries": back.Entries}, nil
}

func restore(dir string, containers []restorevec.Container) (any, error) {
	runtime := containermap.NewContainerMap()
	for _, c := range containers {
		runtime.Add(c.PodUID, c.Name, c.ID)
	}
	st, err := state.NewCheckpointState(dir, name, "static", runtime)
	if err != nil {
		return nil, err
	}
	entries := map[string]map[string]string{}
	for pod, cs := range st.GetCPUAssignments() {
		entries[pod] = map[string]string{}
		for c, set := range cs {
			entries[pod][c] = set.String()
		}
	}
	return map[string]any{"policyName": "static", "defaultCpuSet": st.GetDefaultCPUSet().String(), "entries": entries}, nil
}
