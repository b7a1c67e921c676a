// The release-independent half of a release module's harness: the real topology, CPU and
// memory managers of the k8s.io/kubernetes the module requires, wired as
// container_manager_linux.go wires them. What differs between releases (loggers, contexts,
// the cadvisor package, the admit attributes) is in one era file (../era/) per API shape.
package main

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	schedulerframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/common"
)

// The kubelet's default --cpu-manager-reconcile-period.
const reconcilePeriod = 10e9

type kubelet struct {
	tm  topologymanager.Manager
	cpu cpumanager.Manager
	mem memorymanager.Manager
	// dm and plugins: the device manager and its plugins (-devices only).
	dm      *devicemanager.ManagerImpl
	plugins []*plugin
	// cpuReconciles: the CPU manager's Start runs a reconcile loop (every policy but none).
	cpuReconciles bool
}

func main() { common.Main(&kubelet{}) }

func (k *kubelet) SetFeatureGates(g map[string]bool) error {
	if len(g) == 0 {
		return nil
	}
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(g)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (k *kubelet) NewManagers(c *common.Config) (string, error) {
	kc := c.Machine.Kubelet
	mi := machineInfo(c.Machine)
	k.cpu, k.mem, k.cpuReconciles = nil, nil, false // start mode boots several times
	reserved, err := parseCPUSet(kc.ReservedSystemCPUs)
	if err != nil {
		return "config", err
	}
	if k.tm, err = newTopologyManager(mi, orDefault(kc.TopologyManagerPolicy, "none"), orDefault(kc.TopologyManagerScope, "container"), kc.TopologyManagerPolicyOptions); err != nil {
		return "topologymanager.NewManager", err
	}
	if c.Devices {
		if err := k.newDeviceManager(mi); err != nil {
			return "devicemanager.NewManagerImpl", err
		}
	}
	// Only (start mode): one manager alone, as the kubelet-start vectors give each its own outcome.
	if c.Only != "memory" {
		cpuPolicy := orDefault(kc.CPUManagerPolicy, "none")
		if k.cpu, err = newCPUManager(cpuPolicy, kc.CPUManagerPolicyOptions, mi, reserved, c.Reservation, c.StateDir, k.tm); err != nil {
			return "cpumanager.NewManager", err
		}
		addHintProvider(k.tm, k.cpu)
		k.cpuReconciles = cpuPolicy != "none"
	}
	if c.Only == "cpu" {
		return "ok", nil
	}
	var reservedMemory []kubeletconfig.MemoryReservation
	for _, r := range c.ReservedMemory {
		reservedMemory = append(reservedMemory, kubeletconfig.MemoryReservation{NumaNode: r.NUMANode, Limits: r.Limits})
	}
	if k.mem, err = newMemoryManager(orDefault(kc.MemoryManagerPolicy, "None"), mi, c.Reservation, reservedMemory, c.StateDir, k.tm); err != nil {
		return "memorymanager.NewManager", err
	}
	addHintProvider(k.tm, k.mem)
	return "ok", nil
}

// podStatuses knows no status: the managers' reconcile loops then only remove stale state.
type podStatuses struct{}

func (podStatuses) GetPodStatus(types.UID) (v1.PodStatus, bool) { return v1.PodStatus{}, false }

type runtimeService struct{}

func (runtimeService) UpdateContainerResources(context.Context, string, *runtimeapi.ContainerResources) error {
	return nil
}

func (k *kubelet) Start(active *common.ActivePods, rt *common.Runtime) (string, error) {
	// Each manager gets its own copy, as the kubelet gives each containerMap.Clone() (1.31's
	// ContainerMap has no Clone).
	containerMap := func() containermap.ContainerMap {
		cm := containermap.NewContainerMap()
		for _, c := range rt.Containers {
			cm.Add(c[0], c[1], c[2])
		}
		return cm
	}
	// The CPU manager's reconcile loop makes its first pass on its own goroutine as Start
	// returns (wait.Until), and that pass's removeStaleState may drop a refused pod's leftovers.
	// The kubelet starts it long before it admits a pod: wait for that pass (removeStaleState's
	// list of active pods, then reconcileState's own: two calls in every release; one while the
	// sources are not ready, removeStaleState returning first) so that it never lands between
	// two admissions at random. The next pass is reconcilePeriod away.
	firstPass := make(chan struct{})
	want := int32(2)
	if !rt.Sources.AllReady() {
		want = 1
	}
	var calls atomic.Int32
	cpuActive := func() []*v1.Pod {
		if calls.Add(1) == want {
			close(firstPass)
		}
		return active.List()
	}
	if k.cpu != nil { // nil: start mode, the memory manager alone
		if err := startCPU(k.cpu, cpumanager.ActivePodsFunc(cpuActive), rt.Sources, podStatuses{}, runtimeService{}, containerMap()); err != nil {
			return "cpumanager.Start", err
		}
		if k.cpuReconciles {
			select {
			case <-firstPass:
			case <-time.After(reconcilePeriod):
				panic("the CPU manager's reconcile loop made no first pass")
			}
		}
	}
	if k.mem == nil { // start mode, the CPU manager alone
		return "ok", nil
	}
	if err := startMemory(k.mem, memorymanager.ActivePodsFunc(active.List), rt.Sources, podStatuses{}, runtimeService{}, containerMap()); err != nil {
		return "memorymanager.Start", err
	}
	if k.dm != nil {
		if err := k.startDeviceManager(active, rt, containerMap()); err != nil {
			return "devicemanager.Start", err
		}
	}
	return "ok", nil
}

func (k *kubelet) AllocatableCPUs() string {
	if k.cpu == nil {
		return ""
	}
	return k.cpu.GetAllocatableCPUs().String()
}

func (k *kubelet) Admit(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
	r := admit(k.tm, pod, others)
	return r.Admit, r.Reason, r.Message
}

// PredicateAdmit is the kubelet's lifecycle.NewPredicateAdmitHandler: the node from the
// cache (getNodeAnyWayFunc), the admission-failure handler the stub (the kubelet's
// CriticalPodAdmissionHandler returns a non-critical pod's reasons as they are: the cases'
// pods have no priority), and the device manager's UpdatePluginResources, which returns at
// once for a pod it allocated no device (no device plugin is registered here).
func (k *kubelet) PredicateAdmit(node *v1.Node, pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
	r := predicateAdmit(node, pod, others)
	return r.Admit, r.Reason, r.Message
}

func noPluginResources(*schedulerframework.NodeInfo, *lifecycle.PodAdmitAttributes) error { return nil }

func blocks(in []memstate.Block) []common.Block {
	var out []common.Block
	for _, b := range in {
		out = append(out, common.Block{NUMAAffinity: b.NUMAAffinity, Type: string(b.Type), Size: b.Size})
	}
	return common.SortBlocks(out)
}

func (k *kubelet) Container(pod *v1.Pod, c *v1.Container) common.ContainerResult {
	uid := string(pod.UID)
	_, exclusive := k.cpu.State().GetCPUSet(uid, c.Name)
	r := common.ContainerResult{
		CPUs:         k.cpu.GetCPUAffinity(uid, c.Name).String(),
		Exclusive:    exclusive,
		MemoryBlocks: blocks(memoryBlocks(k.mem, uid, c.Name)),
	}
	if numa := memoryNUMANodes(k.mem, pod, c); len(numa) > 0 {
		r.MemoryNUMA = numa.UnsortedList()
		sort.Ints(r.MemoryNUMA)
	}
	return r
}

func (k *kubelet) PodCPUs(uid string) string { return podCPUs(k.cpu, uid) }

func (k *kubelet) State() common.StateAfter {
	cs := k.cpu.State()
	s := common.StateAfter{DefaultCPUSet: cs.GetDefaultCPUSet().String(), CPUAssignments: map[string]map[string]string{}}
	for uid, ctrs := range cs.GetCPUAssignments() {
		for name, set := range ctrs {
			if s.CPUAssignments[uid] == nil {
				s.CPUAssignments[uid] = map[string]string{}
			}
			s.CPUAssignments[uid][name] = set.String()
		}
	}
	for uid, ctrs := range k.mem.State().GetMemoryAssignments() {
		for name, b := range ctrs {
			if s.MemoryAssignments == nil {
				s.MemoryAssignments = map[string]map[string][]common.Block{}
			}
			if s.MemoryAssignments[uid] == nil {
				s.MemoryAssignments[uid] = map[string][]common.Block{}
			}
			s.MemoryAssignments[uid][name] = blocks(b)
		}
	}
	s.PodCPUSets = podCPUSets(k.cpu)
	for uid, b := range podMemory(k.mem) {
		if s.PodMemory == nil {
			s.PodMemory = map[string][]common.Block{}
		}
		s.PodMemory[uid] = blocks(b)
	}
	return s
}

func (k *kubelet) WriteCPUState(dir string, w *common.CPUWrite) error {
	st, err := newCPUState(dir, w.PolicyName)
	if err != nil {
		return err
	}
	def, err := parseCPUSet(w.DefaultCPUSet)
	if err != nil {
		return err
	}
	st.SetDefaultCPUSet(def)
	for uid, ctrs := range w.Entries {
		for name, s := range ctrs {
			set, err := parseCPUSet(s)
			if err != nil {
				return err
			}
			st.SetCPUSet(uid, name, set)
		}
	}
	return nil
}
