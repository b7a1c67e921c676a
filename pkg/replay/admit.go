package replay

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// ContainerAdmission is what the managers give one container of an admitted pod.
type ContainerAdmission struct {
	Name string
	// CPUs is GetCPUAffinity (the cpuset the kubelet writes); empty under policy none.
	CPUs cpuset.CPUSet
	// Exclusive: the container has its own CPUs (else it runs in the shared pool).
	Exclusive bool
	// MemoryNUMANodes is GetMemoryNUMANodes (cpuset.mems); nil when nothing is pinned.
	MemoryNUMANodes []int
	MemoryBlocks    []decode.MemoryBlock
	// Devices is the device manager's GetDevices: resource -> sorted device IDs (nil: none).
	Devices map[string][]string
	// DeviceNUMANodes is, per resource, each device with its NUMA nodes (empty: no topology).
	DeviceNUMANodes map[string]map[string][]int
	// DevicePicks are, per resource, how the kubelet came to the devices when it had a choice
	// (a resource not listed was a forced pick).
	DevicePicks map[string]DevicePick
}

// PodAdmission is the resource admit handler's answer for one pod.
type PodAdmission struct {
	AdmitResult
	// Containers, init and sidecar containers first, for admitted pods.
	Containers []ContainerAdmission
	// PodCPUs is the pod-level CPU set (pod-level resources), empty otherwise.
	PodCPUs cpuset.CPUSet
	// FreeCPUs and FreeMemory are the node as the pod found it, once the managers dropped what
	// refused pods left (the numbers behind a refusal).
	FreeCPUs   cpuset.CPUSet
	FreeMemory map[int]map[string]uint64
	// Devices are the devices as the pod found them (DeviceManager.Survey), when replayed.
	Devices map[string][]DeviceStatus
}

// markCheckpointOwnersActive: the pods owning checkpoint entries run (with those containers),
// those of them the kubelet counts active when that is known (active non-nil).
func (n *Node) markCheckpointOwnersActive(active map[string]bool) {
	activate := func(pod, ctr string) {
		if active == nil || active[pod] {
			n.activate(pod, ctr)
		}
	}
	if n.CPU != nil && n.CPU.state != nil {
		for pod, ctrs := range n.CPU.state.assignments {
			for ctr := range ctrs {
				activate(pod, ctr)
			}
		}
	}
	if n.Memory != nil && n.Memory.static() != nil {
		for pod, ctrs := range n.Memory.static().assignments {
			for ctr := range ctrs {
				activate(pod, ctr)
			}
		}
	}
	if n.Devices != nil {
		for pod, ctrs := range n.Devices.owners() {
			for _, ctr := range ctrs {
				activate(pod, ctr)
			}
		}
	}
}

func (n *Node) activate(pod, ctr string) {
	if n.active[pod] == nil {
		n.active[pod] = map[string]bool{}
	}
	n.active[pod][ctr] = true
}

// ready makes the node as pod finds it: the pod active (the kubelet adds it to its pod manager
// first). What refused pods left goes when each manager is first called for it (its gc).
func (n *Node) ready(pod *v1.Pod) {
	for _, c := range podContainers(pod) {
		n.activate(string(pod.UID), c.Name)
	}
	n.foundCPUs, n.foundMemory = nil, nil
}

// found is the free CPUs and memory as the pod found them: when the managers first looked, or,
// where the admission never reached them, as they are (nothing dropped).
func (n *Node) found() (cpuset.CPUSet, map[int]map[string]uint64) {
	cpus, memory := n.freeCPUs(), n.freeMemory()
	if n.foundCPUs != nil {
		cpus = *n.foundCPUs
	}
	if n.foundMemory != nil {
		memory = n.foundMemory
	}
	return cpus, memory
}

// Admit is the kubelet admitting pod (operation "add") through the topology manager, the
// handler that allocates CPUs and memory. Admissions stack: an admitted pod keeps its
// resources, a rejected one's partial allocations are dropped before the next admission, as
// the managers' removeStaleState does.
func (n *Node) Admit(pod *v1.Pod) PodAdmission {
	if n.stuckOn != "" {
		// The kubelet admits pods one at a time; one whose admission never returns holds the rest.
		return PodAdmission{AdmitResult: AdmitResult{NotReached: true, Message: "not reached: the kubelet's admission is stuck on pod " + n.stuckOn}}
	}
	uid := string(pod.UID)
	n.ready(pod)
	var res PodAdmission
	if n.Devices != nil {
		res.Devices = n.Devices.Survey()
	}
	res.AdmitResult = n.Topology.Admit(pod, n.env.podGates.levelManagers && isPodLevelResourcesSet(pod))
	res.FreeCPUs, res.FreeMemory = n.found()
	if res.Hangs {
		n.stuckOn = pod.Name
	}
	if !res.Admit {
		delete(n.active, uid)
		return res
	}
	for _, c := range podContainers(pod) {
		ca := ContainerAdmission{Name: c.Name, CPUs: cpuset.New()}
		if n.CPU != nil {
			ca.CPUs, ca.Exclusive = n.CPU.CPUAffinity(uid, c.Name)
		}
		if n.Memory != nil {
			ca.MemoryNUMANodes = n.Memory.MemoryNUMANodes(uid, c.Name)
			ca.MemoryBlocks = cloneBlocks(n.Memory.MemoryBlocks(uid, c.Name))
		}
		if n.Devices != nil {
			ca.Devices = n.Devices.Devices(uid, c.Name)
			ca.DeviceNUMANodes = n.Devices.DeviceNUMANodes(uid, c.Name)
			ca.DevicePicks = n.Devices.Picks(uid, c.Name)
		}
		res.Containers = append(res.Containers, ca)
	}
	if n.CPU != nil && n.CPU.state != nil {
		res.PodCPUs = n.CPU.state.podEntries[uid]
	}
	return res
}

// State is the managers' state now, as the checkpoints would record it.
type State struct {
	DefaultCPUSet     cpuset.CPUSet
	CPUAssignments    map[string]map[string]cpuset.CPUSet
	MemoryAssignments map[string]map[string][]decode.MemoryBlock
	// PodCPUSets and PodMemory are the pod-level entries (pod-level resources).
	PodCPUSets map[string]cpuset.CPUSet
	PodMemory  map[string][]decode.MemoryBlock
	// DeviceAssignments is the device manager's: pod UID -> container -> resource -> device IDs.
	DeviceAssignments map[string]map[string]map[string][]string
}

// State returns a copy of the managers' state.
func (n *Node) State() State {
	s := State{DefaultCPUSet: cpuset.New(), CPUAssignments: map[string]map[string]cpuset.CPUSet{}, MemoryAssignments: map[string]map[string][]decode.MemoryBlock{},
		PodCPUSets: map[string]cpuset.CPUSet{}, PodMemory: map[string][]decode.MemoryBlock{}, DeviceAssignments: map[string]map[string]map[string][]string{}}
	if n.Devices != nil {
		s.DeviceAssignments = n.Devices.Assignments()
	}
	if n.CPU != nil && n.CPU.state != nil {
		s.DefaultCPUSet = n.CPU.state.defaultSet
		maps.Copy(s.PodCPUSets, n.CPU.state.podEntries)
		for pod, ctrs := range n.CPU.state.assignments {
			s.CPUAssignments[pod] = map[string]cpuset.CPUSet{}
			for ctr, set := range ctrs {
				s.CPUAssignments[pod][ctr] = set
			}
		}
	}
	if n.Memory != nil && n.Memory.static() != nil {
		for pod, ctrs := range n.Memory.static().assignments {
			s.MemoryAssignments[pod] = map[string][]decode.MemoryBlock{}
			for ctr, b := range ctrs {
				s.MemoryAssignments[pod][ctr] = cloneBlocks(b)
			}
		}
		for pod, b := range n.Memory.static().podEntries {
			s.PodMemory[pod] = cloneBlocks(b)
		}
	}
	return s
}

// AllocatableCPUs is the CPU manager's GetAllocatableCPUs (empty for policy none).
func (n *Node) AllocatableCPUs() cpuset.CPUSet {
	if n.CPU == nil {
		return cpuset.New()
	}
	return n.CPU.AllocatableCPUs()
}

// RegisterPlugin is a deferred device plugin (DeviceInput.Deferred) registering now, between
// two re-admissions.
func (n *Node) RegisterPlugin(resource string) {
	if n.Devices != nil {
		n.Devices.register(resource)
	}
}

// Forget drops a pod another admit handler refused after the managers admitted it: its
// allocations go at the next admission, as the kubelet's removeStaleState does.
func (n *Node) Forget(pod *v1.Pod) { delete(n.active, string(pod.UID)) }

// RejectedStatusMessage is the status message of a pod this node's kubelet refused with message.
func (n *Node) RejectedStatusMessage(message string) string {
	return n.env.release.RejectedStatusMessage(message)
}

// Config is the kubelet config the node runs with.
func (n *Node) Config() *KubeletConfig { return n.env.cfg }

// CPUTopology is the CPU manager's view of the machine.
func (n *Node) CPUTopology() *CPUTopology { return n.env.topo }

// freeCPUs are the CPUs an exclusive allocation can take now (GetAvailableCPUs); empty unless
// the static policy runs.
func (n *Node) freeCPUs() cpuset.CPUSet {
	if n.CPU == nil {
		return cpuset.New()
	}
	return n.CPU.AvailableCPUs()
}

// freeMemory is NUMA node -> memory type -> free bytes in the memory manager's state (Static
// policy only).
func (n *Node) freeMemory() map[int]map[string]uint64 {
	out := map[int]map[string]uint64{}
	if n.Memory == nil || n.Memory.static() == nil {
		return out
	}
	for id, node := range n.Memory.static().machineState {
		out[id] = map[string]uint64{}
		for name, t := range node.MemoryMap {
			if t != nil {
				out[id][name] = t.Free
			}
		}
	}
	return out
}
