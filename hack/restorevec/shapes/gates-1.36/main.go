// Command restorevec for kubelet 1.36 (1.36 row; the release is the module's k8s.io/kubernetes):
// writes V2 cpu_manager_state files (PodLevelResourceManagers off) and V3 files (on: podEntries,
// no checksum rename) with the real checkpoint code, and restores files with the real
// state.NewCheckpointState (../reader) under each gate setting (V2 then V1 off; V3, V2, V1 on).
// See hack/restorevec/README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

func main() {
	restorevec.Main(restorevec.Release{
		Writers: []restorevec.Writer{
			{Format: "cpu-v2", Write: writeV2},
			{Suffix: "+PodLevelResourceManagers", Format: "cpu-v3", Write: writeV3},
		},
		Readers:  []restorevec.Reader{{}, {Suffix: "+PodLevelResourceManagers", Gates: "PodLevelResourceManagers=true"}},
		SetGates: utilfeature.DefaultMutableFeatureGate.Set,
		Restore:  restore,
	})
}

// writeV2 is what 1.36 stores with the gate off (storeState: a CPUManagerCheckpointV2, whose
// MarshalCheckpoint hashes it under the name 1.18-1.35 verify).
func writeV2(dir string, c restorevec.Case) (any, error) {
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return nil, err
	}
	cp := &state.CPUManagerCheckpointV2{PolicyName: "static", DefaultCPUSet: c.DefaultCPUSet, Entries: map[string]map[string]string{}}
	for pod, containers := range c.Entries {
		cp.Entries[pod] = containers
	}
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	// As newCPUManagerCheckpointV2 (unexported) makes it for GetCheckpoint: the empty map is
	// hashed as map[], a nil one would not be.
	back := &state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	return map[string]any{"policyName": back.PolicyName, "defaultCpuSet": back.DefaultCPUSet, "entries": back.Entries}, nil
}

// writeV3 is what it stores with the gate on (a CPUManagerCheckpoint, podEntries empty here).
func writeV3(dir string, c restorevec.Case) (any, error) {
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return nil, err
	}
	cp := &state.CPUManagerCheckpoint{PolicyName: "static", DefaultCPUSet: c.DefaultCPUSet,
		Entries: map[string]map[string]string{}, PodEntries: state.PodCPUAssignments{}}
	for pod, containers := range c.Entries {
		cp.Entries[pod] = containers
	}
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	back := &state.CPUManagerCheckpoint{Entries: map[string]map[string]string{}, PodEntries: state.PodCPUAssignments{}} // as newCPUManagerCheckpointV3
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	pods := map[string]string{}
	for pod, e := range back.PodEntries {
		pods[pod] = e.CPUSet.String()
	}
	return map[string]any{"policyName": back.PolicyName, "defaultCpuSet": back.DefaultCPUSet, "entries": back.Entries, "podEntries": pods}, nil
}

// restoredMore adds what the 1.36 state holds beyond V2's: the pods' sets (V3).
func restoredMore(st state.State, restored map[string]any) {
	pods := map[string]string{}
	for pod, e := range st.GetPodCPUAssignments() {
		pods[pod] = e.CPUSet.String()
	}
	restored["podEntries"] = pods
}
