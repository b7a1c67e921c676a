// Command restorevec for kubelet v1.37.1 (1.37+ row): writes V4 cpu_manager_state files (the
// data document and its dataChecksum; baselines only with InPlacePodVerticalScalingExclusiveCPUs)
// with the real checkpoint code, and restores files with the real state.NewCheckpointState under
// each gate setting. See ../README.md.
package main

import (
	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

const name = "cpu_manager_state"

const (
	plrm      = "+PodLevelResourceManagers"
	exclusive = plrm + "+InPlacePodVerticalScalingExclusiveCPUs"
)

func main() {
	restorevec.Main(restorevec.Release{
		Name: "v1.37.1",
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
	baselines := map[string]map[string]string{}
	for pod, containers := range d.Baselines {
		baselines[pod] = map[string]string{}
		for name, b := range containers {
			baselines[pod][name] = b.Baseline
		}
	}
	return map[string]any{"policyName": d.PolicyName, "defaultCpuSet": d.DefaultCPUSet, "entries": d.Entries, "baselines": baselines}, nil
}

func restore(dir string, containers []restorevec.Container) (any, error) {
	runtime := containermap.NewContainerMap()
	for _, c := range containers {
		runtime.Add(c.PodUID, c.Name, c.ID)
	}
	st, err := state.NewCheckpointState(klog.Background(), dir, name, "static", runtime)
	if err != nil {
		return nil, err
	}
	entries := map[string]map[string]string{}
	for pod, containers := range st.GetCPUAssignments() {
		entries[pod] = map[string]string{}
		for name, set := range containers {
			entries[pod][name] = set.String()
		}
	}
	baselines := map[string]map[string]string{}
	for pod, containers := range st.GetCPUBaselines() {
		baselines[pod] = map[string]string{}
		for name, b := range containers {
			baselines[pod][name] = b.Baseline.String()
		}
	}
	pods := map[string]string{}
	for pod, e := range st.GetPodCPUAssignments() {
		pods[pod] = e.CPUSet.String()
	}
	return map[string]any{"policyName": "static", "defaultCpuSet": st.GetDefaultCPUSet().String(),
		"entries": entries, "baselines": baselines, "podEntries": pods}, nil
}
