package replay

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The resource managers change with the kubelet release. Each row below is one release range,
// read from that release's pkg/kubelet/cm/{cpumanager,memorymanager,topologymanager} and
// cmd/kubelet/app: a row holds from Since until the next row. Behaviour that never changed
// over the releases covered is plain code; only what moves lives here.

// optionLevel is a policy option's maturity, which decides the gate it needs.
type optionLevel int

const (
	alpha  optionLevel = iota + 1 // needs the Alpha options gate
	beta                          // needs the Beta options gate
	stable                        // needs nothing
)

func (l optionLevel) String() string {
	return map[optionLevel]string{alpha: "alpha", beta: "beta", stable: "GA"}[l]
}

// Feature gates the managers read (their rows by release: decode.Gates).
const (
	GateCPUAlphaOptions          = decode.GateCPUManagerPolicyAlphaOptions
	GateCPUBetaOptions           = decode.GateCPUManagerPolicyBetaOptions
	GatePodLevelResourceManagers = decode.GatePodLevelResourceManagers
	GatePodLevelResources        = decode.GatePodLevelResources
	GatePodLevelResourcesFixQOS  = decode.GatePodLevelResourcesFixKubeletQOSClass
	GateTopologyAlphaOptions     = decode.GateTopologyManagerPolicyAlphaOptions
	GateTopologyBetaOptions      = decode.GateTopologyManagerPolicyBetaOptions
	GateTopologyOptions          = decode.GateTopologyManagerPolicyOptions
)

// Release is what one range of kubelet releases does.
type Release struct {
	Since *version.Version
	// CPUOptions: every option the static CPU policy knows, and its level.
	CPUOptions map[string]optionLevel
	// ExclusiveOptions are pairs NewStaticPolicyOptions refuses together, in its order.
	ExclusiveOptions [][2]string
	// TopologyOptions: every topology manager policy option, and its level; nil = the release
	// has no options (any is unknown).
	TopologyOptions map[string]optionLevel
	// LowercaseTopologyOptionErrors: the option-level errors read "topology manager policy
	// alpha-level ..." (older releases capitalise them).
	LowercaseTopologyOptionErrors bool
	// ReservedPhysicalCPUs: NewStaticPolicy maps each reserved CPU to its core and fails on a
	// CPU the machine lacks ("unable to build the reserved physical CPUs").
	ReservedPhysicalCPUs bool
	// StrictReservation: strict-cpu-reservation is honoured (reserved CPUs out of the default
	// set, at validateState and in a fresh state).
	StrictReservation bool
	// SidecarAware: restartable init containers (sidecars) count as long-running in the pod's
	// CPU and memory budget, and their CPUs are not reused by the containers after them.
	SidecarAware bool
	// SMTPhysicalCheck: full-pcpus-only also refuses when fewer free physical CPUs (outside the
	// reserved cores) remain than requested; before, only "not a multiple" is checked.
	SMTPhysicalCheck bool
	// SMTErrorByCause: the SMT error's text follows its cause; before, the "not enough free
	// physical CPUs" text shows only when some are available.
	SMTErrorByCause bool
	// SMTCheckBeforeReuse: the SMT checks run before a container already holding CPUs keeps
	// them (1.37 keeps them first).
	SMTCheckBeforeReuse bool
	// UncorePartialRoundsUp: prefer-align-cpus-by-uncorecache takes a partial uncore cache in
	// whole cores rounded up, one CPU short for an odd request (1.34+); before, rounded down.
	UncorePartialRoundsUp bool
	// DistributedAlignsBySocket: distribute-cpus-across-numa with align-by-socket keeps the
	// NUMA nodes of one socket together (1.37+).
	DistributedAlignsBySocket bool
	// MemoryAffinityViolationCheck: the memory manager refuses a hint that would mix NUMA
	// groups ("preferred hint violates NUMA node allocation").
	MemoryAffinityViolationCheck bool
	// SkipsPodLevelPods: the CPU and memory managers leave alone a pod with pod-level
	// resources while PodLevelResources is on (1.34, 1.35); from PodLevelEntries on, unless
	// PodLevelResourceManagers is on too.
	SkipsPodLevelPods bool
	// PodLevelEntries: with PodLevelResourceManagers, pod-level CPU entries count as known CPUs
	// and pod-level memory blocks replace the containers' in the expected machine state.
	PodLevelEntries bool
	// MemorySkipsNoRequest: the static memory policy's Allocate leaves alone a container that
	// requests neither memory nor hugepages (1.37+). Before, it runs on with nothing requested:
	// the default hint (none: no resource asks) or the NUMA-mixing check refuses it, else it
	// stores empty blocks. Only a container of a pod with pod-level resources gets there.
	MemorySkipsNoRequest bool
	// GroupedMemoryCompare: the machine-state comparison sums free/reserved over each
	// assignment's NUMA group (1.32+); before, every table field must be equal per node.
	GroupedMemoryCompare bool
	// BestEffortMemory: "BestEffort" is a known memory policy (Windows only; refused on Linux).
	BestEffortMemory bool
	// ShortRejectedStatus: rejectPod writes a refused pod's status message as "Pod " + the
	// handler's message (1.25 kubelet.go:1967); later releases write "Pod was rejected: " +
	// message (1.26 kubelet.go:2070, 1.37 :2647). The Warning event carries the message as is.
	ShortRejectedStatus bool
}

var (
	options125 = map[string]optionLevel{OptDistributeCPUsAcrossNUMA: alpha, OptAlignBySocket: alpha, OptFullPCPUsOnly: beta}
	options131 = map[string]optionLevel{OptDistributeCPUsAcrossNUMA: alpha, OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha, OptFullPCPUsOnly: beta}
	options132 = map[string]optionLevel{OptDistributeCPUsAcrossNUMA: alpha, OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha,
		OptStrictCPUReservation: alpha, OptPreferAlignByUncoreCache: alpha, OptFullPCPUsOnly: beta}
	options133 = map[string]optionLevel{OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha, OptPreferAlignByUncoreCache: alpha,
		OptStrictCPUReservation: beta, OptDistributeCPUsAcrossNUMA: beta, OptFullPCPUsOnly: stable}
	options134 = map[string]optionLevel{OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha,
		OptStrictCPUReservation: beta, OptDistributeCPUsAcrossNUMA: beta, OptPreferAlignByUncoreCache: beta, OptFullPCPUsOnly: stable}
	options135 = map[string]optionLevel{OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha,
		OptDistributeCPUsAcrossNUMA: beta, OptPreferAlignByUncoreCache: beta, OptFullPCPUsOnly: stable, OptStrictCPUReservation: stable}
	options136 = map[string]optionLevel{OptAlignBySocket: alpha, OptDistributeCPUsAcrossCores: alpha,
		OptDistributeCPUsAcrossNUMA: beta, OptFullPCPUsOnly: stable, OptStrictCPUReservation: stable, OptPreferAlignByUncoreCache: stable}

	exclusive131 = [][2]string{{OptFullPCPUsOnly, OptDistributeCPUsAcrossCores}, {OptDistributeCPUsAcrossNUMA, OptDistributeCPUsAcrossCores}}
	exclusive132 = append(exclusive131[:2:2], [2]string{OptPreferAlignByUncoreCache, OptDistributeCPUsAcrossCores}, [2]string{OptPreferAlignByUncoreCache, OptDistributeCPUsAcrossNUMA})

	topology126 = map[string]optionLevel{OptPreferClosestNUMANodes: alpha}
	topology128 = map[string]optionLevel{OptPreferClosestNUMANodes: beta}
	topology129 = topology128
	topology131 = map[string]optionLevel{OptPreferClosestNUMANodes: beta, OptMaxAllowableNUMANodes: beta}
	topology132 = map[string]optionLevel{OptPreferClosestNUMANodes: stable, OptMaxAllowableNUMANodes: beta}
	topology135 = map[string]optionLevel{OptPreferClosestNUMANodes: stable, OptMaxAllowableNUMANodes: stable}
)

// releases, oldest first. 1.25 is the oldest release replayed.
var releases = []Release{
	{Since: decode.Release("1.25"), CPUOptions: options125, SMTCheckBeforeReuse: true, ShortRejectedStatus: true},
	{Since: decode.Release("1.26"), CPUOptions: options125, TopologyOptions: topology126, SMTCheckBeforeReuse: true},
	{Since: decode.Release("1.27"), CPUOptions: options125, TopologyOptions: topology126, SMTCheckBeforeReuse: true, ReservedPhysicalCPUs: true, SMTPhysicalCheck: true},
	{Since: decode.Release("1.28"), CPUOptions: options125, TopologyOptions: topology128, SMTCheckBeforeReuse: true, ReservedPhysicalCPUs: true, SMTPhysicalCheck: true},
	{Since: decode.Release("1.29"), CPUOptions: options125, TopologyOptions: topology129, SMTCheckBeforeReuse: true, ReservedPhysicalCPUs: true, SMTPhysicalCheck: true,
		SidecarAware: true},
	{Since: decode.Release("1.31"), CPUOptions: options131, ExclusiveOptions: exclusive131, TopologyOptions: topology131, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true},
	{Since: decode.Release("1.32"), CPUOptions: options132, ExclusiveOptions: exclusive132, TopologyOptions: topology132, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true},
	{Since: decode.Release("1.33"), CPUOptions: options133, ExclusiveOptions: exclusive132, TopologyOptions: topology132, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, LowercaseTopologyOptionErrors: true},
	{Since: decode.Release("1.34"), UncorePartialRoundsUp: true, SkipsPodLevelPods: true, CPUOptions: options134, ExclusiveOptions: exclusive132, TopologyOptions: topology132, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, LowercaseTopologyOptionErrors: true},
	{Since: decode.Release("1.35"), UncorePartialRoundsUp: true, SkipsPodLevelPods: true, CPUOptions: options135, ExclusiveOptions: exclusive132, TopologyOptions: topology135, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, LowercaseTopologyOptionErrors: true},
	{Since: decode.Release("1.36"), UncorePartialRoundsUp: true, CPUOptions: options136, ExclusiveOptions: exclusive132, TopologyOptions: topology135, SMTCheckBeforeReuse: true,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, LowercaseTopologyOptionErrors: true, PodLevelEntries: true},
	{Since: decode.Release("1.37"), MemorySkipsNoRequest: true, UncorePartialRoundsUp: true, DistributedAlignsBySocket: true, CPUOptions: options136, ExclusiveOptions: exclusive132, TopologyOptions: topology135,
		ReservedPhysicalCPUs: true, SMTPhysicalCheck: true, SidecarAware: true, SMTErrorByCause: true, MemoryAffinityViolationCheck: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, LowercaseTopologyOptionErrors: true, PodLevelEntries: true},
}

// releaseFor returns the rules of v (the newest row for releases after the last), and false
// when v predates every row.
func releaseFor(v *version.Version) (*Release, bool) {
	if v.LessThan(releases[0].Since) {
		return nil, false
	}
	i := sort.Search(len(releases), func(i int) bool { return v.LessThan(releases[i].Since) })
	return &releases[i-1], true
}

// RejectedStatusMessage is the status message rejectPod gives a pod an admit handler refused
// with message.
func (r *Release) RejectedStatusMessage(message string) string {
	if r.ShortRejectedStatus {
		return "Pod " + message
	}
	return "Pod was rejected: " + message
}

// checkTopologyOption is topologymanager.CheckPolicyOptionAvailable for the release.
func (r *Release) checkTopologyOption(name string, gate func(string) bool) error {
	level, known := r.TopologyOptions[name]
	text := "Topology Manager Policy %s-level Options not enabled, but option %q provided"
	if r.LowercaseTopologyOptionErrors {
		text = "topology manager policy %s-level options not enabled, but option %q provided"
	}
	switch {
	case !known:
		return fmt.Errorf("unknown Topology Manager Policy option: %q", name)
	case level == alpha && !gate(GateTopologyAlphaOptions):
		return fmt.Errorf(text, map[bool]string{false: "Alpha", true: "alpha"}[r.LowercaseTopologyOptionErrors], name)
	case level == beta && !gate(GateTopologyBetaOptions):
		return fmt.Errorf(text, map[bool]string{false: "Beta", true: "beta"}[r.LowercaseTopologyOptionErrors], name)
	}
	return nil
}
