package replay

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// Phases of a start, in the kubelet's order. "config" is cmd/kubelet turning the config into
// the managers' inputs.
const (
	PhaseOK           = "ok"
	PhaseFeatureGates = "featureGates"
	PhaseConfig       = "config"
	PhaseTopologyNew  = "topologymanager.NewManager"
	PhaseCPUNew       = "cpumanager.NewManager"
	PhaseMemoryNew    = "memorymanager.NewManager"
	PhaseCPUStart     = "cpumanager.Start"
	PhaseMemoryStart  = "memorymanager.Start"
	PhaseNotPredicted = "not-predicted"
)

// ManagerResult is one manager's own outcome (each is judged on its own, as if the other
// passed).
type ManagerResult struct {
	Policy string `json:"policy"`
	// Phase is "ok", "NewManager" or "Start".
	Phase string `json:"phase"`
	Error string `json:"error,omitempty"`
	// Details say what the kubelet only logs: how the memory machine state differs.
	Details []string `json:"details,omitempty"`
}

// Prediction is what the kubelet's CPU and memory managers make of the state at start.
type Prediction struct {
	Starts bool `json:"starts"`
	// Error is the first failure, word for word as the kubelet's manager returns it.
	Error string `json:"error"`
	Phase string `json:"phase"`
	// Topology is the topology manager's outcome (it is built before the others).
	Topology *ManagerResult `json:"topology,omitempty"`
	// CPU and Memory are each manager's own outcome.
	CPU    *ManagerResult `json:"cpu,omitempty"`
	Memory *ManagerResult `json:"memory,omitempty"`
	// UnjudgedGates are feature gates set that doctor does not know; assumed to exist.
	UnjudgedGates []string `json:"unjudgedGates,omitempty"`
}

// StartInput is what the start checks read.
type StartInput struct {
	// CPU and Memory are the checkpoints as decode judged them for Kubelet; nil = no file.
	CPU, Memory *decode.Report
	Machine     *machine.Machine
	Config      *KubeletConfig
	// Kubelet is the target version; its Gates override Config.FeatureGates (the command
	// line wins over the config file, as in the kubelet).
	Kubelet decode.Kubelet
	// RootDir is the kubelet's root dir, used in its error texts.
	RootDir string
	// Devices is what the device manager knows; nil when the devices' topology is not known
	// (the device manager is then not replayed).
	Devices *DeviceInput
	// Topology is Discover(Machine) when the caller has it already (nil: discovered here): a
	// caller replaying many starts on one machine, as doctor's fix search does, discovers it once.
	Topology *CPUTopology
	// Restart is the kubelet starting again on a node that ran pods, which it re-admits (nil: a
	// kubelet whose sources are ready, admitting new pods).
	Restart *Restart
	// Active are the UIDs of the pods the kubelet counts active (its pod manager's pods not
	// terminal nor terminating), when known; nil: every checkpoint owner. A checkpoint owner
	// not among them is stale: each manager drops its entries when first called for a pod
	// (removeStaleState; the device manager's UpdateAllocatedDevices, whose checkpoint keeps a
	// deleted pod's devices until the next allocation rewrites it).
	Active map[string]bool
}

// Restart is what differs when the kubelet starts again over the pods it ran: the runtime's
// containers it finds, and whether its pod sources are all ready during the re-admissions.
// The device plugins that register only later are DeviceInput.Deferred.
type Restart struct {
	// Containers is pod UID -> container name -> the runtime's instances of it at start (the
	// container map and the running set the managers start with). A reboot has none running.
	Containers map[string]map[string]RuntimeContainer
	// SourcesReady is sourcesReady.AllReady() during the re-admissions: false, the managers
	// keep every checkpoint entry (no stale state removed) and the device manager skips the
	// containers running already (DeviceSkipsRunning).
	SourcesReady bool
}

// env is one start's resolved inputs.
type env struct {
	release            *releaseRules
	version            *version.Version
	gates              map[string]bool
	podGates           podGates
	machine            *machine.Machine
	topo               *CPUTopology
	cfg                *KubeletConfig
	reservation        map[string]resource.Quantity
	reservedSystemCPUs cpuset.CPUSet
	rootDir            string
}

// MaxNUMANodes bounds the machines replayed (no server has more; the bitmask tops out at 64).
const MaxNUMANodes = 16

// Node is a kubelet whose resource managers started: the state admissions stack on.
type Node struct {
	env      *env
	Topology *TopologyManager
	CPU      *CPUManager // nil when the CPUManager gate is off (the kubelet's fake)
	Memory   *MemoryManager
	Devices  *DeviceManager // nil when not replayed (StartInput.Devices)
	// active is pod UID -> container names of the pods the kubelet runs: the checkpoints'
	// owners and each admitted pod (removeStaleState keeps only theirs).
	active map[string]map[string]bool
	// stuckOn names the pod whose admission never returned (ErrKubeletHangs).
	stuckOn string
	// sourcesNotReady: a restart's re-admissions while the sources are not all ready (the
	// managers' removeStaleState and UpdateAllocatedDevices do nothing).
	sourcesNotReady bool
	// found is the node as the admission under way found it: the free CPUs and memory when
	// each manager first looked (after its removeStaleState), nil before it looks.
	foundCPUs   *cpuset.CPUSet
	foundMemory map[int]map[string]uint64
}

// PredictStart replays, for in.Kubelet's release, what the kubelet checks when it builds and
// starts its resource managers: topology NewManager, CPU NewManager, memory NewManager, CPU
// Start, memory Start.
func PredictStart(in StartInput) (Prediction, error) {
	_, p, err := Start(in)
	return p, err
}

// Start builds and starts the managers as the kubelet does; the Node is nil when the kubelet
// would not start (the Prediction says why).
func Start(in StartInput) (*Node, Prediction, error) {
	return start(in, true)
}

// start is Start; with markActive false the checkpoint owners are left for the caller to mark
// active (Started.Node), as the start's managers never read them.
func start(in StartInput, markActive bool) (*Node, Prediction, error) {
	if in.Machine == nil || in.Config == nil || in.Kubelet.Version == nil {
		return nil, Prediction{}, fmt.Errorf("a start prediction needs the machine, the kubelet config and the kubelet version")
	}
	// The managers enumerate every subset of NUMA nodes for their hints (2^n masks): a
	// machine with more nodes than any real one would hang the kubelet and this replay alike.
	if n := len(in.Machine.NodeIDs()); n > MaxNUMANodes {
		return nil, Prediction{}, fmt.Errorf("machine with %d NUMA nodes: the resource managers enumerate 2^%d NUMA masks; replayed up to %d nodes", n, n, MaxNUMANodes)
	}
	rel, ok := rulesFor(in.Kubelet.Version)
	if !ok {
		return nil, Prediction{}, fmt.Errorf("kubelet %s predates %s, the oldest release replayed", in.Kubelet, oldestReplayed)
	}
	e := &env{release: rel, version: in.Kubelet.Version, gates: in.Kubelet.WithConfigGates(in.Config.FeatureGates).Gates,
		machine: in.Machine, topo: in.Topology, cfg: in.Config, rootDir: in.RootDir}
	if e.topo == nil {
		e.topo = Discover(in.Machine)
	}
	if e.rootDir == "" {
		e.rootDir = decode.DefaultRootDir
	}
	var p Prediction
	unjudged, err := setGates(e.gates, e.version)
	if err != nil {
		return nil, Prediction{Error: err.Error(), Phase: PhaseFeatureGates}, nil
	}
	p.UnjudgedGates = unjudged
	e.podGates = podGates{levelResources: e.gate(decode.GatePodLevelResources), levelManagers: rel.has(PodLevelEntries) && e.gate(decode.GatePodLevelResourceManagers),
		fixQOS: e.gate(decode.GatePodLevelResourcesFixKubeletQOSClass), managersRelease: rel.has(PodLevelEntries), skipRelease: rel.has(SkipsPodLevelPods)}
	if err := e.resolveConfig(); err != nil {
		return nil, Prediction{Error: err.Error(), Phase: PhaseConfig, UnjudgedGates: unjudged}, nil
	}
	n := &Node{env: e, active: map[string]map[string]bool{}}
	p.Topology = &ManagerResult{Policy: in.Config.TopologyPolicy(), Phase: PhaseOK}
	if n.Topology, err = newTopologyManager(e); err != nil {
		p.Topology.Phase, p.Topology.Error = "NewManager", err.Error()
		p.Phase, p.Error = PhaseTopologyNew, err.Error()
		return nil, p, nil
	}
	p.CPU = &ManagerResult{Policy: in.Config.CPUPolicy(), Phase: PhaseOK}
	p.Memory = &ManagerResult{Policy: in.Config.MemoryPolicy(), Phase: PhaseOK}
	// With its gate off (1.25, before GA) a manager is the kubelet's fake: it checks nothing
	// and allocates nothing.
	var cpuErr, memErr error
	if e.gate("CPUManager") {
		n.CPU, cpuErr = newCPUManager(e, n.Topology)
	} else {
		p.CPU.Policy = "fake (CPUManager gate off)"
	}
	if e.gate("MemoryManager") {
		n.Memory, memErr = newMemoryManager(e, n.Topology)
	} else {
		p.Memory.Policy = "fake (MemoryManager gate off)"
	}
	if cpuErr != nil {
		p.CPU.Phase, p.CPU.Error = "NewManager", cpuErr.Error()
	} else if n.CPU != nil {
		if err := n.CPU.start(e, in.CPU); err != nil {
			p.CPU.Phase, p.CPU.Error = "Start", err.Error()
		}
	}
	if memErr != nil {
		p.Memory.Phase, p.Memory.Error = "NewManager", memErr.Error()
	} else if n.Memory != nil {
		if err := n.Memory.start(e, in.Memory); err != nil {
			p.Memory.Phase, p.Memory.Error = "Start", err.Error()
			if m, ok := err.(*stateMismatch); ok {
				p.Memory.Details = m.details
			}
		}
	}
	// The kubelet's order: both NewManagers come before either Start.
	for _, step := range []struct {
		r     *ManagerResult
		phase string
		name  string
	}{{p.CPU, "NewManager", PhaseCPUNew}, {p.Memory, "NewManager", PhaseMemoryNew}, {p.CPU, "Start", PhaseCPUStart}, {p.Memory, "Start", PhaseMemoryStart}} {
		if step.r.Phase == step.phase {
			p.Phase, p.Error = step.name, step.r.Error
			return nil, p, nil
		}
	}
	p.Starts, p.Phase = true, PhaseOK
	// The topology manager asks its hint providers in the order the kubelet registers them:
	// the device manager (made before the CPU manager; its Start, the checkpoint then the
	// plugins registering, comes after the others' and never fails), the CPU manager, the
	// memory manager (DRA is not replayed).
	if r := in.Restart; r != nil {
		n.sourcesNotReady = !r.SourcesReady
	}
	if in.Devices != nil {
		n.Devices = newDeviceManager(e, n.Topology) // its callbacks are bound by wire
		if in.Restart != nil {
			n.Devices.runtime = in.Restart.Containers
		}
		n.Devices.start(in.Devices)
		n.Topology.AddHintProvider(n.Devices)
	}
	if n.CPU != nil {
		n.Topology.AddHintProvider(n.CPU)
	}
	if n.Memory != nil {
		n.Topology.AddHintProvider(n.Memory)
	}
	n.wire()
	if in.Restart == nil && markActive {
		// On a restart the checkpoints' owners are active only once re-admitted (the kubelet's
		// pod manager gets them one by one, in the order it admits them).
		n.markCheckpointOwnersActive(in.Active)
	}
	return n, p, nil
}

// resolveConfig is what cmd/kubelet does before the managers: parse reservedSystemCPUs (which
// then stands for kube and system reserved CPU), and compute the node-allocatable reservation
// as GetNodeAllocatableReservation does.
func (e *env) resolveConfig() error {
	if opts := e.cfg.TopologyManagerPolicyOptions; opts != nil && !e.gate(decode.GateTopologyManagerPolicyOptions) {
		return fmt.Errorf("topology manager policy options %v require feature gates %q enabled", opts, decode.GateTopologyManagerPolicyOptions)
	}
	if s := e.cfg.ReservedSystemCPUs; s != "" {
		set, err := ParseCPUSet(s)
		if err != nil {
			return err
		}
		e.reservedSystemCPUs = set
	}
	kube, err := parseResourceList(e.cfg.KubeReserved)
	if err != nil {
		return err
	}
	system, err := parseResourceList(e.cfg.SystemReserved)
	if err != nil {
		return err
	}
	if n := e.reservedSystemCPUs.Size(); n > 0 {
		delete(kube, "cpu")
		system["cpu"] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	capacity := e.capacity()
	eviction, err := hardEvictionReservation(e.cfg.EvictionHardOrDefault(), capacity)
	if err != nil {
		return err
	}
	e.reservation = make(map[string]resource.Quantity, len(capacity))
	for name := range capacity {
		v := resource.NewQuantity(0, resource.DecimalSI)
		v.Add(system[name])
		v.Add(kube[name])
		v.Add(eviction[name])
		if !v.IsZero() {
			e.reservation[name] = *v
		}
	}
	return nil
}

// capacity is the node capacity cadvisor reports: CPUs, memory and each hugepage size.
func (e *env) capacity() map[string]resource.Quantity {
	c := map[string]resource.Quantity{
		string(v1.ResourceCPU):    *resource.NewMilliQuantity(int64(len(e.machine.CPUs))*1000, resource.DecimalSI),
		string(v1.ResourceMemory): *resource.NewQuantity(int64(e.machine.MemoryCapacity()), resource.BinarySI),
	}
	sizes := map[uint64]uint64{}
	for _, n := range e.machine.NUMA {
		for _, hp := range n.HugePages {
			sizes[hp.PageSizeKiB] += hp.NumPages * hp.PageSizeKiB * 1024
		}
	}
	for size, total := range sizes {
		c[HugePagesName(size)] = *resource.NewQuantity(int64(total), resource.BinarySI)
	}
	return c
}

func parseResourceList(m map[string]string) (map[string]resource.Quantity, error) {
	out := map[string]resource.Quantity{}
	for k, v := range m {
		// The vectors' harness reports the parser's own error, as for reservedSystemCPUs.
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, err
		}
		if q.Sign() == -1 {
			return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", k, v)
		}
		out[k] = q
	}
	return out, nil
}

// hardEvictionReservation is the memory a hard memory.available threshold sets aside: a
// quantity, or a percentage of capacity (parsed as float32, as the kubelet does).
func hardEvictionReservation(thresholds map[string]string, capacity map[string]resource.Quantity) (map[string]resource.Quantity, error) {
	out := map[string]resource.Quantity{}
	val, ok := thresholds["memory.available"]
	if !ok {
		return out, nil
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return out, nil
		}
		f, err := strconv.ParseFloat(strings.TrimRight(val, "%"), 32)
		if err != nil {
			return nil, fmt.Errorf("invalid percentage %q for memory.available: %w", val, err)
		}
		pct := float32(f) / 100
		mem := capacity[string(v1.ResourceMemory)]
		out[string(v1.ResourceMemory)] = *resource.NewQuantity(int64(float64(mem.Value())*float64(pct)), resource.BinarySI)
		return out, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("failed to parse memory.available threshold %q: %w", val, err)
	}
	out[string(v1.ResourceMemory)] = q
	return out, nil
}

// NodeAllocatableReservation is what cmd/kubelet hands the managers as the node-allocatable
// reservation (kube + system reserved, reservedSystemCPUs, hard eviction memory).
func NodeAllocatableReservation(m *machine.Machine, cfg *KubeletConfig) (map[string]resource.Quantity, error) {
	e := &env{machine: m, cfg: cfg, gates: map[string]bool{}}
	if err := e.resolveConfig(); err != nil {
		return nil, err
	}
	return e.reservation, nil
}
