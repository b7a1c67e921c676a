// Era 1.34: contexts in the memory manager only; the CPU manager, its state and the
// topology manager without loggers; Admit(attrs) without an operation; cadvisor info/v1.
package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	cpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/kubernetes/pkg/kubelet/status"
	"k8s.io/utils/cpuset"
)

var (
	logger = klog.Background()
	ctx    = klog.NewContext(context.Background(), logger)
)

func newTopologyManager(mi *cadvisorMachine, policy, scope string, opts map[string]string) (topologymanager.Manager, error) {
	return topologymanager.NewManager(mi.Topology, policy, scope, opts)
}

func newCPUManager(policy string, opts map[string]string, mi *cadvisorMachine, reserved cpuset.CPUSet, reservation v1.ResourceList, dir string, tm topologymanager.Manager) (cpumanager.Manager, error) {
	return cpumanager.NewManager(policy, opts, reconcilePeriod, mi, reserved, reservation, dir, tm)
}

func newMemoryManager(policy string, mi *cadvisorMachine, reservation v1.ResourceList, reserved []kubeletconfig.MemoryReservation, dir string, tm topologymanager.Manager) (memorymanager.Manager, error) {
	return memorymanager.NewManager(ctx, policy, mi, reservation, reserved, dir, tm)
}

func addHintProvider(tm topologymanager.Manager, h topologymanager.HintProvider) {
	tm.AddHintProvider(h)
}

func startCPU(m cpumanager.Manager, a cpumanager.ActivePodsFunc, s config.SourcesReady, p status.PodStatusProvider, r runtimeService, cm containermap.ContainerMap) error {
	return m.Start(a, s, p, r, cm)
}

func startMemory(m memorymanager.Manager, a memorymanager.ActivePodsFunc, s config.SourcesReady, p status.PodStatusProvider, r runtimeService, cm containermap.ContainerMap) error {
	return m.Start(ctx, a, s, p, r, cm)
}

// predicateAdmit: before 1.36 the node is read with no argument.
func predicateAdmit(node *v1.Node, pod *v1.Pod, others []*v1.Pod) lifecycle.PodAdmitResult {
	getNode := func() (*v1.Node, error) { return node, nil }
	h := lifecycle.NewPredicateAdmitHandler(getNode, lifecycle.NewAdmissionFailureHandlerStub(), noPluginResources)
	return h.Admit(&lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: others})
}

func admit(tm topologymanager.Manager, pod *v1.Pod, others []*v1.Pod) lifecycle.PodAdmitResult {
	return tm.Admit(&lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: others})
}

func memoryNUMANodes(m memorymanager.Manager, pod *v1.Pod, c *v1.Container) sets.Set[int] {
	return m.GetMemoryNUMANodes(ctx, pod, c)
}

func memoryBlocks(m memorymanager.Manager, uid, name string) []memstate.Block {
	return m.GetMemory(ctx, uid, name)
}

// podCPUs: no pod-level CPU sets before 1.37.
func podCPUs(cpumanager.Manager, string) string { return "" }

func newCPUState(dir, policy string) (cpustate.State, error) {
	return cpustate.NewCheckpointState(dir, "cpu_manager_state", policy, containermap.NewContainerMap())
}

// podCPUSets and podMemory: no pod-level entries before 1.36.
func podCPUSets(cpumanager.Manager) map[string]string { return nil }

func podMemory(memorymanager.Manager) map[string][]memstate.Block { return nil }

func newDeviceManagerImpl(mi *cadvisorMachine, tm topologymanager.Manager) (*devicemanager.ManagerImpl, error) {
	return devicemanager.NewManagerImpl(mi.Topology, tm)
}

func startDevices(dm *devicemanager.ManagerImpl, a devicemanager.ActivePodsFunc, s config.SourcesReady, cm containermap.ContainerMap, rs sets.Set[string]) error {
	return dm.Start(a, s, cm, rs)
}

func deviceCapacity(dm *devicemanager.ManagerImpl) (v1.ResourceList, v1.ResourceList, []string) {
	return dm.GetCapacity()
}

// requestedDeviceIDs: the device plugin API's generated code (protoc-gen-go) names the field DevicesIds.
func requestedDeviceIDs(c *pluginapi.ContainerAllocateRequest) []string { return c.DevicesIds }

// parseCPUSet: the CPU set type is k8s.io/utils/cpuset from 1.28 (pkg/kubelet/cm/cpuset before).
func parseCPUSet(s string) (cpuset.CPUSet, error) { return cpuset.Parse(s) }

// deviceCheckpointData: the device checkpoint's entries and registered devices
// (GetDataInLatestFormat before 1.28).
func deviceCheckpointData(cp checkpoint.DeviceManagerCheckpoint) ([]checkpoint.PodDevicesEntry, map[string][]string) {
	return cp.GetData()
}
