package replay

// The topology manager's scope (topologymanager/scope.go): what every scope shares -- its
// policy, its hint providers in order, and the store of the affinities it chose.

import v1 "k8s.io/api/core/v1"

// topologyScope is topologymanager.Scope: none, container or pod.
type topologyScope interface {
	Name() string
	GetPolicy() topologyPolicy
	// Admit is the scope's Admit for operation "add". podLevel: the pod has pod-level
	// resources and the managers replay them (PodLevelResourceManagers).
	Admit(pod *v1.Pod, podLevel bool) AdmitResult
	AddHintProvider(h HintProvider)
	// providers are the hint providers in the order they were added.
	providers() []HintProvider
	// GetAffinity is topologymanager.Store.
	GetAffinity(podUID, containerName string) TopologyHint
}

// scope is topologymanager.scope.
type scope struct {
	name string
	// podTopologyHints: pod UID -> container name -> the affinity the scope chose.
	podTopologyHints map[string]map[string]TopologyHint
	hintProviders    []HintProvider
	policy           topologyPolicy
}

func newScope(name string, policy topologyPolicy) scope {
	return scope{name: name, podTopologyHints: map[string]map[string]TopologyHint{}, policy: policy}
}

func (s *scope) Name() string              { return s.name }
func (s *scope) GetPolicy() topologyPolicy { return s.policy }

func (s *scope) AddHintProvider(h HintProvider) { s.hintProviders = append(s.hintProviders, h) }

// GetAffinity is the stored affinity of a container; the zero hint when none was stored.
func (s *scope) GetAffinity(podUID, containerName string) TopologyHint {
	return s.podTopologyHints[podUID][containerName]
}

func (s *scope) setTopologyHints(podUID, containerName string, th TopologyHint) {
	if s.podTopologyHints[podUID] == nil {
		s.podTopologyHints[podUID] = map[string]TopologyHint{}
	}
	s.podTopologyHints[podUID][containerName] = th
}

// allocateAlignedResources asks every provider, in order, to allocate the container.
func (s *scope) allocateAlignedResources(pod *v1.Pod, c *v1.Container) error {
	for _, p := range s.hintProviders {
		if err := p.Allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

// admitPolicyNone allocates every container without hints.
func (s *scope) admitPolicyNone(pod *v1.Pod) AdmitResult {
	containers := podContainers(pod)
	for i := range containers {
		if err := s.allocateAlignedResources(pod, &containers[i]); err != nil {
			return podAdmitResult(err)
		}
	}
	return podAdmitResult(nil)
}
