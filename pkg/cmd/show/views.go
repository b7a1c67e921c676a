package show

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

var views = []*view{
	{
		Use:   "cpus",
		Short: "Show which container holds which CPUs (cpu_manager_state)",
		Long: `
			Show the CPU manager's exclusive CPU assignments: container -> CPUs, pod-level
			assignments, and the shared pool, with pod UIDs resolved to namespace/name on live nodes.`,
		Example: `
			kubectl nodestate cpus worker-1
			kubectl nodestate cpus --from-dir ./var-lib-kubelet -o wide`,
		Kinds:       []nodestate.Kind{nodestate.KindCPU},
		WideCgroups: true,
	},
	{
		Use:   "memory",
		Short: "Show memory per NUMA node and who holds it (memory_manager_state)",
		Long: `
			Show the memory manager's state: each NUMA node's memory and hugepages (total,
			reserved, free), then the blocks each container holds and on which NUMA nodes.`,
		Example: `
			kubectl nodestate memory worker-1
			kubectl nodestate memory --from-file ./memory_manager_state -o yaml`,
		Kinds:       []nodestate.Kind{nodestate.KindMemory},
		WideCgroups: true,
	},
	{
		Use:   "devices",
		Short: "Show which container holds which devices, per NUMA node (kubelet_internal_checkpoint)",
		Long: `
			Show the device manager's allocations: for each container and resource, the device IDs
			it holds on each NUMA node ("none" for devices without topology).`,
		Example: `
			kubectl nodestate devices gpu-node-3
			kubectl nodestate devices --from-dir ./var-lib-kubelet -o json`,
		Kinds: []nodestate.Kind{nodestate.KindDevices},
	},
}

var claimsView = &view{
	Use:   "claims",
	Short: "Show the DRA claims prepared on a node (dra_manager_state)",
	Long: `
		Show the DRA manager's claims: each claim's pods, drivers, pool/device, requests and CDI
		device IDs, with the device health the kubelet recorded in dra_health_state when present.`,
	Example: `
		kubectl nodestate claims gpu-node-3
		kubectl nodestate claims --from-dir ./var-lib-kubelet -o wide`,
	Kinds: []nodestate.Kind{nodestate.KindDRA, nodestate.KindDRAHealth},
}

var podsView = &view{
	Use:   "pods",
	Short: "Show the resources the kubelet allocated and actuated per container (pod allocation files)",
	Long: `
		Show allocated_pods_state and actuated_pods_state (kubelet 1.33+), or
		pod_status_manager_state (1.27-1.32): the resources the kubelet admitted each container
		with, and those it last applied, which differ while an in-place resize is in progress.`,
	Example: `
		kubectl nodestate pods worker-1
		kubectl nodestate pods --from-dir ./var-lib-kubelet -o yaml`,
	Kinds: []nodestate.Kind{nodestate.KindAllocated, nodestate.KindActuated, nodestate.KindPodStatus},
}

func init() { views = append(views, claimsView, podsView) }
