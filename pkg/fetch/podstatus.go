package fetch

import corev1 "k8s.io/api/core/v1"

// ContainerStatus is one container of a pod's status as the node's cgroups are matched to it:
// its ID with the runtime's scheme ("containerd://...", "cri-o://..."), and whether it runs.
type ContainerStatus struct {
	Name, ID string
	Running  bool
	// Restarted: the container ran before (restartCount > 0), so the runtime may list its
	// exited instance beside the running one (the kubelet keeps the last dead one).
	Restarted bool `json:",omitempty"`
}

// containerStatuses lists a pod's containers that have an ID (init and ephemeral ones too).
func containerStatuses(p *corev1.Pod) []ContainerStatus {
	var out []ContainerStatus
	for _, statuses := range [][]corev1.ContainerStatus{
		p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses,
	} {
		for _, cs := range statuses {
			if cs.ContainerID != "" {
				out = append(out, ContainerStatus{Name: cs.Name, ID: cs.ContainerID, Running: cs.State.Running != nil, Restarted: cs.RestartCount > 0})
			}
		}
	}
	return out
}
