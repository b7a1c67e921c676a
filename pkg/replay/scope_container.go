package replay

import v1 "k8s.io/api/core/v1"

// TopologyScopeContainer is the container scope's name (containerTopologyScope).
const TopologyScopeContainer = "container"

// containerScope is topologymanager.containerScope: one merged hint per container, each
// container allocated once its hint is stored.
type containerScope struct{ scope }

func newContainerScope(policy topologyPolicy) *containerScope {
	return &containerScope{newScope(TopologyScopeContainer, policy)}
}

func (s *containerScope) Admit(pod *v1.Pod, podLevel bool) AdmitResult {
	containers := podContainers(pod)
	for i := range containers {
		c := &containers[i]
		best, admit := s.calculateAffinity(pod, c)
		if !admit {
			err := error(errTopologyAffinity)
			if podLevel {
				err = reasonError{ReasonTopologyAffinity, podLevelAffinityPrefix + podLevelContainerScopeMsg}
			}
			res := podAdmitResult(err)
			res.RefusedContainer = c.Name
			return res
		}
		s.setTopologyHints(string(pod.UID), c.Name, best)
		if err := s.allocateAlignedResources(pod, c); err != nil {
			return podAdmitResult(err)
		}
	}
	return podAdmitResult(nil)
}

func (s *containerScope) accumulateProvidersHints(pod *v1.Pod, c *v1.Container) []map[string][]TopologyHint {
	var providersHints []map[string][]TopologyHint
	for _, p := range s.hintProviders {
		providersHints = append(providersHints, p.GetTopologyHints(pod, c))
	}
	return providersHints
}

func (s *containerScope) calculateAffinity(pod *v1.Pod, c *v1.Container) (TopologyHint, bool) {
	return s.policy.Merge(s.accumulateProvidersHints(pod, c))
}
