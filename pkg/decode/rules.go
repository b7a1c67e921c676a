package decode

// The checksum rules, era by era, as ../shared/docs/checkpoint-formats.md establishes them by
// running the real kubelet code. Each row is one way a kubelet computes one stored checksum.
// Adding an era is one row here, one layout (mirror types) and the reader rows that use it.

var (
	everyReader = &versionRange{}
	since136    = &versionRange{Since: "1.36.0"}
)

func renamed(from, to string) []rewrite { return []rewrite{{From: from, To: to}} }

var (
	// cpu_manager_state. The stored checksum is zeroed, the pointer is hashed, and a stored 0 is
	// accepted unverified by every V1/V2 reader (a leftover of the checksum-less 1.11 backend).
	ruleCPUV1 = &checksumRule{ID: "cpu-v1", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Rewrites: renamed("CPUManagerCheckpointV1", "CPUManagerCheckpoint"), ZeroOK: everyReader}
	ruleCPUV2 = &checksumRule{ID: "cpu-v2", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Rewrites: renamed("CPUManagerCheckpointV2", "CPUManagerCheckpoint"), ZeroOK: everyReader}
	// 1.36+ with PodLevelResourceManagers off first tries the name no release ever wrote.
	ruleCPUV2Unrenamed = &checksumRule{ID: "cpu-v2-unrenamed", Algorithm: algSpewFNV, Field: "Checksum",
		Zeroed: "Checksum", ZeroOK: everyReader}
	// V3 hashes the pod-level entries (an internal cpuset.CPUSet) and has no zero shortcut.
	ruleCPUV3 = &checksumRule{ID: "cpu-v3", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Rewrites: renamed("CPUManagerCheckpointV3", "CPUManagerCheckpoint")}
	ruleCPUV3Unrenamed = &checksumRule{ID: "cpu-v3-unrenamed", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum"}
	// V4 (1.37+): dataChecksum over the data document decides; the outer checksum is the V2 rule
	// over the V2 fields, kept for older kubelets, and 1.37+ never checks it.
	ruleCPUV4Data  = &checksumRule{ID: "cpu-v4-data", Algorithm: algStringFNV, Field: "DataChecksum", Hashed: "Data"}
	ruleCPUV4Outer = &checksumRule{ID: "cpu-v2", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Hashed: "CPUManagerCheckpointV2", HashedPointer: true,
		Rewrites: renamed("CPUManagerCheckpointV2", "CPUManagerCheckpoint"), ZeroOK: everyReader}

	// memory_manager_state. No zero shortcut until 1.36.
	ruleMemV1 = &checksumRule{ID: "mem-v1", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Rewrites: renamed("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint"), ZeroOK: since136}
	ruleMemV1Unrenamed = &checksumRule{ID: "mem-v1-unrenamed", Algorithm: algSpewFNV, Field: "Checksum",
		Zeroed: "Checksum", ZeroOK: since136}
	ruleMemV2 = &checksumRule{ID: "mem-v2", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Rewrites: renamed("MemoryManagerCheckpointV2", "MemoryManagerCheckpoint")}
	ruleMemV3Data  = &checksumRule{ID: "mem-v3-data", Algorithm: algStringFNV, Field: "DataChecksum", Hashed: "Data"}
	ruleMemV3Outer = &checksumRule{ID: "mem-v1", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum",
		Hashed: "MemoryManagerCheckpointV1", HashedPointer: true,
		Rewrites: renamed("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint"), ZeroOK: since136}

	// device-plugins/kubelet_internal_checkpoint: the VALUE of Data is hashed (its unexported type
	// name is in the text), the checksum is outside it, and 0 is never accepted.
	ruleDevV2 = &checksumRule{ID: "dev-v2", Algorithm: algSpewFNV, Field: "Checksum", Hashed: "Data"}
	ruleDevV1 = &checksumRule{ID: "dev-v1", Algorithm: algSpewFNV, Field: "Checksum", Hashed: "Data",
		Rewrites: []rewrite{{From: "checkpointDataV1", To: "checkpointData"}, {From: "PodDevicesEntryV1", To: "PodDevicesEntry", All: true}}}

	// dra_manager_state v1 (1.27-1.30): the pointer with Checksum zeroed; no zero shortcut. The
	// handles' type (k8s.io/api v0.29 vs v0.30) makes the 1.28-1.29 and 1.30 texts differ.
	ruleDRAV1a = &checksumRule{ID: "dra-v1a", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum"}
	ruleDRAV1b = &checksumRule{ID: "dra-v1b", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum"}
	ruleDRAV1c = &checksumRule{ID: "dra-v1c", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum"}
	// 1.28-1.30 retry a failed checksum over the checkpoint rebuilt as the 1.27 layout (version
	// forced to "v1", non-nil entries, handles dropped), its two type names rewritten once each.
	ruleDRAV1bLegacy = &checksumRule{ID: "dra-v1a", Algorithm: algSpewFNV, Field: "Checksum", Convert: draV1bWithoutHandles,
		Rewrites: draLegacyRewrites}
	ruleDRAV1cLegacy = &checksumRule{ID: "dra-v1a", Algorithm: algSpewFNV, Field: "Checksum", Convert: draV1cWithoutHandles,
		Rewrites: draLegacyRewrites}
	draLegacyRewrites = []rewrite{{From: "DRAManagerCheckpointWithoutResourceHandles", To: "DRAManagerCheckpoint"},
		{From: "ClaimInfoStateListWithoutResourceHandles", To: "ClaimInfoStateList"}}
	// dra_manager_state v2 (1.31+): CRC-32 of the Data string (a uint32; 0 only verifies "").
	ruleDRAV2 = &checksumRule{ID: "dra-v2", Algorithm: algCRC32, Field: "Checksum", Hashed: "Data"}

	// pod_status_manager_state ps-v1 (1.27-1.31): the pointer, Checksum zeroed, quantities'
	// internals in the text; ps-v2 (1.32) and the allocation files (1.33+): "(string)"+data.
	rulePodStatusV1 = &checksumRule{ID: "podstatus-v1", Algorithm: algSpewFNV, Field: "Checksum", Zeroed: "Checksum"}
	rulePodStatusV2 = &checksumRule{ID: "podstatus-v2", Algorithm: algStringFNV, Field: "Checksum", Hashed: "Data"}
	ruleAlloc       = &checksumRule{ID: "alloc-v1", Algorithm: algStringFNV, Field: "Checksum", Hashed: "Data"}
)
