package doctor

import (
	"sort"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The CPU manager's and memory manager's start checks change with the kubelet release. Each row
// below is one era, read from that release's pkg/kubelet/cm/{cpumanager,memorymanager} and
// cmd/kubelet/app: a row holds from Since until the next row. Checks that never changed between
// 1.25 and 1.37 are plain code in cpu.go and memory.go; only what moves lives here.

// optionLevel is a CPU manager policy option's maturity, which decides the gate it needs.
type optionLevel int

const (
	alpha  optionLevel = iota + 1 // needs CPUManagerPolicyAlphaOptions
	beta                          // needs CPUManagerPolicyBetaOptions
	stable                        // needs nothing
)

// The static policy's options (policy_options.go).
const (
	optFullPCPUsOnly             = "full-pcpus-only"
	optDistributeCPUsAcrossNUMA  = "distribute-cpus-across-numa"
	optAlignBySocket             = "align-by-socket"
	optDistributeCPUsAcrossCores = "distribute-cpus-across-cores"
	optStrictCPUReservation      = "strict-cpu-reservation"
	optPreferAlignByUncoreCache  = "prefer-align-cpus-by-uncorecache"
)

// Feature gates the start checks read (their rows: decode.Gates).
const (
	gateCPUAlphaOptions   = decode.GateCPUManagerPolicyAlphaOptions
	gateCPUBetaOptions    = decode.GateCPUManagerPolicyBetaOptions
	gatePodLevelResources = decode.GatePodLevelResourceManagers
)

// era is what one range of kubelet releases checks at start.
type era struct {
	Since *version.Version
	// CPUOptions: every option the static policy knows, and its level.
	CPUOptions map[string]optionLevel
	// ExclusiveOptions are pairs NewStaticPolicyOptions refuses together, in its order.
	ExclusiveOptions [][2]string
	// ReservedPhysicalCPUs: NewStaticPolicy maps each reserved CPU to its core and fails on a
	// CPU the machine lacks ("unable to build the reserved physical CPUs").
	ReservedPhysicalCPUs bool
	// StrictReservation: validateState honours strict-cpu-reservation (reserved CPUs must be
	// out of the default set, and out of the CPUs it expects).
	StrictReservation bool
	// PodLevelEntries: with PodLevelResourceManagers, pod-level CPU entries count as known CPUs
	// and pod-level memory blocks replace the containers' in the expected machine state.
	PodLevelEntries bool
	// GroupedMemoryCompare: the machine-state comparison sums free/reserved over each
	// assignment's NUMA group (1.32+); before, every table field must be equal per node.
	GroupedMemoryCompare bool
	// BestEffortMemory: "BestEffort" is a known memory policy (Windows only; refused on Linux).
	BestEffortMemory bool
}

var (
	options125 = map[string]optionLevel{optDistributeCPUsAcrossNUMA: alpha, optAlignBySocket: alpha, optFullPCPUsOnly: beta}
	options131 = map[string]optionLevel{optDistributeCPUsAcrossNUMA: alpha, optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha, optFullPCPUsOnly: beta}
	options132 = map[string]optionLevel{optDistributeCPUsAcrossNUMA: alpha, optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha,
		optStrictCPUReservation: alpha, optPreferAlignByUncoreCache: alpha, optFullPCPUsOnly: beta}
	options133 = map[string]optionLevel{optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha, optPreferAlignByUncoreCache: alpha,
		optStrictCPUReservation: beta, optDistributeCPUsAcrossNUMA: beta, optFullPCPUsOnly: stable}
	options134 = map[string]optionLevel{optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha,
		optStrictCPUReservation: beta, optDistributeCPUsAcrossNUMA: beta, optPreferAlignByUncoreCache: beta, optFullPCPUsOnly: stable}
	options135 = map[string]optionLevel{optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha,
		optDistributeCPUsAcrossNUMA: beta, optPreferAlignByUncoreCache: beta, optFullPCPUsOnly: stable, optStrictCPUReservation: stable}
	options136 = map[string]optionLevel{optAlignBySocket: alpha, optDistributeCPUsAcrossCores: alpha,
		optDistributeCPUsAcrossNUMA: beta, optFullPCPUsOnly: stable, optStrictCPUReservation: stable, optPreferAlignByUncoreCache: stable}

	exclusive131 = [][2]string{{optFullPCPUsOnly, optDistributeCPUsAcrossCores}, {optDistributeCPUsAcrossNUMA, optDistributeCPUsAcrossCores}}
	exclusive132 = append(exclusive131[:2:2], [2]string{optPreferAlignByUncoreCache, optDistributeCPUsAcrossCores}, [2]string{optPreferAlignByUncoreCache, optDistributeCPUsAcrossNUMA})
)

// eras, oldest first. 1.25 is the oldest release doctor predicts for.
var eras = []era{
	{Since: decode.Release("1.25"), CPUOptions: options125},
	{Since: decode.Release("1.27"), CPUOptions: options125, ReservedPhysicalCPUs: true},
	{Since: decode.Release("1.28"), CPUOptions: options125, ReservedPhysicalCPUs: true},
	{Since: decode.Release("1.31"), CPUOptions: options131, ExclusiveOptions: exclusive131, ReservedPhysicalCPUs: true},
	{Since: decode.Release("1.32"), CPUOptions: options132, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true},
	{Since: decode.Release("1.33"), CPUOptions: options133, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true},
	{Since: decode.Release("1.34"), CPUOptions: options134, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true},
	{Since: decode.Release("1.35"), CPUOptions: options135, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true},
	{Since: decode.Release("1.36"), CPUOptions: options136, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, PodLevelEntries: true},
	{Since: decode.Release("1.37"), CPUOptions: options136, ExclusiveOptions: exclusive132, ReservedPhysicalCPUs: true,
		StrictReservation: true, GroupedMemoryCompare: true, BestEffortMemory: true, PodLevelEntries: true},
}

// eraFor returns the rules of v (the newest era for releases after the last row), and false
// when v predates every row.
func eraFor(v *version.Version) (*era, bool) {
	if v.LessThan(eras[0].Since) {
		return nil, false
	}
	i := sort.Search(len(eras), func(i int) bool { return v.LessThan(eras[i].Since) })
	return &eras[i-1], true
}
