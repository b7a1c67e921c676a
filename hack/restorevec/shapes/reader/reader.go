// The restore of every 1.18+ release: the real state.NewCheckpointState (policy "static", as the
// files say) on a runtime that knows the files' containers (V1 files are migrated through it),
// and the restored sets as texts. Where the container map lives and whether the restore takes a
// logger, the files linked beside this one say (containermap_*.go, state_*.go); what the state
// holds beyond V2's, the shape's restoredMore.
package main

import (
	"fmt"

	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
)

func restore(dir string, containers []restorevec.Container) (any, error) {
	runtime := newContainerMap()
	for _, c := range containers {
		runtime.Add(c.PodUID, c.Name, c.ID)
	}
	st, err := newCheckpointState(dir, name, "static", runtime)
	if err != nil {
		return nil, err
	}
	restored := map[string]any{"policyName": "static", "defaultCpuSet": st.GetDefaultCPUSet().String(),
		"entries": texts(st.GetCPUAssignments(), stringOf)}
	restoredMore(st, restored)
	return restored, nil
}

// texts is a value per pod and container, as text.
func texts[V any](values map[string]map[string]V, text func(V) string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for pod, containers := range values {
		out[pod] = map[string]string{}
		for container, v := range containers {
			out[pod][container] = text(v)
		}
	}
	return out
}

// stringOf is a CPU set's text (its package moved: pkg/kubelet/cm/cpuset, then k8s.io/utils/cpuset).
func stringOf[S fmt.Stringer](s S) string { return s.String() }
