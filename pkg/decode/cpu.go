package decode

import (
	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/cpustate"
)

// The cpu_manager_state layouts, pre-initialised as the kubelet's readers do (an absent
// "entries" hashes as "map[]").
var (
	cpuV1Layout = layoutOf(layoutSpec[state.CPUManagerCheckpointV1, noData]{
		New: func() *state.CPUManagerCheckpointV1 {
			return &state.CPUManagerCheckpointV1{Entries: map[string]string{}}
		},
		Model: func(cp *state.CPUManagerCheckpointV1, _ *noData) any {
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, ContainerIDEntries: cp.Entries}
		},
	})
	cpuV2Layout = layoutOf(layoutSpec[state.CPUManagerCheckpointV2, noData]{
		New: func() *state.CPUManagerCheckpointV2 {
			return &state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}
		},
		Model: func(cp *state.CPUManagerCheckpointV2, _ *noData) any {
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, Entries: cp.Entries}
		},
	})
	cpuV3Layout = layoutOf(layoutSpec[state.CPUManagerCheckpointV3, noData]{
		New: func() *state.CPUManagerCheckpointV3 {
			return &state.CPUManagerCheckpointV3{Entries: map[string]map[string]string{}, PodEntries: state.PodCPUAssignments{}}
		},
		Model: func(cp *state.CPUManagerCheckpointV3, _ *noData) any {
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, Entries: cp.Entries, PodEntries: podCPUSets(cp.PodEntries)}
		},
	})
	cpuV4Layout = layoutOf(layoutSpec[state.CPUManagerCheckpoint, state.CPUManagerCheckpointData]{
		New: func() *state.CPUManagerCheckpoint {
			return &state.CPUManagerCheckpoint{CPUManagerCheckpointV2: state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}}
		},
		// 1.37's UnmarshalCheckpoint decodes the data document before the checksum is verified.
		Data:      func(cp *state.CPUManagerCheckpoint) string { return cp.Data },
		DataError: "failed to deserialize cpu manager checkpoint data: %w",
		OwnData:   func(cp *state.CPUManagerCheckpoint) bool { return cp.Data != "" || cp.DataChecksum != 0 },
		Model: func(_ *state.CPUManagerCheckpoint, d *state.CPUManagerCheckpointData) any {
			out := &CPUState{PolicyName: d.PolicyName, DefaultCPUSet: d.DefaultCPUSet, Entries: d.Entries, PodEntries: podCPUSets(d.PodEntries)}
			for pod, containers := range d.Baselines {
				for name, c := range containers {
					if out.Baselines == nil {
						out.Baselines = map[string]map[string]string{}
					}
					if out.Baselines[pod] == nil {
						out.Baselines[pod] = map[string]string{}
					}
					out.Baselines[pod][name] = c.Baseline
				}
			}
			return out
		},
	})
)

func podCPUSets(in state.PodCPUAssignments) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for uid, e := range in {
		out[uid] = e.CPUSet.String()
	}
	return out
}
