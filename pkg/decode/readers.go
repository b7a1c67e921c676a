package decode

// How each kubelet release restores each checkpoint file: the attempts in order, which error it
// reports and how it words it. Versions not covered by a row do not read the file ("not-read").
// This is the table the --kubelet-version prediction replays; the vectors' "reads" matrix is its
// test.

const (
	wrapCPU117 = "could not restore state from checkpoint: %[1]s\nPlease drain this node and delete the CPU manager checkpoint file %[2]q before restarting Kubelet."
	wrapCPU    = "could not restore state from checkpoint: %[1]s, please drain this node and delete the CPU manager checkpoint file %[2]q before restarting Kubelet"
	wrapMemory = "could not restore state from checkpoint: %[1]s, please drain this node and delete the memory manager checkpoint file %[2]q before restarting Kubelet"
	wrapNone   = "%[1]s"
)

var (
	cpuV1Attempt = attempt{Layout: cpuV1Layout, Rules: []*checksumRule{ruleCPUV1}}
	// 1.18+ read a V1 file, then migrate its container IDs to pod/container.
	cpuV1MigratedAttempt = attempt{Layout: cpuV1Layout, Rules: []*checksumRule{ruleCPUV1},
		Note: "V1 entries are keyed by container ID: the kubelet migrates them through the runtime's containers and fails on an unknown one"}
	cpuV2Attempt = attempt{Layout: cpuV2Layout, Rules: []*checksumRule{ruleCPUV2}}
	// 1.36+ with PodLevelResourceManagers off: the un-renamed name first, then the real one.
	cpuV2AttemptGateOff = attempt{Layout: cpuV2Layout, Rules: []*checksumRule{ruleCPUV2Unrenamed, ruleCPUV2}}
	cpuV4Attempt        = attempt{Layout: cpuV4Layout, Rules: []*checksumRule{ruleCPUV4Data},
		Authoritative: &authority{Prefix: "could not load v4 checkpoint: ", Applies: hasDataFields}}

	memV1Attempt        = attempt{Layout: memV1Layout, Rules: []*checksumRule{ruleMemV1}}
	memV1AttemptGateOff = attempt{Layout: memV1Layout, Rules: []*checksumRule{ruleMemV1Unrenamed, ruleMemV1}}
	memV2Attempt        = attempt{Layout: memV2Layout, Rules: []*checksumRule{ruleMemV2}}
	memV3Attempt        = attempt{Layout: memV3Layout, Rules: []*checksumRule{ruleMemV3Data},
		Authoritative: &authority{Prefix: "could not load v3 checkpoint: ", Applies: hasDataFields}}

	devV1Attempt = attempt{Layout: devV1Layout, Rules: []*checksumRule{ruleDevV1}}
	devV2Attempt = attempt{Layout: devV2Layout, Rules: []*checksumRule{ruleDevV2}}
)

var readers = []readerRow{
	// cpu_manager_state
	{Kind: KindCPU, Versions: versionRange{"1.12.0", "1.18.0"}, Attempts: []attempt{cpuV1Attempt},
		StructNames: map[string]string{"CPUManagerCheckpointV1": "CPUManagerCheckpoint"}, Wrap: wrapCPU117},
	{Kind: KindCPU, Versions: versionRange{"1.18.0", "1.36.0"}, Attempts: []attempt{cpuV1MigratedAttempt, cpuV2Attempt},
		StructNames: map[string]string{"CPUManagerCheckpointV2": "CPUManagerCheckpoint"}, Wrap: wrapCPU},
	{Kind: KindCPU, Versions: versionRange{"1.36.0", "1.37.0"}, Gate: "!" + GatePodLevelResourceManagers,
		Attempts: []attempt{cpuV2AttemptGateOff, cpuV1MigratedAttempt}, Wrap: wrapCPU},
	{Kind: KindCPU, Versions: versionRange{"1.36.0", "1.37.0"}, Gate: GatePodLevelResourceManagers,
		Attempts:    []attempt{{Layout: cpuV3Layout, Rules: []*checksumRule{ruleCPUV3}}, cpuV2Attempt, cpuV1MigratedAttempt},
		StructNames: map[string]string{"CPUManagerCheckpointV3": "CPUManagerCheckpoint"}, Wrap: wrapCPU, MigratesIntoFirst: true},
	{Kind: KindCPU, Versions: versionRange{Since: "1.37.0"}, Gate: "!" + GatePodLevelResourceManagers,
		Attempts: []attempt{cpuV4Attempt, {Layout: cpuV3Layout, Rules: []*checksumRule{ruleCPUV3Unrenamed, ruleCPUV3}}, cpuV2AttemptGateOff},
		Wrap:     wrapCPU},
	{Kind: KindCPU, Versions: versionRange{Since: "1.37.0"}, Gate: GatePodLevelResourceManagers,
		Attempts: []attempt{cpuV4Attempt, {Layout: cpuV3Layout, Rules: []*checksumRule{ruleCPUV3Unrenamed, ruleCPUV3}}, cpuV2Attempt},
		Wrap:     wrapCPU},

	// memory_manager_state
	{Kind: KindMemory, Versions: versionRange{"1.21.0", "1.36.0"}, Attempts: []attempt{memV1Attempt},
		StructNames: map[string]string{"MemoryManagerCheckpointV1": "MemoryManagerCheckpoint"}, Wrap: wrapMemory},
	{Kind: KindMemory, Versions: versionRange{"1.36.0", "1.37.0"}, Gate: "!" + GatePodLevelResourceManagers,
		Attempts: []attempt{memV1AttemptGateOff}, Wrap: wrapMemory},
	{Kind: KindMemory, Versions: versionRange{"1.36.0", "1.37.0"}, Gate: GatePodLevelResourceManagers,
		Attempts: []attempt{memV2Attempt, memV1Attempt}, Wrap: wrapMemory, MigratesIntoFirst: true},
	{Kind: KindMemory, Versions: versionRange{Since: "1.37.0"}, Attempts: []attempt{memV3Attempt, memV2Attempt, memV1Attempt},
		Wrap: wrapMemory},

	// device-plugins/kubelet_internal_checkpoint: V1 until 1.19; V2 from 1.20; the V1 fallback was
	// backported to 1.20.14, 1.21.8 and 1.22.5 and removed in 1.31. The V2 error is reported.
	{Kind: KindDevices, Versions: versionRange{"1.11.0", "1.20.0"}, Attempts: []attempt{devV1Attempt},
		StructNames: map[string]string{"PodDevicesEntryV1": "PodDevicesEntry"}, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.20.0", "1.20.14"}, Attempts: []attempt{devV2Attempt}, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.20.14", "1.21.0"}, Attempts: []attempt{devV2Attempt, devV1Attempt}, FirstError: true, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.21.0", "1.21.8"}, Attempts: []attempt{devV2Attempt}, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.21.8", "1.22.0"}, Attempts: []attempt{devV2Attempt, devV1Attempt}, FirstError: true, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.22.0", "1.22.5"}, Attempts: []attempt{devV2Attempt}, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{"1.22.5", "1.31.0"}, Attempts: []attempt{devV2Attempt, devV1Attempt}, FirstError: true, Wrap: wrapNone},
	{Kind: KindDevices, Versions: versionRange{Since: "1.31.0"}, Attempts: []attempt{devV2Attempt}, Wrap: wrapNone},

	// dra_manager_state: v1 from 1.27 (1.28-1.30 also accept the 1.27 text); v2 from 1.31, whose
	// data document is decoded only after the checkpoint loaded, its error returned unwrapped.
	{Kind: KindDRA, Versions: versionRange{"1.27.0", "1.28.0"},
		Attempts: []attempt{{Layout: draV1aLayout, Rules: []*checksumRule{ruleDRAV1a}}}, Wrap: wrapDRA},
	{Kind: KindDRA, Versions: versionRange{"1.28.0", "1.30.0"},
		Attempts: []attempt{{Layout: draV1bLayout, Rules: []*checksumRule{ruleDRAV1b, ruleDRAV1bLegacy}}}, Wrap: wrapDRA},
	{Kind: KindDRA, Versions: versionRange{"1.30.0", "1.31.0"},
		Attempts: []attempt{{Layout: draV1cLayout, Rules: []*checksumRule{ruleDRAV1c, ruleDRAV1cLegacy}}}, Wrap: wrapDRA},
	{Kind: KindDRA, Versions: versionRange{"1.31.0", "1.35.0"},
		Attempts: []attempt{{Layout: draV2aLayout, Rules: []*checksumRule{ruleDRAV2}}}, Wrap: wrapDRA, PayloadWrap: wrapNone},
	{Kind: KindDRA, Versions: versionRange{"1.35.0", "1.37.0"},
		Attempts: []attempt{{Layout: draV2bLayout, Rules: []*checksumRule{ruleDRAV2}}}, Wrap: wrapDRA, PayloadWrap: wrapNone},
	{Kind: KindDRA, Versions: versionRange{Since: "1.37.0"},
		Attempts: []attempt{{Layout: draV2cLayout, Rules: []*checksumRule{ruleDRAV2}}}, Wrap: wrapDRA, PayloadWrap: wrapNone},

	// pod_status_manager_state: ps-v1 in 1.27-1.31, ps-v2 in 1.32; 1.33+ neither read nor delete it.
	{Kind: KindPodStatus, Versions: versionRange{"1.27.0", "1.32.0"},
		Attempts: []attempt{{Layout: podStatusV1Layout, Rules: []*checksumRule{rulePodStatusV1}}}, Wrap: wrapPodStatus},
	{Kind: KindPodStatus, Versions: versionRange{"1.32.0", "1.33.0"},
		Attempts: []attempt{{Layout: podStatusV2Layout, Rules: []*checksumRule{rulePodStatusV2}}}, Wrap: wrapPodStatus},

	// allocated_pods_state / actuated_pods_state (1.33+): one envelope, the data document grows.
	{Kind: KindAllocated, Versions: versionRange{"1.33.0", "1.35.0"},
		Attempts: []attempt{{Layout: allocV1aLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapPodInfo},
	{Kind: KindAllocated, Versions: versionRange{"1.35.0", "1.37.0"},
		Attempts: []attempt{{Layout: allocV1bLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapPodInfo},
	{Kind: KindAllocated, Versions: versionRange{Since: "1.37.0"},
		Attempts: []attempt{{Layout: allocV1cLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapPodInfo},
	{Kind: KindActuated, Versions: versionRange{"1.33.0", "1.35.0"},
		Attempts: []attempt{{Layout: allocV1aLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapPodInfo},
	{Kind: KindActuated, Versions: versionRange{"1.35.0", "1.37.0"},
		Attempts: []attempt{{Layout: allocV1bLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapActuated},
	{Kind: KindActuated, Versions: versionRange{Since: "1.37.0"},
		Attempts: []attempt{{Layout: allocV1cLayout, Rules: []*checksumRule{ruleAlloc}}}, Wrap: wrapActuated},
}
