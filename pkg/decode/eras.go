package decode

import (
	"slices"

	cpustate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/cpustate"
	memstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/memstate"
)

// The era table: every layout era of every checkpoint file, as docs/checkpoint-formats.md
// establishes them by running the real kubelet code. A row says what the file
// looks like (its layout and shape), which checksums it carries and how each is computed, which
// kubelets write it and which read it. Everything else is derived from the rows: each kubelet's
// restore path (its attempts, in order), the "home" reader that judges a file when no
// --kubelet-version is given, and the prose saying who checks each checksum. See
// docs/adding-a-kubelet-release.md.
//
// Rows are listed per file, newest era first: that is the order in which a kubelet reading
// several layouts tries them (the exceptions say First), and detection tries the shaped rows in
// this order before the file's fallback row (the one without a Shape).

// An era is one layout era of one checkpoint file.
type era struct {
	ID    string
	Kinds []Kind
	// Layout is the Go value the writers (and this era's readers) decode the file into.
	Layout *layout
	// Shape says whether the top-level JSON object (keys lower-cased) has this era's own marks;
	// nil marks the file's fallback era, whose shape older ones share.
	Shape func(*shapeDoc) bool
	// Adds is the field this era added to the previous one: kubelets reading its files through an
	// older layout drop it (said in the checksum prose).
	Adds string
	// AlwaysMarked: every file this era's writers write carries its Shape's mark (a version), so
	// unlike a sub-era that only adds a field, they never write a file of an older era.
	AlwaysMarked bool
	// Writes is the kubelets writing this era.
	Writes []span
	// Sums is the stored checksums, the one that decides for this era's own readers first.
	Sums []sum
	// Reads is the kubelets whose restore decodes the file into Layout.
	Reads []read
}

// A sum is one stored checksum: the JSON field holding it and how it is computed.
type sum struct {
	Field string
	Rule  *checksumRule
}

// A read is how the kubelets of By decode the file into an era's layout: one GetCheckpoint
// attempt of their restore path. Only what differs from the plain case is said.
type read struct {
	By span
	// Rules replace the era's first checksum rule: retries (a legacy text, a name no release
	// wrote tried first).
	Rules []*checksumRule
	// First: tried before newer layouts (1.18-1.35 try V1 before V2).
	First bool
	// Names, Note, Authoritative, Quiet, Keeps: see attempt.
	Names         map[string]string
	Note          string
	Authoritative string
	Quiet         bool
	Keeps         bool
}

// A fileSpec is what holds for a checkpoint file in every era: how its kubelets word a failure.
type fileSpec struct {
	// Keys are the top-level keys (lower-cased) any era has; an object with none of them is not
	// this checkpoint. Nil accepts any object.
	Keys []string
	// Wrap words the error (the first row whose span has the kubelet): %[1]s is the error,
	// %[2]q the file's path on the node.
	Wrap []wording
	// PayloadWrap words an error decoding the data document after the checkpoint loaded; empty
	// uses Wrap.
	PayloadWrap string
	// Unchecked: the file has no checksum, the kubelet only decodes it.
	Unchecked bool
	// Refused says what the kubelet does once it refuses the file (the first row whose span
	// has the kubelet): not every manager stops the kubelet.
	Refused []refusal
	// Restore is the checks restoreState makes once the file loaded (restore.go), by release.
	Restore []restoreRule
}

type wording struct {
	By   span
	Text string
}

type refusal struct {
	By span
	Refusal
}

const (
	wrapCPU117 = "could not restore state from checkpoint: %[1]s\nPlease drain this node and delete the CPU manager checkpoint file %[2]q before restarting Kubelet."
	wrapCPU    = "could not restore state from checkpoint: %[1]s, please drain this node and delete the CPU manager checkpoint file %[2]q before restarting Kubelet"
	wrapMemory = "could not restore state from checkpoint: %[1]s, please drain this node and delete the memory manager checkpoint file %[2]q before restarting Kubelet"
	wrapNone   = "%[1]s"
	// A failure decoding the v2 data document is returned unwrapped (GetClaimInfoStateList
	// runs after GetOrCreate).
	wrapDRA       = "failed to get checkpoint dra_manager_state: %[1]s"
	wrapPodStatus = "could not restore state from checkpoint: %[1]s, please drain this node and delete pod allocation checkpoint file %[2]q before restarting Kubelet"
	wrapPodInfo   = "could not restore state from checkpoint: %[1]s, please drain this node and delete pod resource information checkpoint file %[2]q before restarting Kubelet"
	// 1.35+ open actuated_pods_state in kuberuntime, which wraps the state error once more.
	wrapActuated = "failed to initialize actuated state checkpoint: " + wrapPodInfo

	plrm = GatePodLevelResourceManagers
)

var allocationPanics = stops("the allocation manager panics, and the kubelet with it")

func stops(effect string) Refusal { return Refusal{Effect: effect} }

var files = map[Kind]fileSpec{
	KindCPU: {Keys: []string{"policyname", "defaultcpuset", "entries", "podentries", "checksum", "data", "datachecksum"},
		Wrap:    []wording{{between("", "1.18"), wrapCPU117}, {every, wrapCPU}},
		Refused: []refusal{{every, stops("the CPU manager fails, and the kubelet does not start")}},
		// Every set is parsed (a pod-level set already while decoding the JSON).
		Restore: []restoreRule{
			{between("", "1.18"), cpuRestore{Parse: cpusetUnchecked, Default: cpuDefault, ByContainerID: cpuByContainerID}},
			{between("1.18", "1.22"), cpuRestore{Parse: cpusetUnchecked, Default: cpuDefault, Entry: cpuEntry}},
			{between("1.22", "1.27"), cpuRestore{Parse: cpusetGE, Default: cpuDefault, Entry: cpuEntry}},
			{between("1.27", "1.37"), cpuRestore{Parse: cpusetGT, Default: cpuDefault, Entry: cpuEntry}},
			{from("1.37"), cpuRestore{Parse: cpusetGT, Default: "could not parse default CPU set %q: %v", Entry: cpuEntry,
				Baseline: "could not parse Baseline cpuset %q for container %q in pod %q: %v", BaselineGate: GateInPlacePodVerticalScalingExclusiveCPUs}},
		}},
	KindMemory: {Keys: []string{"policyname", "machinestate", "entries", "podentries", "checksum", "data", "datachecksum"},
		Wrap: []wording{{every, wrapMemory}}, Refused: []refusal{{every, stops("the memory manager fails, and the kubelet does not start")}}},
	KindDevices: {Keys: []string{"data", "checksum"}, Wrap: []wording{{every, wrapNone}},
		// manager.go Start: "Continue after failing to read checkpoint file" (1.17.17:234, 1.37.1:377).
		Refused: []refusal{{every, Refusal{KubeletStarts: true, Effect: "the device manager logs it and starts without the file's allocations: " +
			"until those pods restart it may hand their devices to other pods"}}},
		// Nothing fails the restore after the checksum; entries whose AllocResp does not
		// unmarshal are skipped, by the rules of the era's device plugin API code.
		Restore: []restoreRule{
			// The code regenerated with gogo 1.3.2 checks map entries' skips (1.18.19, 1.19.10,
			// 1.20.6; the module proxy serves no 1.18.18).
			{between("", "1.18"), devRestore{allocRespRule{gogoRecursiveSkip, allocRespV1beta1, true}}},
			{between("1.18", "1.18.19"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, true}}},
			{between("1.18.19", "1.19"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, false}}},
			{between("1.19", "1.19.10"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, true}}},
			{between("1.19.10", "1.20"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, false}}},
			{between("1.20", "1.20.6"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, true}}},
			{between("1.20.6", "1.28"), devRestore{allocRespRule{gogoDepthSkip, allocRespV1beta1, false}}},
			{between("1.28", "1.34"), devRestore{allocRespRule{gogoDepthSkip, allocRespCDI, false}}},
			{from("1.34"), devRestore{allocRespRule{googleProtobuf, allocRespCDI, false}}},
		}},
	KindDRA: {Keys: []string{"version", "entries", "checksum", "data"}, Wrap: []wording{{every, wrapDRA}}, PayloadWrap: wrapNone,
		Refused: []refusal{{every, stops("the DRA manager cannot be created, and the kubelet does not start")}}},
	KindDRAHealth: {Unchecked: true, Refused: []refusal{{every, Refusal{KubeletStarts: true,
		Effect: "the DRA manager logs \"Failed to load health checkpoint, proceeding with empty cache\" and starts with no device health"}}}},
	// The status manager (1.27-1.32) and the allocation manager (1.33+) panic: "a critical,
	// non-recoverable failure".
	KindPodStatus: {Keys: []string{"allocationentries", "resizestatusentries", "checksum", "data"}, Wrap: []wording{{every, wrapPodStatus}},
		Refused: []refusal{{every, stops("the status manager panics, and the kubelet with it")}}},
	KindAllocated: {Keys: []string{"version", "data", "checksum"}, Wrap: []wording{{every, wrapPodInfo}}, Refused: []refusal{{every, allocationPanics}}},
	// 1.35+ open actuated_pods_state in kuberuntime, which returns the error (kuberuntime_manager.go:384).
	KindActuated: {Keys: []string{"version", "data", "checksum"}, Wrap: []wording{{between("", "1.35"), wrapPodInfo}, {every, wrapActuated}},
		Refused: []refusal{{between("", "1.35"), allocationPanics},
			{every, stops("the container runtime manager cannot be created, and the kubelet does not start")}}},
}

func renamed(from, to string) []rewrite       { return []rewrite{{From: from, To: to}} }
func names(from, to string) map[string]string { return map[string]string{from: to} }
func kinds(k ...Kind) []Kind                  { return k }
func spans(s ...span) []span                  { return s }

// Rules used by more than one row (a layout keeps its own, another era's readers reuse it).
var (
	// 1.36+ with PodLevelResourceManagers off first try the name no release ever wrote.
	ruleCPUV2Unrenamed = spewWhole("cpu-v2-unrenamed", cpuV2Sum).zeroOK(every)
	ruleCPUV2          = spewWhole("cpu-v2", cpuV2Sum, renamed("CPUManagerCheckpointV2", "CPUManagerCheckpoint")...).zeroOK(every)
	ruleCPUV3          = spewWhole("cpu-v3", cpuV3Sum, renamed("CPUManagerCheckpointV3", "CPUManagerCheckpoint")...)
	ruleMemV1Unrenamed = spewWhole("mem-v1-unrenamed", memV1Sum).zeroOK(from("1.36"))
	ruleMemV1          = spewWhole("mem-v1", memV1Sum, renamed("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint")...).zeroOK(from("1.36"))
	ruleDRAV1b         = spewWhole("dra-v1b", draV1bSum)
	ruleDRAV1c         = spewWhole("dra-v1c", draV1cSum)
	// DRA 1.28-1.30 retry a failed checksum over the checkpoint rebuilt as the 1.27 layout
	// (version forced to "v1", non-nil entries, handles dropped), two type names rewritten.
	ruleDRAV1bLegacy = spewOf("dra-v1a", draV1bSum, draV1bWithoutHandles, false, draLegacyRewrites...).legacy()
	ruleDRAV1cLegacy = spewOf("dra-v1a", draV1cSum, draV1cWithoutHandles, false, draLegacyRewrites...).legacy()
)

var eras = []*era{
	// cpu_manager_state. V1/V2 readers accept a stored 0 unverified (a leftover of the
	// checksum-less 1.11 backend); V3 hashes its pod-level entries and has no such shortcut.
	{ID: "cpu-v4", Kinds: kinds(KindCPU), Layout: cpuV4Layout, Shape: hasAnyKey("data", "datachecksum"),
		Writes: spans(from("1.37")),
		// dataChecksum over the data document decides; the outer checksum is the V2 rule over the
		// V2 fields, kept for older kubelets, and 1.37+ never checks it.
		Sums: []sum{
			{"dataChecksum", dataSum("cpu-v4-data", algStringFNV, func(cp *cpustate.CPUManagerCheckpoint) (string, uint64) {
				return cp.Data, uint64(cp.DataChecksum)
			})},
			{"checksum", spewOf("cpu-v2", func(cp *cpustate.CPUManagerCheckpoint) *checksumField { return &cp.Checksum },
				func(cp *cpustate.CPUManagerCheckpoint) *cpustate.CPUManagerCheckpointV2 {
					return &cp.CPUManagerCheckpointV2
				}, true,
				renamed("CPUManagerCheckpointV2", "CPUManagerCheckpoint")...).zeroOK(every)},
		},
		Reads: []read{{By: from("1.37"), Authoritative: "could not load v4 checkpoint: "}}},
	{ID: "cpu-v3", Kinds: kinds(KindCPU), Layout: cpuV3Layout, Shape: hasAnyKey("podentries"),
		Writes: spans(between("1.36", "1.37").withGate(plrm)),
		Sums:   []sum{{"checksum", ruleCPUV3}},
		Reads: []read{
			{By: between("1.36", "1.37").withGate(plrm), Keeps: true, Names: names("CPUManagerCheckpointV3", "CPUManagerCheckpoint")},
			{By: from("1.37"), Rules: []*checksumRule{spewWhole("cpu-v3-unrenamed", cpuV3Sum), ruleCPUV3}},
		}},
	{ID: "cpu-v2", Kinds: kinds(KindCPU), Layout: cpuV2Layout,
		Writes: spans(between("1.18", "1.36"), between("1.36", "1.37").withoutGate(plrm)),
		Sums:   []sum{{"checksum", ruleCPUV2}},
		Reads: []read{
			{By: between("1.18", "1.36"), Names: names("CPUManagerCheckpointV2", "CPUManagerCheckpoint")},
			{By: from("1.36").withoutGate(plrm), Rules: []*checksumRule{ruleCPUV2Unrenamed, ruleCPUV2}},
			{By: from("1.36").withGate(plrm)},
		}},
	{ID: "cpu-v1", Kinds: kinds(KindCPU), Layout: cpuV1Layout, Shape: valuesAreStrings("entries"),
		Writes: spans(between("1.12", "1.18")),
		Sums: []sum{{"checksum", spewWhole("cpu-v1", func(cp *cpustate.CPUManagerCheckpointV1) *checksumField { return &cp.Checksum },
			renamed("CPUManagerCheckpointV1", "CPUManagerCheckpoint")...).zeroOK(every)}},
		Reads: []read{
			{By: between("1.12", "1.18"), Names: names("CPUManagerCheckpointV1", "CPUManagerCheckpoint")},
			{By: between("1.18", "1.36"), First: true, Note: cpuV1Migration},
			{By: between("1.36", "1.37"), Note: cpuV1Migration},
		}},

	// memory_manager_state. No zero shortcut until 1.36.
	{ID: "mem-v3", Kinds: kinds(KindMemory), Layout: memV3Layout, Shape: hasAnyKey("data", "datachecksum"),
		Writes: spans(from("1.37")),
		Sums: []sum{
			{"dataChecksum", dataSum("mem-v3-data", algStringFNV, func(cp *memstate.MemoryManagerCheckpoint) (string, uint64) {
				return cp.Data, uint64(cp.DataChecksum)
			})},
			{"checksum", spewOf("mem-v1", func(cp *memstate.MemoryManagerCheckpoint) *checksumField { return &cp.Checksum },
				func(cp *memstate.MemoryManagerCheckpoint) *memstate.MemoryManagerCheckpointV1 {
					return &cp.MemoryManagerCheckpointV1
				}, true,
				renamed("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint")...).zeroOK(from("1.36"))},
		},
		Reads: []read{{By: from("1.37"), Authoritative: "could not load v3 checkpoint: "}}},
	{ID: "mem-v2", Kinds: kinds(KindMemory), Layout: memV2Layout, Shape: hasAnyKey("podentries"),
		Writes: spans(between("1.36", "1.37").withGate(plrm)),
		Sums: []sum{{"checksum", spewWhole("mem-v2", func(cp *memstate.MemoryManagerCheckpointV2) *checksumField { return &cp.Checksum },
			renamed("MemoryManagerCheckpointV2", "MemoryManagerCheckpoint")...)}},
		Reads: []read{{By: between("1.36", "1.37").withGate(plrm), Keeps: true}, {By: from("1.37")}}},
	{ID: "mem-v1", Kinds: kinds(KindMemory), Layout: memV1Layout,
		Writes: spans(between("1.21", "1.36"), between("1.36", "1.37").withoutGate(plrm)),
		Sums:   []sum{{"checksum", ruleMemV1}},
		Reads: []read{
			{By: between("1.21", "1.36"), Names: names("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint")},
			{By: between("1.36", "1.37").withoutGate(plrm), Rules: []*checksumRule{ruleMemV1Unrenamed, ruleMemV1}},
			{By: between("1.36", "1.37").withGate(plrm)},
			{By: from("1.37")},
		}},

	// device-plugins/kubelet_internal_checkpoint: the VALUE of Data is hashed (its unexported
	// type name is in the text), the checksum is outside it, and 0 is never accepted. V1 until
	// 1.19, V2 from 1.20; the V1 fallback was backported to 1.20.14, 1.21.8 and 1.22.5 and removed
	// in 1.31, and the V2 error is the one reported.
	{ID: "dev-v2", Kinds: kinds(KindDevices), Layout: devV2Layout,
		Writes: spans(from("1.20")),
		Sums:   []sum{{"Checksum", spewOf("dev-v2", devV2Sum, devV2Hashed, false)}},
		Reads:  []read{{By: from("1.20")}}},
	{ID: "dev-v1", Kinds: kinds(KindDevices), Layout: devV1Layout, Shape: deviceIDsAre('['),
		Writes: spans(between("1.11", "1.20")),
		Sums: []sum{{"Checksum", spewOf("dev-v1", devV1Sum, devV1Hashed, false,
			rewrite{From: "checkpointDataV1", To: "checkpointData"}, rewrite{From: "PodDevicesEntryV1", To: "PodDevicesEntry", All: true})}},
		Reads: []read{
			{By: between("1.11", "1.20"), Names: names("PodDevicesEntryV1", "PodDevicesEntry")},
			{By: between("1.20.14", "1.21"), Quiet: true},
			{By: between("1.21.8", "1.22"), Quiet: true},
			{By: between("1.22.5", "1.31"), Quiet: true},
		}},

	// dra_manager_state v2 (1.31+): CRC-32 of the Data string (a uint32; 0 only verifies ""),
	// then Data decoded (kind/apiVersion never checked). Sub-eras are marked by the fields they
	// added (a file without them is byte-identical to the older sub-era's).
	{ID: "dra-v2c", Kinds: kinds(KindDRA), Layout: draV2cLayout, Shape: draDataHasKey("driver", "skipNodeOperations"),
		Adds: "skipNodeOperations", Writes: spans(from("1.37")),
		Sums:  []sum{{"Checksum", crcData(draV2cEnvelope)}},
		Reads: []read{{By: from("1.37")}}},
	{ID: "dra-v2b", Kinds: kinds(KindDRA), Layout: draV2bLayout, Shape: draDataHasKey("device", "ShareID"),
		Adds: "ShareID", Writes: spans(between("1.35", "1.37")),
		Sums:  []sum{{"Checksum", crcData(draV2bEnvelope)}},
		Reads: []read{{By: between("1.35", "1.37")}}},
	{ID: "dra-v2a", Kinds: kinds(KindDRA), Layout: draV2aLayout, Shape: hasAnyKey("data"),
		Writes: spans(between("1.31", "1.35")),
		Sums:   []sum{{"Checksum", crcData(draV2aEnvelope)}},
		Reads:  []read{{By: between("1.31", "1.35")}}},
	// dra_manager_state v1 (1.27-1.30): the pointer with Checksum zeroed, no zero shortcut. The
	// handles' type (k8s.io/api v0.29 vs v0.30) makes the 1.28-1.29 and 1.30 texts differ; only
	// the checksum tells an empty v1b file from v1a; 1.28-1.30 also accept the 1.27 text.
	{ID: "dra-v1c", Kinds: kinds(KindDRA), Layout: draV1cLayout, Shape: draV1HandleHasKey("structuredData"),
		Writes: spans(between("1.30", "1.31")),
		Sums:   []sum{{"checksum", ruleDRAV1c}},
		Reads:  []read{{By: between("1.30", "1.31"), Rules: []*checksumRule{ruleDRAV1c, ruleDRAV1cLegacy}}}},
	{ID: "dra-v1b", Kinds: kinds(KindDRA), Layout: draV1bLayout, Shape: checksumOnly,
		Writes: spans(between("1.28", "1.30")),
		Sums:   []sum{{"checksum", ruleDRAV1b}},
		Reads:  []read{{By: between("1.28", "1.30"), Rules: []*checksumRule{ruleDRAV1b, ruleDRAV1bLegacy}}}},
	{ID: "dra-v1a", Kinds: kinds(KindDRA), Layout: draV1aLayout,
		Writes: spans(between("1.27", "1.28")),
		Sums:   []sum{{"checksum", spewWhole("dra-v1a", draV1aSum)}},
		Reads:  []read{{By: between("1.27", "1.28")}}},

	// dra_health_state (1.34+): plain json.Marshal of the health map, no checksum; the reader's
	// own layout decodes it.
	{ID: "dra-health-v1", Kinds: kinds(KindDRAHealth), Layout: health136Layout, Writes: spans(from("1.36")),
		Reads: []read{{By: from("1.36")}}},
	{ID: "dra-health-v1", Kinds: kinds(KindDRAHealth), Layout: health135Layout, Writes: spans(between("1.35", "1.36")),
		Reads: []read{{By: between("1.35", "1.36")}}},
	{ID: "dra-health-v1", Kinds: kinds(KindDRAHealth), Layout: health134Layout, Writes: spans(between("1.34", "1.35")),
		Reads: []read{{By: between("1.34", "1.35")}}},

	// pod_status_manager_state: ps-v1 (1.27-1.31) hashes the pointer with Checksum zeroed,
	// quantities' internals in the text; ps-v2 (1.32) "(string)"+data; 1.33+ neither read nor
	// delete it.
	{ID: "podstatus-v2", Kinds: kinds(KindPodStatus), Layout: podStatusV2Layout, Shape: hasAnyKey("data"),
		Writes: spans(between("1.32", "1.33")),
		Sums:   []sum{{"checksum", stringData("podstatus-v2", podStatusV2Envelope)}},
		Reads:  []read{{By: between("1.32", "1.33")}}},
	{ID: "podstatus-v1", Kinds: kinds(KindPodStatus), Layout: podStatusV1Layout,
		Writes: spans(between("1.27", "1.32")),
		Sums:   []sum{{"checksum", spewWhole("podstatus-v1", podStatusV1Sum)}},
		Reads:  []read{{By: between("1.27", "1.32")}}},

	// allocated_pods_state / actuated_pods_state (1.33+): one envelope, "(string)"+data; the data
	// document grows. 1.38.0-beta.0 adds a version: "v2" files hold the pods (protobuf PodList)
	// and, for older kubelets, the V1 entries; it reads every file through its own layout
	// (GetPodList: V2 by its podList, an unversioned file migrated from its entries). Older
	// kubelets ignore the version and podList, and restore a V2 file's entries.
	{ID: "alloc-v2", Kinds: kinds(KindAllocated, KindActuated), Layout: allocV2Layout, Shape: hasAnyKey("version"),
		Adds: "podList", AlwaysMarked: true, Writes: spans(from(alloc138Beta)),
		Sums:  []sum{{"checksum", stringData("alloc-v1", allocV2Envelope)}},
		Reads: []read{{By: from(alloc138Beta)}}},
	{ID: "alloc-v1c", Kinds: kinds(KindAllocated, KindActuated), Layout: allocV1cLayout, Shape: allocDataHasPodKey("EmptyDirVolumeLimits"),
		Adds: "EmptyDirVolumeLimits", Writes: spans(between("1.37", alloc138Beta)),
		Sums:  []sum{{"checksum", stringData("alloc-v1", allocV1cEnvelope)}},
		Reads: []read{{By: between("1.37", alloc138Beta)}}},
	{ID: "alloc-v1b", Kinds: kinds(KindAllocated, KindActuated), Layout: allocV1bLayout, Shape: allocDataHasPodKey("PodLevelResources"),
		Adds: "PodLevelResources", Writes: spans(between("1.35", "1.37")),
		Sums:  []sum{{"checksum", stringData("alloc-v1", allocV1bEnvelope)}},
		Reads: []read{{By: between("1.35", "1.37")}}},
	{ID: "alloc-v1a", Kinds: kinds(KindAllocated, KindActuated), Layout: allocV1aLayout,
		Writes: spans(between("1.33", "1.35")),
		Sums:   []sum{{"checksum", stringData("alloc-v1", allocV1aEnvelope)}},
		Reads:  []read{{By: between("1.33", "1.35")}}},
}

// The CPU manager's restoreState texts ("%w" in 1.36+ words alike).
const (
	cpuDefault       = "could not parse default cpu set %q: %v"
	cpuByContainerID = "could not parse cpuset %q for container id %q: %v"
	cpuEntry         = "could not parse cpuset %q for container %q in pod %q: %v"
)

// V1 entries are keyed by container ID.
const cpuV1Migration = "V1 entries are keyed by container ID: the kubelet migrates them through the runtime's containers and fails on an unknown one"

func cpuV2Sum(cp *cpustate.CPUManagerCheckpointV2) *checksumField { return &cp.Checksum }
func cpuV3Sum(cp *cpustate.CPUManagerCheckpointV3) *checksumField { return &cp.Checksum }
func memV1Sum(cp *memstate.MemoryManagerCheckpointV1) *checksumField {
	return &cp.Checksum
}

// crcData and stringData are the two checksums over a data string.
func crcData[T any](envelope func(*T) (string, uint64)) *checksumRule {
	return dataSum("dra-v2", algCRC32, envelope)
}

func stringData[T any](id string, envelope func(*T) (string, uint64)) *checksumRule {
	return dataSum(id, algStringFNV, envelope)
}

// 1.38.0-beta.0 is the first build measured writing alloc-v2 (the module proxy serves no
// 1.38.0-alpha.1-3; alpha.0 still wrote V1): re-check the bound at rc.0.
const alloc138Beta = "1.38.0-beta.0"

// keepsAll is, for a layout, the older layouts of the same data document it has every field
// of (the DRA v2 and pod allocation sub-eras only add fields): a file of one, whose marks say it
// has none of the newer fields, reads through it into the same model, so Decode does not decode
// the file a second time to compare the two.
var keepsAll = map[*layout][]*layout{
	draV2cLayout:   {draV2bLayout, draV2aLayout},
	draV2bLayout:   {draV2aLayout},
	allocV1cLayout: {allocV1bLayout, allocV1aLayout},
	allocV1bLayout: {allocV1aLayout},
}

// keeps reports whether reading a file of layout older through newer drops nothing.
func keeps(newer, older *layout) bool { return slices.Contains(keepsAll[newer], older) }
