package nodestate

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The result model. A NodeResult carries what the engines made of the node: a report per file
// and its decoded model (decode), what the cgroups show (cgroup), the start prediction (doctor)
// and the admissions (admit). They are the results' own types, defined once where they are
// made and named here, where the commands and render take them: so render presents NodeResult
// and nothing below it, and an engine's new field reaches the printers without a copy.

// A judged file: its kind, the verdict of the kubelet judging it, and its report and model.
type (
	Kind           = decode.Kind
	Verdict        = decode.Verdict
	Kubelet        = decode.Kubelet
	Report         = decode.Report
	ChecksumResult = decode.ChecksumResult
	Model          = decode.Model
)

// The kinds of checkpoint file.
const (
	KindCPU       = decode.KindCPU
	KindMemory    = decode.KindMemory
	KindDevices   = decode.KindDevices
	KindDRA       = decode.KindDRA
	KindDRAHealth = decode.KindDRAHealth
	KindAllocated = decode.KindAllocated
	KindActuated  = decode.KindActuated
	KindPodStatus = decode.KindPodStatus
)

// The verdicts a kubelet gives a file on restart.
const (
	Valid      = decode.Valid
	NotRead    = decode.NotRead
	Corrupt    = decode.Corrupt
	Unreadable = decode.Unreadable
)

// The decoded models, one per kind of file (Model holds the one a file decoded to).
type (
	CPUState           = decode.CPUState
	MemoryState        = decode.MemoryState
	MemoryBlock        = decode.MemoryBlock
	DeviceState        = decode.DeviceState
	DRAState           = decode.DRAState
	DRAHealthState     = decode.DRAHealthState
	PodAllocationState = decode.PodAllocationState
)

// What the node's cgroups show its containers run on (NodeResult.Cgroups).
type (
	CgroupNode      = cgroup.Node
	ContainerCgroup = cgroup.ContainerCgroup
	CgroupValue     = cgroup.Value
)

// The start prediction (DoctorResult) and the admissions (AdmitResult).
type (
	DoctorPrediction  = doctor.Result
	KubeletStart      = doctor.KubeletStart
	AdmitPrediction   = admit.Result
	Admission         = admit.Admission
	AdmittedContainer = admit.Container
	AdmitContext      = admit.Context
	AdmitDevices      = admit.DeviceContext
	StaleDeviceHolder = admit.StaleHolder
)

// An admission's three answers (Admission.Verdict).
const (
	AdmissionAdmitted  = admit.VerdictAdmitted
	AdmissionRefused   = admit.VerdictRefused
	AdmissionNotJudged = admit.VerdictNotJudged
)

// How the kubelet came to a container's devices (AdmittedContainer.DevicesPick).
const (
	DevicePickForced     = admit.PickForced
	DevicePickEquivalent = admit.PickEquivalent
	DevicePickArbitrary  = admit.PickArbitrary
)

// The phases of the kubelet's start a prediction names.
const (
	PhaseCPUStart     = replay.PhaseCPUStart
	PhaseMemoryStart  = replay.PhaseMemoryStart
	PhaseNotPredicted = replay.PhaseNotPredicted
)
