// Command restorevec for kubelet 1.15-1.35 (the release is the module's k8s.io/kubernetes):
// writes cpu_manager_state files with the real checkpoint code (state.NewCPUManagerCheckpoint,
// V1 or V2 as the release's type is) and restores files with the real state.NewCheckpointState.
// What differs by release, the files the module links beside this one say: v1.go (1.15-1.17) or
// v2.go and ../reader (1.18-1.35). See hack/restorevec/README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

func main() {
	restorevec.Main(restorevec.Release{
		Writers: []restorevec.Writer{{Format: format, Write: write}},
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
	fill(cp, c)
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	back := state.NewCPUManagerCheckpoint()
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	return map[string]any{"policyName": back.PolicyName, "defaultCpuSet": back.DefaultCPUSet, "entries": back.Entries}, nil
}
