// Package state mirrors pkg/kubelet/cm/cpumanager/state (1.37 naming: every layout is a distinct
// type; the rule table rewrites the names back to what each kubelet hashed).
package state

import (
	"encoding/json"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
)

// CPUManagerCheckpointV1 is the 1.12-1.17 layout: container ID -> cpuset.
type CPUManagerCheckpointV1 struct {
	PolicyName    string            `json:"policyName"`
	DefaultCPUSet string            `json:"defaultCpuSet"`
	Entries       map[string]string `json:"entries,omitempty"`
	Checksum      checksum.Checksum `json:"checksum"`
}

// CPUManagerCheckpointV2 is the 1.18-1.36 layout: pod UID -> container -> cpuset.
type CPUManagerCheckpointV2 struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      checksum.Checksum            `json:"checksum"`
}

// CPUManagerCheckpointV3 adds pod-level assignments (1.36 with PodLevelResourceManagers).
type CPUManagerCheckpointV3 struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	PodEntries    PodCPUAssignments            `json:"podEntries,omitempty"`
	Checksum      checksum.Checksum            `json:"checksum"`
}

// PodCPUAssignments is pod UID -> pod-level assignment.
type PodCPUAssignments map[string]PodEntry

// PodEntry is one pod-level assignment; its JSON form is {"cpuSet":"12-15"}.
type PodEntry struct {
	CPUSet cpuset.CPUSet
}

type podEntryJSON struct {
	CPUSet string `json:"cpuSet"`
}

// MarshalJSON writes the kubelet's {"cpuSet": "..."} form.
func (e PodEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(podEntryJSON{CPUSet: e.CPUSet.String()})
}

// UnmarshalJSON parses the kubelet's {"cpuSet": "..."} form.
func (e *PodEntry) UnmarshalJSON(b []byte) error {
	var raw podEntryJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	set, err := cpuset.Parse(raw.CPUSet)
	if err != nil {
		return err
	}
	e.CPUSet = set
	return nil
}

// CPUManagerCheckpoint is the 1.37+ (V4) layout: the V2 fields kept for older kubelets, plus the
// authoritative JSON document in Data with its own checksum.
type CPUManagerCheckpoint struct {
	CPUManagerCheckpointV2 `json:",inline"`
	Data                   string            `json:"data"`
	DataChecksum           checksum.Checksum `json:"dataChecksum"`
}

// CPUManagerCheckpointData is the document inside Data.
type CPUManagerCheckpointData struct {
	PolicyName    string                              `json:"policyName"`
	DefaultCPUSet string                              `json:"defaultCpuSet"`
	Entries       map[string]map[string]string        `json:"entries,omitempty"`
	PodEntries    PodCPUAssignments                   `json:"podEntries,omitempty"`
	Baselines     map[string]map[string]ContainerCPUs `json:"baselines,omitempty"`
}

// ContainerCPUs is the baseline of a container under InPlacePodVerticalScalingExclusiveCPUs.
type ContainerCPUs struct {
	Baseline string `json:"baseline"`
}
