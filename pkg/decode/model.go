package decode

// The version-neutral models: one per file kind, whatever layout era the file was written in.
// Field names and JSON keys follow the newest kubelet's state so `-o json` reads like it.

// CPUState is cpu_manager_state.
type CPUState struct {
	PolicyName    string `json:"policyName"`
	DefaultCPUSet string `json:"defaultCpuSet"`
	// Entries is pod UID -> container name -> cpuset (V2+).
	Entries map[string]map[string]string `json:"entries,omitempty"`
	// ContainerIDEntries is container ID -> cpuset, as V1 files (kubelet <= 1.17) key them.
	ContainerIDEntries map[string]string `json:"containerIDEntries,omitempty"`
	// PodEntries is pod UID -> cpuset for pod-level resources (PodLevelResourceManagers).
	PodEntries map[string]string `json:"podEntries,omitempty"`
	// Baselines is pod UID -> container -> baseline cpuset (InPlacePodVerticalScalingExclusiveCPUs).
	Baselines map[string]map[string]string `json:"baselines,omitempty"`
}

// MemoryState is memory_manager_state.
type MemoryState struct {
	PolicyName   string                              `json:"policyName"`
	MachineState map[int]*NUMANodeMemory             `json:"machineState"`
	Entries      map[string]map[string][]MemoryBlock `json:"entries,omitempty"`
	PodEntries   map[string][]MemoryBlock            `json:"podEntries,omitempty"`
}

// NUMANodeMemory is one NUMA node's memory accounting.
type NUMANodeMemory struct {
	NumberOfAssignments int                     `json:"numberOfAssignments"`
	MemoryMap           map[string]*MemoryTable `json:"memoryMap"`
	Cells               []int                   `json:"cells"`
}

// MemoryTable is one resource (memory, hugepages-*) on one NUMA node, in bytes.
type MemoryTable struct {
	Total          uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// MemoryBlock is one assignment of one resource across NUMA nodes.
type MemoryBlock struct {
	NUMAAffinity []int  `json:"numaAffinity"`
	Type         string `json:"type"`
	Size         uint64 `json:"size"`
}

// DeviceState is device-plugins/kubelet_internal_checkpoint.
type DeviceState struct {
	PodDeviceEntries  []DeviceEntry       `json:"podDeviceEntries"`
	RegisteredDevices map[string][]string `json:"registeredDevices"`
}

// DeviceEntry is the devices of one resource held by one container.
type DeviceEntry struct {
	PodUID        string `json:"podUID"`
	ContainerName string `json:"containerName"`
	ResourceName  string `json:"resourceName"`
	// DevicesPerNUMA is NUMA node -> device IDs (1.20+; -1 is "no topology" from 1.23).
	DevicesPerNUMA map[int64][]string `json:"devicesPerNUMA,omitempty"`
	// DeviceIDs is the flat list of V1 files (kubelet <= 1.19), which record no NUMA node.
	DeviceIDs []string `json:"deviceIDs,omitempty"`
	// AllocResp is the device plugin's ContainerAllocateResponse (protobuf).
	AllocResp []byte `json:"allocResp,omitempty"`
}
