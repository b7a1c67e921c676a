// Command restorevec for kubelet 1.37+ (1.37+ row; the release is the module's k8s.io/kubernetes):
// writes V4 cpu_manager_state files (the data document and its dataChecksum; baselines only with
// InPlacePodVerticalScalingExclusiveCPUs) with the real checkpoint code, and restores files with
// the real state.NewCheckpointState (../reader) under each gate setting. See
// hack/restorevec/README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

const (
	plrm      = "+PodLevelResourceManagers"
	exclusive = plrm + "+InPlacePodVerticalScalingExclusiveCPUs"
)

func main() {
	restorevec.Main(restorevec.Release{
		Writers: []restorevec.Writer{
			{Format: "cpu-v4", Write: write},
			// Baselines are only written with the gates on.
			{Suffix: exclusive, Format: "cpu-v4", OnlyGated: true, Write: write},
		},
		Readers: []restorevec.Reader{{},
			{Suffix: plrm, Gates: "PodLevelResourceManagers=true"},
			{Suffix: exclusive, Gates: "PodLevelResourceManagers=true,InPlacePodVerticalScalingExclusiveCPUs=true"}},
		SetGates: utilfeature.DefaultMutableFeatureGate.Set,
		Restore:  restore,
	})
}

// write stores the case through the kubelet's checkpoint manager, which computes both checksums.
func write(dir string, c restorevec.Case) (any, error) {
	cp := &state.CPUManagerCheckpoint{}
	cp.CheckpointData = state.CPUManagerCheckpointData{PolicyName: "static", DefaultCPUSet: c.DefaultCPUSet, Entries: c.Entries}
	for pod, containers := range c.Baselines {
		if cp.CheckpointData.Baselines == nil {
			cp.CheckpointData.Baselines = map[string]map[string]state.ContainerCPUs{}
		}
		cp.CheckpointData.Baselines[pod] = map[string]state.ContainerCPUs{}
		for name, set := range containers {
			cp.CheckpointData.Baselines[pod][name] = state.ContainerCPUs{Baseline: set}
		}
	}
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return nil, err
	}
	if err := m.CreateCheckpoint(name, cp); err != nil {
		return nil, err
	}
	back := &state.CPUManagerCheckpoint{}
	if err := m.GetCheckpoint(name, back); err != nil {
		return nil, err
	}
	d := back.CheckpointData
	baselines := texts(d.Baselines, func(b state.ContainerCPUs) string { return b.Baseline })
	return map[string]any{"policyName": d.PolicyName, "defaultCpuSet": d.DefaultCPUSet, "entries": d.Entries, "baselines": baselines}, nil
}

// restoredMore adds what the 1.37 state holds beyond V2's: the baselines and the pods' sets.
func restoredMore(st state.State, restored map[string]any) {
	pods := map[string]string{}
	for pod, e := range st.GetPodCPUAssignments() {
		pods[pod] = e.CPUSet.String()
	}
	baselines := texts(st.GetCPUBaselines(), func(b state.ContainerCPUBaseline) string { return b.Baseline.String() })
	restored["podEntries"], restored["baselines"] = pods, baselines
}
