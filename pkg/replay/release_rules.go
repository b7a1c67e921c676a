package replay

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// What the resource managers do differently by kubelet release, read from each release's
// pkg/kubelet/cm/{cpumanager,memorymanager,topologymanager} and pkg/kubelet. Like decode's
// Gates, every row is one rule over the releases [Since, Until) (Until nil: still so); a
// release's rules are the rows that hold at it, gathered once per Start (rulesFor). Behaviour
// that never changed over the releases replayed is plain code; only what moves lives here. The
// feature gates the managers read are decode.Gates. See docs/adding-a-kubelet-release.md.

// oldestReplayed is the oldest kubelet release replayed.
var oldestReplayed = decode.Release("1.25")

// A Behaviour is one thing the managers do in some releases and not in others.
type Behaviour int

const (
	// ShortRejectedStatus: rejectPod writes a refused pod's status message as "Pod " + the
	// handler's message (1.25 kubelet.go:1967); later releases write "Pod was rejected: " +
	// message (1.26 kubelet.go:2070, 1.37 :2647). The Warning event carries the message as is.
	ShortRejectedStatus Behaviour = iota
	// SMTCheckBeforeReuse: the SMT checks run before a container already holding CPUs keeps
	// them (1.37 keeps them first).
	SMTCheckBeforeReuse
	// ReservedPhysicalCPUs: NewStaticPolicy maps each reserved CPU to its core and fails on a
	// CPU the machine lacks ("unable to build the reserved physical CPUs").
	ReservedPhysicalCPUs
	// SMTPhysicalCheck: full-pcpus-only also refuses when fewer free physical CPUs (outside the
	// reserved cores) remain than requested; before, only "not a multiple" is checked.
	SMTPhysicalCheck
	// SidecarAware: restartable init containers (sidecars) count as long-running in the pod's
	// CPU and memory budget, and their CPUs are not reused by the containers after them.
	SidecarAware
	// SMTErrorByCause: the SMT error's text follows its cause; before, the "not enough free
	// physical CPUs" text shows only when some are available.
	SMTErrorByCause
	// MemoryAffinityViolationCheck: the memory manager refuses a hint that would mix NUMA
	// groups ("preferred hint violates NUMA node allocation").
	MemoryAffinityViolationCheck
	// StrictReservation: strict-cpu-reservation is honoured (reserved CPUs out of the default
	// set, at validateState and in a fresh state).
	StrictReservation
	// GroupedMemoryCompare: the machine-state comparison sums free/reserved over each
	// assignment's NUMA group; before, every table field must be equal per node.
	GroupedMemoryCompare
	// BestEffortMemory: "BestEffort" is a known memory policy (Windows only; refused on Linux).
	BestEffortMemory
	// LowercaseTopologyOptionErrors: the option-level errors read "topology manager policy
	// alpha-level ..." (older releases capitalise them).
	LowercaseTopologyOptionErrors
	// UncorePartialRoundsUp: prefer-align-cpus-by-uncorecache takes a partial uncore cache in
	// whole cores rounded up, one CPU short for an odd request; before, rounded down.
	UncorePartialRoundsUp
	// SkipsPodLevelPods: the CPU and memory managers leave alone a pod with pod-level
	// resources while PodLevelResources is on; from PodLevelEntries on, unless
	// PodLevelResourceManagers is on too.
	SkipsPodLevelPods
	// PodLevelEntries: with PodLevelResourceManagers, pod-level CPU entries count as known CPUs
	// and pod-level memory blocks replace the containers' in the expected machine state.
	PodLevelEntries
	// MemorySkipsNoRequest: the static memory policy's Allocate leaves alone a container that
	// requests neither memory nor hugepages. Before, it runs on with nothing requested: the
	// default hint (none: no resource asks) or the NUMA-mixing check refuses it, else it stores
	// empty blocks. Only a container of a pod with pod-level resources gets there.
	MemorySkipsNoRequest
	// DistributedAlignsBySocket: distribute-cpus-across-numa with align-by-socket keeps the
	// NUMA nodes of one socket together.
	DistributedAlignsBySocket
	// DeviceSidecarKeeps: the device manager's Allocate keeps a restartable init container's
	// devices for it (removes them from those to reuse, 1.29 manager.go:343, 1.37 :416);
	// before, every init container hands its devices on (1.28 manager.go:342).
	DeviceSidecarKeeps
	// DeviceHintsOnDeviceNodes: the device manager builds a resource's hints from the NUMA
	// nodes hosting one of its devices only (1.36 topology_hints.go:164, 1.37 :159); before,
	// from every node of the machine (1.35 topology_hints.go:156, 1.34 :150), so masks adding
	// device-less nodes are hints too (not preferred).
	DeviceHintsOnDeviceNodes
	// DistributedRemainderInGroups: takeByTopologyNUMADistributed keeps a subset of NUMA nodes
	// for the remainder only if their free CPUs hold it in whole groups (1.38.0-beta.0
	// cpu_assignment.go:1072); before, if their free CPUs add up to it (1.37
	// cpu_assignment.go:1034), and where they are not whole groups the kubelet loops forever.
	DistributedRemainderInGroups
	// CombinationsCopied: the NUMA combinations takeByTopologyNUMADistributed tries are each a
	// copy (1.38.0-beta.0 cpu_assignment.go:738); before, one kept as the best shares its array
	// with those tried after it, which overwrite it (1.37 cpu_assignment.go:711).
	CombinationsCopied
	// SpreadRoundRobinCores: distribute-cpus-across-cores (the spread strategy) takes each
	// socket's CPUs round robin over its cores, fewest free CPUs first (1.38.0-beta.0
	// cpu_assignment.go:505); before, in CPU id order (1.37 cpu_assignment.go:516).
	SpreadRoundRobinCores
	// DistributedHintNUMAs: distribute-cpus-across-numa spreads CPUs taken for a topology hint
	// over at least the hint's NUMA node count, where that many can hold them (1.38.0-beta.0
	// cpu_assignment.go:696; policy_static.go:1022 and, pod-level, :576, :639); before, over the
	// fewest that hold them (1.37 cpu_assignment.go:677).
	DistributedHintNUMAs
	// UncoreFullFirst: prefer-align-cpus-by-uncorecache first takes every free uncore cache the
	// request still covers, each by its own size, then partial ones (1.38.0-beta.0
	// cpu_assignment.go:616); before, uncore cache by uncore cache, full ones only while the
	// request is at least the machine's average uncore size (1.37 cpu_assignment.go:608).
	UncoreFullFirst
	// PodMemoryKeptOnReadmit: with PodLevelResourceManagers, a pod-level pod whose pod-level
	// memory is in the state is re-admitted with it: its hints come from those blocks
	// (1.38.0-beta.0 memorymanager/policy_static.go:890) and AllocatePod leaves it alone (:206);
	// before, from its first container's blocks against the pod's request, and AllocatePod
	// allocates it again (1.37 policy_static.go:193).
	PodMemoryKeptOnReadmit
	// PodCPUsKeptOnReadmit: with PodLevelResourceManagers, a pod-level pod whose CPU set is in
	// the state is re-admitted with it (1.38.0-beta.0 cpumanager/policy_static.go:423, hints
	// :1265): its kept assignments stay, missing ones are carved from it; a set overlapping the
	// shared pool, or assignments that are no prefix of the pod's containers, are released first
	// (:777). Before, the pod is allocated afresh (1.37 policy_static.go:412).
	PodCPUsKeptOnReadmit
	// FreeUnitsByOwnSize: the CPU picker takes a socket or a core whole when all its own CPUs are
	// free (1.38.0-beta.0 cpu_assignment.go:330, :342); before, when it has as many free CPUs as
	// the machine's average socket or core (1.37 cpu_assignment.go:333, :345), which a core
	// with an offline sibling never has and a half-free core can.
	FreeUnitsByOwnSize
	// DeviceSkipsRunning: while the kubelet's sources are not all ready (its start), the device
	// manager leaves alone a container the runtime reported running at start: it holds its
	// devices already (#118635, fixing #118559: devicemanager/manager.go devicesToAllocate,
	// 1.28 :567, 1.37 :632). Before, every container of a re-admitted pod goes through the
	// registration and health checks (1.27.5 manager.go:549), so a running pod whose plugin has
	// not registered again is refused. Backported by patch: 1.25.14 (#119707), 1.26.9 (#119706),
	// 1.27.6 (#119432); 1.25.13, 1.26.8 and 1.27.5 do not have it.
	DeviceSkipsRunning
	// DeviceRunningAnyInstance: a container counts as running at start when any of its
	// instances in the runtime runs (isContainerAlreadyRunning visits the container map,
	// #135485: 1.36.0, 1.37 manager.go:1232; backported to 1.34.7 by #138027 and 1.35.4 by
	// #138042). Before, the one container ID GetContainerID returns must run (1.34.5
	// manager.go:1163, 1.33 :1167): with an exited instance beside the running one (a container
	// that restarted before the kubelet did) it returns either at random, and the replay takes
	// the exited one (the refusal the kubelet gives on such a draw).
	DeviceRunningAnyInstance
	// DeviceHealthChecks: devicesToAllocate refuses a resource whose plugin has not registered
	// ("cannot allocate unregistered device"), that has no healthy device, or whose devices the
	// container holds are no longer all healthy, before it looks at how many devices the
	// container still needs (#116376, fixing #109595: 1.28, 1.25.10 manager.go:545-555, 1.37
	// :645-657). Before (1.25.9 manager.go:539, 1.26.4 :547, 1.27.1 :547), a container holding
	// its devices needs nothing whatever their health or plugin, and an unregistered resource
	// reads "can't allocate unregistered device". Backported by patch: 1.25.10, 1.26.5, 1.27.2.
	DeviceHealthChecks
	// SupplementalGroupsPolicyCheck: the predicate handler refuses a pod asking for
	// SupplementalGroupsPolicy Strict on a node whose status does not report supporting it
	// (lifecycle/predicate.go rejectPodAdmissionBasedOnSupplementalGroupsPolicy, 1.37 :313). It
	// checks only while the feature gate's stage is beta or GA: from 1.33 (kube_features.go,
	// alpha in 1.31 and 1.32).
	SupplementalGroupsPolicyCheck

	behaviourCount // not a behaviour: the number of them
)

// A behaviourRange is one Behaviour over the releases [Since, Until).
type behaviourRange struct {
	Behaviour    Behaviour
	Since, Until *version.Version
}

// behaviourRanges: where each Behaviour starts and ends.
var behaviourRanges = []behaviourRange{
	{Behaviour: ShortRejectedStatus, Since: decode.Release("1.25"), Until: decode.Release("1.26")},
	{Behaviour: SMTCheckBeforeReuse, Since: decode.Release("1.25"), Until: decode.Release("1.37")},
	{Behaviour: ReservedPhysicalCPUs, Since: decode.Release("1.27")},
	{Behaviour: SMTPhysicalCheck, Since: decode.Release("1.27")},
	{Behaviour: SidecarAware, Since: decode.Release("1.29")},
	{Behaviour: SMTErrorByCause, Since: decode.Release("1.32")},
	{Behaviour: MemoryAffinityViolationCheck, Since: decode.Release("1.32")},
	{Behaviour: StrictReservation, Since: decode.Release("1.32")},
	{Behaviour: GroupedMemoryCompare, Since: decode.Release("1.32")},
	{Behaviour: BestEffortMemory, Since: decode.Release("1.32")},
	{Behaviour: LowercaseTopologyOptionErrors, Since: decode.Release("1.33")},
	{Behaviour: UncorePartialRoundsUp, Since: decode.Release("1.34")},
	{Behaviour: SkipsPodLevelPods, Since: decode.Release("1.34"), Until: decode.Release("1.36")},
	{Behaviour: PodLevelEntries, Since: decode.Release("1.36")},
	{Behaviour: MemorySkipsNoRequest, Since: decode.Release("1.37")},
	{Behaviour: DistributedAlignsBySocket, Since: decode.Release("1.37")},
	{Behaviour: DeviceSidecarKeeps, Since: decode.Release("1.29")},
	{Behaviour: DeviceHintsOnDeviceNodes, Since: decode.Release("1.36")},
	{Behaviour: DistributedRemainderInGroups, Since: release138Beta},
	{Behaviour: CombinationsCopied, Since: release138Beta},
	{Behaviour: SpreadRoundRobinCores, Since: release138Beta},
	{Behaviour: DistributedHintNUMAs, Since: release138Beta},
	{Behaviour: UncoreFullFirst, Since: release138Beta},
	{Behaviour: PodMemoryKeptOnReadmit, Since: release138Beta},
	{Behaviour: PodCPUsKeptOnReadmit, Since: release138Beta},
	{Behaviour: FreeUnitsByOwnSize, Since: release138Beta},
	{Behaviour: DeviceSkipsRunning, Since: decode.Release("1.25.14"), Until: decode.Release("1.26")},
	{Behaviour: DeviceSkipsRunning, Since: decode.Release("1.26.9"), Until: decode.Release("1.27")},
	{Behaviour: DeviceSkipsRunning, Since: decode.Release("1.27.6")},
	{Behaviour: DeviceRunningAnyInstance, Since: decode.Release("1.34.7"), Until: decode.Release("1.35")},
	{Behaviour: DeviceRunningAnyInstance, Since: decode.Release("1.35.4")},
	{Behaviour: DeviceHealthChecks, Since: decode.Release("1.25.10"), Until: decode.Release("1.26")},
	{Behaviour: DeviceHealthChecks, Since: decode.Release("1.26.5"), Until: decode.Release("1.27")},
	{Behaviour: DeviceHealthChecks, Since: decode.Release("1.27.2")},
	{Behaviour: SupplementalGroupsPolicyCheck, Since: decode.Release("1.33")},
}

// release138Beta bounds the rows 1.38 adds: its first build measured (1.38.0-beta.0, a
// pre-release, orders before 1.38.0, so Release("1.38") would leave it out). Re-check at rc.0.
var release138Beta = version.MustParseSemantic("1.38.0-beta.0")

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

// An optionRange is a policy option at one level over the releases [Since, Until). An option
// no row holds at a release is unknown there.
type optionRange struct {
	Option       string
	Level        optionLevel
	Since, Until *version.Version
}

// cpuOptionLevels: the static CPU policy's options (cpumanager/policy_options.go).
var cpuOptionLevels = []optionRange{
	{Option: OptFullPCPUsOnly, Level: beta, Since: decode.Release("1.25"), Until: decode.Release("1.33")},
	{Option: OptFullPCPUsOnly, Level: stable, Since: decode.Release("1.33")},
	{Option: OptDistributeCPUsAcrossNUMA, Level: alpha, Since: decode.Release("1.25"), Until: decode.Release("1.33")},
	{Option: OptDistributeCPUsAcrossNUMA, Level: beta, Since: decode.Release("1.33")},
	{Option: OptAlignBySocket, Level: alpha, Since: decode.Release("1.25")},
	{Option: OptDistributeCPUsAcrossCores, Level: alpha, Since: decode.Release("1.31")},
	{Option: OptStrictCPUReservation, Level: alpha, Since: decode.Release("1.32"), Until: decode.Release("1.33")},
	{Option: OptStrictCPUReservation, Level: beta, Since: decode.Release("1.33"), Until: decode.Release("1.35")},
	{Option: OptStrictCPUReservation, Level: stable, Since: decode.Release("1.35")},
	{Option: OptPreferAlignByUncoreCache, Level: alpha, Since: decode.Release("1.32"), Until: decode.Release("1.34")},
	{Option: OptPreferAlignByUncoreCache, Level: beta, Since: decode.Release("1.34"), Until: decode.Release("1.36")},
	{Option: OptPreferAlignByUncoreCache, Level: stable, Since: decode.Release("1.36")},
}

// topologyOptionLevels: the topology manager's options (topologymanager/policy_options.go);
// 1.25 has none.
var topologyOptionLevels = []optionRange{
	{Option: OptPreferClosestNUMANodes, Level: alpha, Since: decode.Release("1.26"), Until: decode.Release("1.28")},
	{Option: OptPreferClosestNUMANodes, Level: beta, Since: decode.Release("1.28"), Until: decode.Release("1.32")},
	{Option: OptPreferClosestNUMANodes, Level: stable, Since: decode.Release("1.32")},
	{Option: OptMaxAllowableNUMANodes, Level: beta, Since: decode.Release("1.31"), Until: decode.Release("1.35")},
	{Option: OptMaxAllowableNUMANodes, Level: stable, Since: decode.Release("1.35")},
}

// An optionConflict is a pair of CPU policy options NewStaticPolicyOptions refuses together,
// over the releases [Since, Until).
type optionConflict struct {
	Options      [2]string
	Since, Until *version.Version
}

// cpuOptionConflicts, in the order NewStaticPolicyOptions checks them.
var cpuOptionConflicts = []optionConflict{
	{Options: [2]string{OptFullPCPUsOnly, OptDistributeCPUsAcrossCores}, Since: decode.Release("1.31")},
	{Options: [2]string{OptDistributeCPUsAcrossNUMA, OptDistributeCPUsAcrossCores}, Since: decode.Release("1.31")},
	{Options: [2]string{OptPreferAlignByUncoreCache, OptDistributeCPUsAcrossCores}, Since: decode.Release("1.32")},
	{Options: [2]string{OptPreferAlignByUncoreCache, OptDistributeCPUsAcrossNUMA}, Since: decode.Release("1.32")},
}

// holds is whether [since, until) has v.
func holds(v, since, until *version.Version) bool {
	return !v.LessThan(since) && (until == nil || v.LessThan(until))
}

// releaseRules are the rows that hold at one kubelet release.
type releaseRules struct {
	behaviours [behaviourCount]bool
	// cpuOptions and topologyOptions: every option the release knows, and its level.
	cpuOptions, topologyOptions map[string]optionLevel
	// cpuOptionConflicts: the pairs refused together, in order.
	cpuOptionConflicts [][2]string
}

// gathered is rulesFor's rows by version: they are data, the same for every node and every
// replayed start of a version, and read only.
var gathered sync.Map // version string -> *releaseRules

// rulesFor gathers the rules of v, and false when v predates the oldest release replayed.
func rulesFor(v *version.Version) (*releaseRules, bool) {
	if v.LessThan(oldestReplayed) {
		return nil, false
	}
	if r, ok := gathered.Load(v.String()); ok {
		return r.(*releaseRules), true
	}
	r := gatherRules(v)
	gathered.Store(v.String(), r)
	return r, true
}

func gatherRules(v *version.Version) *releaseRules {
	r := &releaseRules{cpuOptions: map[string]optionLevel{}, topologyOptions: map[string]optionLevel{}}
	for _, row := range behaviourRanges {
		if holds(v, row.Since, row.Until) {
			r.behaviours[row.Behaviour] = true
		}
	}
	for _, row := range cpuOptionLevels {
		if holds(v, row.Since, row.Until) {
			r.cpuOptions[row.Option] = row.Level
		}
	}
	for _, row := range topologyOptionLevels {
		if holds(v, row.Since, row.Until) {
			r.topologyOptions[row.Option] = row.Level
		}
	}
	for _, row := range cpuOptionConflicts {
		if holds(v, row.Since, row.Until) {
			r.cpuOptionConflicts = append(r.cpuOptionConflicts, row.Options)
		}
	}
	return r
}

// has is whether the release does b.
func (r *releaseRules) has(b Behaviour) bool { return r.behaviours[b] }

// Behaves is whether kubelet release v does b (false for a release older than those replayed).
func Behaves(v *version.Version, b Behaviour) bool {
	if v == nil {
		return false
	}
	r, ok := rulesFor(v)
	return ok && r.has(b)
}

// RejectedStatusMessage is the status message rejectPod gives a pod an admit handler refused
// with message.
func (r *releaseRules) RejectedStatusMessage(message string) string {
	if r.has(ShortRejectedStatus) {
		return "Pod " + message
	}
	return "Pod was rejected: " + message
}

// checkTopologyOption is topologymanager.CheckPolicyOptionAvailable for the release.
func (r *releaseRules) checkTopologyOption(name string, gate func(string) bool) error {
	level, known := r.topologyOptions[name]
	lower := r.has(LowercaseTopologyOptionErrors)
	text := "Topology Manager Policy %s-level Options not enabled, but option %q provided"
	if lower {
		text = "topology manager policy %s-level options not enabled, but option %q provided"
	}
	switch {
	case !known:
		return fmt.Errorf("unknown Topology Manager Policy option: %q", name)
	case level == alpha && !gate(decode.GateTopologyManagerPolicyAlphaOptions):
		return fmt.Errorf(text, map[bool]string{false: "Alpha", true: "alpha"}[lower], name)
	case level == beta && !gate(decode.GateTopologyManagerPolicyBetaOptions):
		return fmt.Errorf(text, map[bool]string{false: "Beta", true: "beta"}[lower], name)
	}
	return nil
}
