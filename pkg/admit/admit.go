// Package admit predicts the kubelet's admission of pods on one node: whether each pod is
// admitted, the kubelet's reason and message word for word, and the CPUs and memory NUMA nodes
// each container gets. It replays, for the node's kubelet release, the admit handlers that
// depend on resources, in the kubelet's order: the resource managers' handler (the topology
// manager with the CPU and memory managers as hint providers, pkg/replay) and the
// node-resource predicate (OutOfcpu, OutOfmemory, OutOfpods, OutOf<resource>). Pods are
// admitted in order on the same kubelet, so their allocations stack.
//
// It is a pure engine: decoded checkpoints, a machine, a kubelet config and version, the
// node's allocatable and bound pods in; admissions out. It knows nothing of clusters.
package admit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Input is everything the admission reads about one node.
type Input struct {
	// CPU and Memory are the node's checkpoints, decoded for Kubelet; nil = no file.
	CPU, Memory *decode.Report
	Machine     *machine.Machine
	// Topology is replay.Discover(Machine) when the caller keeps it for many nodes of one
	// machine (nil: discovered at each start).
	Topology *replay.CPUTopology
	Config   *replay.KubeletConfig
	Kubelet  decode.Kubelet
	RootDir  string
	// Node is the node's allocatable and the pods bound to it; nil skips the node-resource
	// predicate (offline, without a node object).
	Node *NodeResources
	// Pods are admitted in this order.
	Pods []*v1.Pod
	// Devices is the node's device plugins and device checkpoint; nil when the devices'
	// topology is not known (device requests are then not judged).
	Devices *replay.DeviceInput
	// DevicesNotReplayed says why Devices is nil, in the not-judged pods' reasons ("" : a
	// default text).
	DevicesNotReplayed string
	// DeviceTopology says, per resource, where its devices' NUMA nodes came from, or why they
	// are not known (Result.DeviceTopology).
	DeviceTopology map[string]string
	// DRAExtendedResources are the extended resources DRA can serve (KEP-5004): each
	// DeviceClass's extendedResourceName, by name, with its class (nil: not known). On a node
	// where no device plugin serves one, the scheduler gives a pod asking for it a claim, and
	// DRA, not the device manager, holds its devices.
	DRAExtendedResources map[string]string
	// DRAExtendedNotKnown says why the DeviceClasses are not known where they could be (a live
	// node whose user may not list them): a pod asking for an extended resource no device
	// plugin serves on the node is then not judged.
	DRAExtendedNotKnown string
	// KnownPods are the UIDs of every pod the API server has on the node (nil: not known,
	// offline). A device checkpoint's holder not among them is a pod that no longer exists.
	KnownPods map[string]bool
	// ActivePods are the UIDs of the pods the kubelet counts active, when known (a live node's
	// pods not terminal, the scheduler's pods on the node): the checkpoints' entries of any
	// other pod are stale, and the managers drop them at the first admission as the kubelet
	// does (nil: every checkpoint owner is active). See replay.StartInput.Active.
	ActivePods map[string]bool
	// PodNames names pod UIDs ("namespace/name"), for the holders of devices (nil: none known).
	PodNames map[string]string
	// Restart: the kubelet starts again over Pods, the pods it ran, and re-admits them as the
	// device plugins register (nil: new pods on a running kubelet). See PredictRestart.
	Restart *Restart
}

// NodeResources is what the kubelet's predicate handler reads: the node's allocatable and the
// pods it already runs.
type NodeResources struct {
	Allocatable v1.ResourceList
	Pods        []*v1.Pod
	// Object is the node object's name, labels, spec.taints and status.features: the
	// predicate's node name, node affinity and selector, NoExecute taint and
	// SupplementalGroupsPolicy checks (nil: those are not replayed).
	Object *v1.Node
}

// Hint providers the kubelet registers with the topology manager.
const (
	ProviderCPU     = "cpu"
	ProviderMemory  = "memory"
	ProviderDevices = "devices"
	ProviderDRA     = "dra"
)

// Handlers that can refuse a pod here, in the kubelet's order.
const (
	HandlerResourceManagers = "resource-managers"
	HandlerNodeResources    = "node-resources"
)

// Result is the admission of every pod, or why there is none.
type Result struct {
	Kubelet string `json:"kubelet"`
	// KubeletUnchecked says whose rules replayed a kubelet build no vector was made by
	// (decode.Kubelet.Unchecked; empty for a build checked).
	KubeletUnchecked string `json:"kubeletUnchecked,omitempty"`
	// KubeletStart is the start prediction; when it does not start there are no admissions.
	KubeletStart replay.Prediction `json:"kubeletStart"`
	// AllocatableCPUs is the CPU manager's GetAllocatableCPUs (empty for policy none).
	AllocatableCPUs string `json:"allocatableCPUs,omitempty"`
	// Replayed and NotReplayed name the topology manager's hint providers: device-plugin and
	// DRA hints need a device topology no checkpoint holds.
	Replayed    []string `json:"hintProvidersReplayed"`
	NotReplayed []string `json:"hintProvidersNotReplayed"`
	// DeviceCapacity and DeviceAllocatable are the device manager's GetCapacity once the plugins
	// registered: every device and the healthy ones, per resource (devices replayed only).
	DeviceCapacity    map[string]int `json:"deviceCapacity,omitempty"`
	DeviceAllocatable map[string]int `json:"deviceAllocatable,omitempty"`
	// DeviceTopology is, per device plugin resource, where its devices' NUMA nodes came from
	// ("--devices file", "sysfs", ...) or "not known: " and why (the resource is then not judged).
	DeviceTopology map[string]string `json:"deviceTopology,omitempty"`
	// NodeResourcesChecked: the node-resource predicate was replayed (a node was given).
	NodeResourcesChecked bool        `json:"nodeResourcesChecked"`
	Admissions           []Admission `json:"admissions"`
}

// Admission is one pod's.
type Admission struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
	// Verdict is VerdictAdmitted, VerdictRefused or VerdictNotJudged. Admitted is true only
	// for VerdictAdmitted; a pod not judged has no Reason, Message or Containers.
	Verdict  string `json:"verdict"`
	Admitted bool   `json:"admitted"`
	// NotJudged says why the replay cannot tell (devices not replayed, a pod before it not
	// judged); Why keeps what the replay without them said.
	NotJudged []string `json:"notJudged,omitempty"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message"`
	// Hangs: the kubelet never answers for this pod (Message says where); the pod stays
	// Pending and the kubelet admits no pod after it until it restarts.
	Hangs bool `json:"hangs,omitempty"`
	// NotReached: a pod before it hangs, so the kubelet never gets to this one.
	NotReached bool `json:"notReached,omitempty"`
	// StatusMessage is the refused pod's status.message: the kubelet's rejectPod puts its
	// release's prefix before Message ("Pod was rejected: " from 1.26); the Warning event
	// carries Message as is. Empty when admitted.
	StatusMessage string `json:"statusMessage,omitempty"`
	// Handler is the admit handler that refused the pod.
	Handler    string      `json:"handler,omitempty"`
	Containers []Container `json:"containers"`
	// PodCPUs is the pod-level CPU set (pod-level resources).
	PodCPUs string `json:"podCPUs,omitempty"`
	// Unreplayed says what of this pod the replay could not judge (device requests).
	Unreplayed []string `json:"unreplayed,omitempty"`
	// Before is the node as the pod found it, and what it asked: the numbers behind a refusal.
	Before *Context `json:"before,omitempty"`
	// StaleDeviceHolders are the pods, gone from the API server, whose devices in the device
	// checkpoint caused the refusal: replayed without them, the pod is admitted.
	StaleDeviceHolders []StaleHolder `json:"staleDeviceHolders,omitempty"`
	// Why names the policy or option that refused the pod, with those numbers, for people.
	Why []string `json:"why,omitempty"`
}

// Container is what one container gets.
type Container struct {
	Name string `json:"name"`
	// CPUs is the cpuset the kubelet gives it ("" = none set, CPU policy none).
	CPUs      string `json:"cpus"`
	Exclusive bool   `json:"exclusive"`
	// MemoryNUMANodes is cpuset.mems; empty when the memory manager pins nothing.
	MemoryNUMANodes []int                `json:"memoryNUMANodes"`
	MemoryBlocks    []decode.MemoryBlock `json:"memoryBlocks,omitempty"`
	// CPUNUMANodes are the NUMA nodes of CPUs (empty when none is pinned).
	CPUNUMANodes []int `json:"cpuNUMANodes,omitempty"`
	// Devices is the device IDs the device manager gives it, per resource (sorted).
	Devices map[string][]string `json:"devices,omitempty"`
	// DeviceNUMANodes is, per resource, each device's NUMA nodes (empty: no topology).
	DeviceNUMANodes map[string]map[string][]int `json:"deviceNUMANodes,omitempty"`
	// DevicesApart are the resources none of whose devices (with topology) sits on a NUMA node
	// of the container's exclusive CPUs: admitted, but not aligned (the topology policy allowed it).
	DevicesApart []string `json:"devicesApart,omitempty"`
	// DevicesPick says, per resource, whose pick the IDs are: the only one possible, or the
	// kubelet's default pick (no plugin's GetPreferredAllocation) among equivalent devices or
	// among devices that differ. Admission of this pod never depends on it.
	DevicesPick map[string]string `json:"devicesPick,omitempty"`
	// Init and Sidecar mark init containers (a sidecar is a restartable one).
	Init    bool `json:"init,omitempty"`
	Sidecar bool `json:"sidecar,omitempty"`
}

// Predict replays the kubelet's start, then each pod's admission.
func Predict(in Input) (Result, error) {
	res, _, err := predict(in, false, nil)
	return res, err
}

// predict is Predict, and with keepStates also the managers' state after each admission (before
// any cleanup), which the conformance tests compare to the real kubelet's. With once the kubelet
// is not started again: the admissions run on a copy of its start (nil: started here).
func predict(in Input, keepStates bool, once *Prepared) (Result, []replay.State, error) {
	run, err := begin(in, keepStates, once)
	if err != nil || run.node == nil {
		return run.res, nil, err
	}
	run.admitPods()
	return run.finish()
}

// admitting is a prediction under way: the node as the pods so far left it, and what the
// admissions carry from pod to pod.
type admitting struct {
	in         Input
	keepStates bool
	node       *replay.Node // nil: the kubelet does not start (no admission to predict)
	res        Result
	states     []replay.State
	// bound are the pods the node-resource predicate counts: the node's, then each admitted.
	bound []*v1.Pod
	// notJudged is the first pod not judged: every pod after it finds a node not replayed.
	notJudged string
	// deferred are a restart's device plugins that register only later.
	deferred []string
}

// begin starts the kubelet (or copies once's start) for in; its node is nil when the kubelet
// would not start.
func begin(in Input, keepStates bool, once *Prepared) (*admitting, error) {
	// The hint providers in the kubelet's order: the device manager first.
	run := &admitting{in: in, keepStates: keepStates, res: Result{Replayed: []string{ProviderCPU, ProviderMemory}, NotReplayed: []string{ProviderDevices, ProviderDRA},
		NodeResourcesChecked: in.Node != nil, DeviceTopology: in.DeviceTopology, Admissions: []Admission{}}}
	res := &run.res
	if in.Devices != nil {
		res.Replayed, res.NotReplayed = []string{ProviderDevices, ProviderCPU, ProviderMemory}, []string{ProviderDRA}
	}
	if in.Kubelet.Version != nil {
		res.Kubelet, res.KubeletUnchecked = in.Kubelet.String(), in.Kubelet.Unchecked()
	}
	if in.Restart != nil && in.Devices != nil {
		run.deferred = in.Restart.deferred(in.Devices)
	}
	var start replay.Prediction
	var err error
	if once != nil {
		if once.err != nil {
			return run, once.err
		}
		run.node, start = once.started.Node(in.ActivePods), once.started.Prediction
	} else if run.node, start, err = replay.Start(startInput(in)); err != nil {
		return run, err
	}
	res.KubeletStart = start
	if run.node == nil {
		return run, nil
	}
	res.AllocatableCPUs = run.node.AllocatableCPUs().String()
	if run.node.Devices != nil {
		res.DeviceCapacity, res.DeviceAllocatable = run.node.Devices.Capacity()
	}
	if in.Node != nil {
		run.bound = append(run.bound, in.Node.Pods...)
	}
	return run, nil
}

// admitPods admits each of in.Pods in turn.
func (run *admitting) admitPods() {
	for i, pod := range run.in.Pods {
		run.admit(i, pod)
	}
}

// admit is the kubelet's admission of pod, the i-th of in.Pods, on the node as the pods before
// it left it.
func (run *admitting) admit(i int, pod *v1.Pod) {
	in, node := run.in, run.node
	if in.Restart != nil {
		in.Restart.registerBefore(node, run.deferred, i)
	}
	a := Admission{Pod: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), Containers: []Container{}, Unreplayed: unreplayed(pod, in.Devices)}
	pa := node.Admit(pod)
	a.Admitted, a.Reason, a.Message, a.Hangs, a.NotReached = pa.Admit, pa.Reason, pa.Message, pa.Hangs, pa.NotReached
	if !pa.Admit {
		a.Handler = HandlerResourceManagers
	} else if in.Node != nil {
		if r := predicateAdmit(pod, in.Node, otherPods(run.bound, pod), in.Kubelet.Version, in.Kubelet.Gate); !r.Admit {
			a.Admitted, a.Reason, a.Message, a.Handler = false, r.Reason, r.Message, HandlerNodeResources
			node.Forget(pod)
		}
	}
	if a.Admitted {
		a.Containers = containers(pod, pa, node.CPUTopology())
		if !pa.PodCPUs.IsEmpty() {
			a.PodCPUs = pa.PodCPUs.String()
		}
		run.bound = append(run.bound, pod)
	}
	switch {
	case a.NotReached:
		// Nothing to explain but the pod it waits behind (the message names it).
	case a.Hangs:
		a.Before = describe(node, pod, pa)
		nameHolders(a.Before, in.PodNames, in.KnownPods)
		a.Why = why(&a)
	case !a.Admitted:
		a.StatusMessage = node.RejectedStatusMessage(a.Message)
		a.Before = describe(node, pod, pa)
		nameHolders(a.Before, in.PodNames, in.KnownPods)
		a.Why = why(&a)
	}
	if judgeDevices(&a, pa, pod, in, run.notJudged) && run.notJudged == "" {
		run.notJudged = pod.Name
		if pod.Namespace != "" {
			run.notJudged = pod.Namespace + "/" + pod.Name
		}
	}
	if run.keepStates {
		run.states = append(run.states, node.State())
	}
	run.res.Admissions = append(run.res.Admissions, a)
}

// finish is the result once every pod of in.Pods was admitted.
func (run *admitting) finish() (Result, []replay.State, error) {
	in, res := run.in, &run.res
	if in.Restart != nil && run.node.Devices != nil {
		// The plugins due once every pod is back register, and the capacity is read then.
		in.Restart.registerBefore(run.node, run.deferred, len(in.Pods))
		res.DeviceCapacity, res.DeviceAllocatable = run.node.Devices.Capacity()
	}
	if !run.keepStates {
		if err := nameStaleHolders(in, res); err != nil {
			return *res, nil, err
		}
	}
	return *res, run.states, nil
}

// copy is run as it stands, its node a deep copy (replay.Node.Clone): admitting on the copy
// leaves run as it was. The admissions made so far are shared, never changed.
func (run *admitting) copy() *admitting {
	c := *run
	if run.node != nil {
		c.node = run.node.Clone()
	}
	c.res.Admissions = slices.Clip(run.res.Admissions)
	c.bound = slices.Clip(run.bound)
	c.in.Pods = slices.Clip(run.in.Pods)
	return &c
}

// startInput is what the kubelet's start reads of in.
func startInput(in Input) replay.StartInput {
	si := replay.StartInput{CPU: in.CPU, Memory: in.Memory, Machine: in.Machine, Topology: in.Topology, Config: in.Config, Kubelet: in.Kubelet, RootDir: in.RootDir, Devices: restartDevices(in), Active: in.ActivePods}
	if in.Restart != nil {
		si.Restart = in.Restart.replayRestart()
	}
	return si
}

func containers(pod *v1.Pod, pa replay.PodAdmission, topo *replay.CPUTopology) []Container {
	kind := map[string][2]bool{}
	for _, c := range pod.Spec.InitContainers {
		kind[c.Name] = [2]bool{true, replay.IsRestartableInitContainer(&c)}
	}
	out := make([]Container, 0, len(pa.Containers))
	for _, c := range pa.Containers {
		nodes := c.MemoryNUMANodes
		if nodes == nil {
			nodes = []int{}
		}
		var cpuNodes []int
		if !c.CPUs.IsEmpty() {
			cpuNodes = topo.CPUDetails.KeepOnly(c.CPUs).NUMANodes().List()
		}
		out = append(out, Container{Name: c.Name, CPUs: c.CPUs.String(), Exclusive: c.Exclusive, MemoryNUMANodes: nodes, CPUNUMANodes: cpuNodes,
			MemoryBlocks: c.MemoryBlocks, Devices: c.Devices, DeviceNUMANodes: c.DeviceNUMANodes, DevicesApart: devicesApart(c, cpuNodes), DevicesPick: devicesPick(c),
			Init: kind[c.Name][0], Sidecar: kind[c.Name][1]})
	}
	return out
}

// devicesApart: the resources whose devices with topology share no NUMA node with the
// container's exclusive CPUs.
func devicesApart(c replay.ContainerAdmission, cpuNodes []int) []string {
	if !c.Exclusive || len(cpuNodes) == 0 {
		return nil
	}
	var out []string
	for _, r := range slices.Sorted(maps.Keys(c.DeviceNUMANodes)) {
		placed, near := false, false
		for _, nodes := range c.DeviceNUMANodes[r] {
			placed = placed || len(nodes) > 0
			near = near || slices.ContainsFunc(nodes, func(n int) bool { return slices.Contains(cpuNodes, n) })
		}
		if placed && !near {
			out = append(out, r)
		}
	}
	return out
}

// Whose pick a container's device IDs are.
const (
	PickForced     = "the only devices the kubelet could give: no other pick, by it or by a plugin's GetPreferredAllocation"
	PickEquivalent = "the kubelet's default pick, one of several equivalent ones (same health, NUMA nodes and holders; it takes any of them at random): a plugin answering GetPreferredAllocation may choose other IDs; admission does not depend on which"
	PickArbitrary  = "the kubelet's default pick among devices that differ (NUMA nodes or holders), taken at random: another run, or a plugin answering GetPreferredAllocation, may choose others; this pod's admission does not depend on which, later pods' may"
)

func devicesPick(c replay.ContainerAdmission) map[string]string {
	if len(c.Devices) == 0 {
		return nil
	}
	out := map[string]string{}
	for r := range c.Devices {
		switch c.DevicePicks[r] {
		case replay.DevicePickEquivalent:
			out[r] = PickEquivalent
		case replay.DevicePickArbitrary:
			out[r] = PickArbitrary
		default:
			out[r] = PickForced
		}
	}
	return out
}

// unreplayed lists the pod's requests whose hints come from providers not replayed.
func unreplayed(pod *v1.Pod, devices *replay.DeviceInput) []string {
	set := map[string]bool{}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for name := range c.Resources.Requests {
			switch {
			case !strings.Contains(string(name), "/") || strings.HasPrefix(string(name), "kubernetes.io/"):
			case devices == nil:
				set[fmt.Sprintf("%s: device plugin resource %s (the device manager's hints and allocation are not replayed)", ProviderDevices, name)] = true
			case devices.NotJudged[string(name)] != "":
				set[fmt.Sprintf("%s: device plugin resource %s not judged (its devices' NUMA nodes are not known: %s)", ProviderDevices, name, devices.NotJudged[string(name)])] = true
			}
		}
		for _, claim := range c.Resources.Claims {
			set[fmt.Sprintf("%s: resource claim %s (DRA hints and allocation are not replayed)", ProviderDRA, claim.Name)] = true
		}
	}
	// From 1.35 the device manager leaves a DRA-backed extended resource to DRA.
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		for _, m := range st.RequestMappings {
			set[fmt.Sprintf("%s: extended resource %s of container %s backed by a DRA claim (not replayed; the device manager leaves it to DRA from 1.35)", ProviderDRA, m.ResourceName, m.ContainerName)] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Context is the node as a pod found it.
type Context struct {
	// Policy names the managers' policies and options in force.
	Policy Policy `json:"policy"`
	// FreeCPUs are the CPUs an exclusive allocation can take (the shared pool less reserved).
	FreeCPUs       string            `json:"freeCPUs"`
	FreeCPUsByNUMA map[int]string    `json:"freeCPUsByNUMA,omitempty"`
	FreeCPUsBySock map[int]string    `json:"freeCPUsBySocket,omitempty"`
	FreeCores      int               `json:"freeCores"`
	FreeMemory     map[int]NodeFree  `json:"freeMemoryByNUMA,omitempty"`
	Asked          map[string]string `json:"asked,omitempty"`
	// Devices are, per resource, the devices as the pod found them (device manager replayed).
	Devices map[string]DeviceContext `json:"devices,omitempty"`
}

// DeviceContext is one resource's devices as a pod found them.
type DeviceContext struct {
	// FreeByNUMA is NUMA node ("none": devices without topology) -> the free healthy devices.
	FreeByNUMA map[string][]string `json:"freeByNUMA"`
	Free       int                 `json:"free"`
	// Held is device -> its holders ("<pod UID>/<container>"; "(no pod)": allocatedDevices keeps
	// it from an allocation that failed after taking it).
	Held      map[string][]string `json:"held,omitempty"`
	Unhealthy []string            `json:"unhealthy,omitempty"`
}

// NodeFree is one NUMA node's free memory by type, in bytes.
type NodeFree map[string]uint64

// Policy is the configuration that decides the admission.
type Policy struct {
	CPU             string   `json:"cpu"`
	CPUOptions      []string `json:"cpuOptions,omitempty"`
	Memory          string   `json:"memory"`
	Topology        string   `json:"topology"`
	TopologyScope   string   `json:"topologyScope"`
	TopologyOptions []string `json:"topologyOptions,omitempty"`
}

func describe(n *replay.Node, pod *v1.Pod, pa replay.PodAdmission) *Context {
	free, freeMemory := pa.FreeCPUs, pa.FreeMemory
	c := &Context{FreeCPUsByNUMA: map[int]string{}, FreeCPUsBySock: map[int]string{}, Asked: map[string]string{}}
	cfg := n.Config()
	c.Policy = Policy{CPU: cfg.CPUPolicy(), Memory: cfg.MemoryPolicy(), Topology: cfg.TopologyPolicy(), TopologyScope: cfg.TopologyScope()}
	for k, v := range cfg.CPUManagerPolicyOptions {
		c.Policy.CPUOptions = append(c.Policy.CPUOptions, k+"="+v)
	}
	for k, v := range cfg.TopologyManagerPolicyOptions {
		c.Policy.TopologyOptions = append(c.Policy.TopologyOptions, k+"="+v)
	}
	sort.Strings(c.Policy.CPUOptions)
	sort.Strings(c.Policy.TopologyOptions)
	c.FreeCPUs = free.String()
	topo := n.CPUTopology()
	for _, id := range topo.CPUDetails.NUMANodes().List() {
		c.FreeCPUsByNUMA[id] = free.Intersection(topo.CPUDetails.CPUsInNUMANodes(id)).String()
	}
	for _, id := range topo.CPUDetails.Sockets().List() {
		c.FreeCPUsBySock[id] = free.Intersection(topo.CPUDetails.CPUsInSockets(id)).String()
	}
	for _, core := range topo.CPUDetails.Cores().List() {
		if all := topo.CPUDetails.CPUsInCores(core); all.Size() > 0 && all.IsSubsetOf(free) {
			c.FreeCores++
		}
	}
	c.FreeMemory = map[int]NodeFree{}
	for id, types := range freeMemory {
		c.FreeMemory[id] = types
	}
	for _, ctr := range podContainersOf(pod) {
		var parts []string
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := ctr.Resources.Requests[r]; ok {
				parts = append(parts, string(r)+"="+q.String())
			}
		}
		for _, r := range slices.Sorted(maps.Keys(ctr.Resources.Limits)) {
			if _, ok := pa.Devices[string(r)]; ok {
				q := ctr.Resources.Limits[r]
				parts = append(parts, string(r)+"="+q.String())
			}
		}
		c.Asked[ctr.Name] = strings.Join(parts, ",")
	}
	if pa.Devices != nil {
		// The resources the pod asks for, as the device manager knows them.
		c.Devices = map[string]DeviceContext{}
		for _, ctr := range podContainersOf(pod) {
			for name := range ctr.Resources.Limits {
				if devs, ok := pa.Devices[string(name)]; ok {
					c.Devices[string(name)] = deviceContext(devs)
				}
			}
		}
	}
	return c
}

// NoTopology is the NUMA key of devices without topology.
const NoTopology = "none"

func deviceContext(devs []replay.DeviceStatus) DeviceContext {
	dc := DeviceContext{FreeByNUMA: map[string][]string{}}
	for _, d := range devs {
		switch {
		case !d.Healthy:
			dc.Unhealthy = append(dc.Unhealthy, d.ID)
		case d.Free:
			dc.Free++
			if len(d.NUMANodes) == 0 {
				dc.FreeByNUMA[NoTopology] = append(dc.FreeByNUMA[NoTopology], d.ID)
			}
			for _, id := range d.NUMANodes {
				key := strconv.Itoa(id)
				dc.FreeByNUMA[key] = append(dc.FreeByNUMA[key], d.ID)
			}
		default:
			if dc.Held == nil {
				dc.Held = map[string][]string{}
			}
			dc.Held[d.ID] = d.Holders
			if len(d.Holders) == 0 {
				dc.Held[d.ID] = []string{"(no pod)"}
			}
		}
	}
	return dc
}
