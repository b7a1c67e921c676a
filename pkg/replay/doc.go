// Package replay is one pure replay of the kubelet's resource managers: the topology manager,
// the CPU manager and the memory manager, built and started as NewContainerManager and
// ContainerManager.Start do (doctor's start prediction), then admitting pods as the kubelet's
// resource admit handler does (the topology manager's Admit, calling the managers as hint
// providers). Release differences are rows of data (releases.go, gates.go).
//
// The files follow the kubelet's pkg/kubelet/cm, so that a reader can hold the two side by
// side; the package is flat, so a file of cpumanager/ or memorymanager/ carries its manager's
// prefix, and a file of topologymanager/ keeps its name:
//
//	topologymanager/topology_manager.go      topology_manager.go (TopologyHint, HintProvider)
//	topologymanager/policy.go                policy.go, hint_merger.go
//	topologymanager/policy_*.go              policy_none.go, policy_best_effort.go,
//	                                         policy_restricted.go, policy_single_numa_node.go,
//	                                         policy_options.go
//	topologymanager/scope*.go                scope.go, scope_none.go, scope_container.go,
//	                                         scope_pod.go
//	topologymanager/numa_info.go, bitmask/   numa_info.go, bitmask.go
//	cpumanager/cpu_manager.go                cpu_manager.go
//	cpumanager/policy*.go                    cpu_policy.go, cpu_policy_none.go,
//	                                         cpu_policy_static.go, cpu_policy_options.go
//	cpumanager/cpu_assignment.go             cpu_assignment.go
//	cpumanager/state/, topology/             cpu_state.go, cpu_topology.go
//	memorymanager/memory_manager.go          memory_manager.go
//	memorymanager/policy*.go                 memory_policy.go, memory_policy_none.go,
//	                                         memory_policy_static.go
//	memorymanager/state/                     memory_state.go
//	cm/admission/errors.go                   errors.go
//
// The rest is the kubelet around the managers: kubelet.go (Start: gates, config, the managers
// in the kubelet's order), admit.go (the admitted pods a Node stacks), config.go (the
// KubeletConfiguration), pod.go (the pod's QoS and resources as the managers read them).
package replay
