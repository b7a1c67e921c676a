package replay

// The topology manager (topologymanager/topology_manager.go): a scope over a policy. Its hint
// providers give NUMA hints; the scope merges them by the policy into one affinity per
// container (container scope) or per pod (pod scope), stores it for the providers' Allocate,
// and refuses a pod whose merged hint the policy does not admit.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// TopologyHint is a NUMA affinity and whether it is preferred. An affinity of 0 stands for
// the kubelet's nil ("any NUMA node"): no provider or merge ever yields an empty mask.
type TopologyHint struct {
	NUMANodeAffinity BitMask
	Preferred        bool
}

// HintProvider is what a resource manager offers the topology manager: its hints for a
// container (container scope) or a pod (pod scope), and the allocation the scope asks for
// once the pod's affinity is stored.
type HintProvider interface {
	GetTopologyHints(pod *v1.Pod, container *v1.Container) map[string][]TopologyHint
	GetPodTopologyHints(pod *v1.Pod) map[string][]TopologyHint
	Allocate(pod *v1.Pod, container *v1.Container) error
}

// TopologyManager is topologymanager.manager: the scope does the work.
type TopologyManager struct {
	scope topologyScope
}

// newTopologyManager is topologymanager.NewManager.
func newTopologyManager(e *env) (*TopologyManager, error) {
	name, scopeName := e.cfg.TopologyPolicy(), e.cfg.TopologyScope()
	// With policy none the scope does not matter: the kubelet short-circuits before the options.
	if name == TopologyPolicyNone {
		return &TopologyManager{scope: newNoneScope()}, nil
	}
	opts, err := newTopologyPolicyOptions(e)
	if err != nil {
		return nil, err
	}
	numa, err := newNUMAInfo(e.machine, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot discover NUMA topology: %w", err)
	}
	if len(numa.nodes) > opts.MaxAllowableNUMANodes {
		return nil, fmt.Errorf("unsupported on machines with more than %v NUMA Nodes", opts.MaxAllowableNUMANodes)
	}
	var policy topologyPolicy
	switch name {
	case TopologyPolicyBestEffort:
		policy = newBestEffortPolicy(numa, opts)
	case TopologyPolicyRestricted:
		policy = newRestrictedPolicy(numa, opts)
	case TopologyPolicySingleNumaNode:
		policy = newSingleNumaNodePolicy(numa, opts)
	default:
		return nil, fmt.Errorf("unknown policy: \"%s\"", name)
	}
	var scope topologyScope
	switch scopeName {
	case TopologyScopeContainer:
		scope = newContainerScope(policy)
	case TopologyScopePod:
		scope = newPodScope(policy)
	default:
		return nil, fmt.Errorf("unknown scope: \"%s\"", scopeName)
	}
	return &TopologyManager{scope: scope}, nil
}

// GetPolicy is the policy the scope merges by.
func (m *TopologyManager) GetPolicy() topologyPolicy { return m.scope.GetPolicy() }

// GetAffinity is the store's answer for a container; the zero hint when none was stored.
func (m *TopologyManager) GetAffinity(podUID, container string) TopologyHint {
	return m.scope.GetAffinity(podUID, container)
}

// AddHintProvider registers a provider: the scope asks the providers in the order they were
// added (the kubelet's: device manager, CPU manager, memory manager).
func (m *TopologyManager) AddHintProvider(p HintProvider) { m.scope.AddHintProvider(p) }

// Admit is the manager's Admit for operation "add". podLevel: the pod has pod-level resources
// and the managers replay them (PodLevelResourceManagers).
func (m *TopologyManager) Admit(pod *v1.Pod, podLevel bool) AdmitResult {
	return m.scope.Admit(pod, podLevel)
}
