package decode

import (
	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/cpustate"
)

// The cpu_manager_state layouts, pre-initialised as the kubelet's readers do (an absent
// "entries" hashes as "map[]").
var (
	cpuV1Layout = &layout{
		New: func() any { return &state.CPUManagerCheckpointV1{Entries: map[string]string{}} },
		Model: func(v, _ any) any {
			cp := v.(*state.CPUManagerCheckpointV1)
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, ContainerIDEntries: cp.Entries}
		},
	}
	cpuV2Layout = &layout{
		New: func() any { return &state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}} },
		Model: func(v, _ any) any {
			cp := v.(*state.CPUManagerCheckpointV2)
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, Entries: cp.Entries}
		},
	}
	cpuV3Layout = &layout{
		New: func() any {
			return &state.CPUManagerCheckpointV3{Entries: map[string]map[string]string{}, PodEntries: state.PodCPUAssignments{}}
		},
		Model: func(v, _ any) any {
			cp := v.(*state.CPUManagerCheckpointV3)
			return &CPUState{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, Entries: cp.Entries, PodEntries: podCPUSets(cp.PodEntries)}
		},
	}
	cpuV4Layout = &layout{
		New: func() any {
			return &state.CPUManagerCheckpoint{CPUManagerCheckpointV2: state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}}
		},
		Payload: func(v any) (any, error) {
			data := &state.CPUManagerCheckpointData{}
			return data, unmarshalPayload(v.(*state.CPUManagerCheckpoint).Data, data)
		},
		PayloadError: "failed to deserialize cpu manager checkpoint data: %w",
		Model: func(_, payload any) any {
			d := payload.(*state.CPUManagerCheckpointData)
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
	}
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

// hasDataFields reports whether a V4/V3 file carries its own data document, in which case 1.37+
// does not fall back to older layouts when it fails.
func hasDataFields(v any) bool {
	return fieldString(v, "Data") != "" || fieldUint(v, "DataChecksum") != 0
}
