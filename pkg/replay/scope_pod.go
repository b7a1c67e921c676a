package replay

import v1 "k8s.io/api/core/v1"

// TopologyScopePod is the pod scope's name (podTopologyScope).
const TopologyScopePod = "pod"

// podScope is topologymanager.podScope: one merged hint for the whole pod, stored for each
// of its containers.
type podScope struct{ scope }

func newPodScope(policy topologyPolicy) *podScope {
	return &podScope{newScope(TopologyScopePod, policy)}
}

// podAllocator is a provider that allocates a pod with pod-level resources at once.
type podAllocator interface {
	AllocatePod(pod *v1.Pod) error
}

func (s *podScope) Admit(pod *v1.Pod, podLevel bool) AdmitResult {
	best, admit := s.calculateAffinity(pod)
	if !admit {
		if podLevel {
			return podAdmitResult(reasonError{ReasonTopologyAffinity, podLevelAffinityPrefix + podLevelPodScopeMsg})
		}
		return podAdmitResult(errTopologyAffinity)
	}
	containers := podContainers(pod)
	if podLevel {
		for i := range containers {
			s.setTopologyHints(string(pod.UID), containers[i].Name, best)
		}
		for _, p := range s.hintProviders {
			if pa, ok := p.(podAllocator); ok {
				if err := pa.AllocatePod(pod); err != nil {
					return podAdmitResult(err)
				}
			}
		}
		return podAdmitResult(nil)
	}
	for i := range containers {
		s.setTopologyHints(string(pod.UID), containers[i].Name, best)
		if err := s.allocateAlignedResources(pod, &containers[i]); err != nil {
			return podAdmitResult(err)
		}
	}
	return podAdmitResult(nil)
}

func (s *podScope) accumulateProvidersHints(pod *v1.Pod) []map[string][]TopologyHint {
	var providersHints []map[string][]TopologyHint
	for _, p := range s.hintProviders {
		providersHints = append(providersHints, p.GetPodTopologyHints(pod))
	}
	return providersHints
}

func (s *podScope) calculateAffinity(pod *v1.Pod) (TopologyHint, bool) {
	return s.policy.Merge(s.accumulateProvidersHints(pod))
}
