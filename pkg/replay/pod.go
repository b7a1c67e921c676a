package replay

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// podGates are the feature gates that decide how the managers read a pod's resources.
type podGates struct {
	levelResources bool // PodLevelResources: pod.spec.resources exist
	levelManagers  bool // PodLevelResourceManagers (releases with pod-level entries): the managers allocate them
	fixQOS         bool // PodLevelResourcesFixKubeletQOSClass
	// managersRelease: the release has pod-level entries; skipRelease: it skips such pods.
	managersRelease, skipRelease bool
}

// skips: the managers leave a pod with pod-level resources alone (releases.go
// SkipsPodLevelPods, PodLevelEntries).
func (g podGates) skips(pod *v1.Pod) bool {
	switch {
	case g.managersRelease:
		return !(g.levelResources && g.levelManagers) && isPodLevelResourcesSet(pod)
	case g.skipRelease:
		return g.levelResources && isPodLevelResourcesSet(pod)
	}
	return false
}

// podLevel: the managers allocate this pod's pod-level resources.
func (g podGates) podLevel(pod *v1.Pod) bool {
	return g.levelManagers && isPodLevelResourcesSet(pod)
}

// IsRestartableInitContainer: a sidecar (restartPolicy Always on an init container).
func IsRestartableInitContainer(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// isPodLevelResourcesSet is component-helpers' IsPodLevelResourcesSet.
func isPodLevelResourcesSet(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, list := range []v1.ResourceList{r.Requests, r.Limits} {
		for name := range list {
			if name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				return true
			}
		}
	}
	return false
}

// isContainerEquivalentQOSGuaranteed: the container's own CPU and memory requests equal their
// limits and are set (cm/qos).
func isContainerEquivalentQOSGuaranteed(c *v1.Container) bool {
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || !req.Equal(lim) {
			return false
		}
	}
	return true
}

// podQOS is the kubelet's GetPodQOS (apis/core/v1/helper/qos): the status's class, else
// computed from requests and limits of CPU and memory (pod-level ones when the pod has them
// and the release's gates read them).
func (g podGates) podQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if g.levelResources && pod.Spec.Resources != nil && (!g.fixQOS || isPodLevelResourcesSet(pod)) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var qos v1.PodQOSClass
	for _, c := range podContainers(pod) {
		cq := requirementsQOS(&c.Resources)
		switch {
		case cq == v1.PodQOSBurstable:
			return cq
		case qos == "":
			qos = cq
		case qos != cq:
			return v1.PodQOSBurstable
		}
	}
	if qos == "" {
		return v1.PodQOSBestEffort
	}
	return qos
}

func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	var qos v1.PodQOSClass
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		var q v1.PodQOSClass
		switch {
		case !req.Equal(lim):
			return v1.PodQOSBurstable
		case req.IsZero():
			q = v1.PodQOSBestEffort
		default:
			q = v1.PodQOSGuaranteed
		}
		if qos == "" {
			qos = q
		} else if qos != q {
			return v1.PodQOSBurstable
		}
	}
	return qos
}

// podContainers are the pod's init containers, then its containers: the order the kubelet
// admits and allocates them.
func podContainers(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}
