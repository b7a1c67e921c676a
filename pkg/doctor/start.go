package doctor

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The start prediction is pkg/replay's (the one replay of the kubelet's resource managers,
// shared with admit); doctor names its types for its callers.
type (
	KubeletConfig     = replay.KubeletConfig
	MemoryReservation = replay.MemoryReservation
	ResourceMap       = replay.ResourceMap
	Prediction        = replay.Prediction
	ManagerResult     = replay.ManagerResult
	StartInput        = replay.StartInput
)

// Phases of a start, in the kubelet's order.
const (
	PhaseOK           = replay.PhaseOK
	PhaseFeatureGates = replay.PhaseFeatureGates
	PhaseConfig       = replay.PhaseConfig
	PhaseTopologyNew  = replay.PhaseTopologyNew
	PhaseCPUNew       = replay.PhaseCPUNew
	PhaseMemoryNew    = replay.PhaseMemoryNew
	PhaseCPUStart     = replay.PhaseCPUStart
	PhaseMemoryStart  = replay.PhaseMemoryStart
	PhaseNotPredicted = replay.PhaseNotPredicted
)

// ParseKubeletConfig reads a KubeletConfiguration (YAML, JSON, or configz's answer).
func ParseKubeletConfig(b []byte) (*KubeletConfig, error) { return replay.ParseKubeletConfig(b) }

// PredictStart is replay.PredictStart.
func PredictStart(in StartInput) (Prediction, error) { return replay.PredictStart(in) }

// Names of the replay that doctor's findings and fixes read.
const (
	cpuPolicyNone       = replay.CPUPolicyNone
	cpuPolicyStatic     = replay.CPUPolicyStatic
	memPolicyNone       = replay.MemoryPolicyNone
	memPolicyStatic     = replay.MemoryPolicyStatic
	gateCPUAlphaOptions = replay.GateCPUAlphaOptions
	gateCPUBetaOptions  = replay.GateCPUBetaOptions
)

var (
	parseCPUSet   = replay.ParseCPUSet
	hugePagesName = replay.HugePagesName
	isHugePages   = replay.IsHugePages
	reservation   = replay.NodeAllocatableReservation
)
