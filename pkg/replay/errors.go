package replay

// The admission errors the resource managers give (cm/admission/errors.go) and how the
// kubelet turns them into a pod admit result.

import (
	"errors"
	"fmt"
)

// admissionError is the kubelet's admission.Error: a reason beside the message.
type admissionError interface {
	error
	Type() string
}

type reasonError struct{ reason, message string }

func (e reasonError) Error() string { return e.message }
func (e reasonError) Type() string  { return e.reason }

// Admission reasons the resource managers give.
const (
	ReasonTopologyAffinity    = "TopologyAffinityError"
	ReasonSMTAlignment        = "SMTAlignmentError"
	ReasonUnexpected          = "UnexpectedAdmissionError"
	ReasonEmptyPodSharedPool  = "EmptyPodSharedPoolError"
	topologyAffinityMessage   = "Resources cannot be allocated with Topology locality"
	podLevelAffinityPrefix    = "Pod Scope "
	podLevelContainerScopeMsg = "pod with pod-level resources failed admission with a container-level topology manager"
	podLevelPodScopeMsg       = "pod with pod-level resources failed admission under pod-scope topology manager"
)

// errTopologyAffinity is topologymanager.TopologyAffinityError.
var errTopologyAffinity = reasonError{ReasonTopologyAffinity, topologyAffinityMessage}

// AdmitResult is lifecycle.PodAdmitResult.
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string
	// Hangs: the kubelet never answers for this pod; its admission stays stuck (Message says
	// where), and no pod after it is admitted.
	Hangs bool
	// NotReached: a pod before this one hangs, so the kubelet never gets to it.
	NotReached bool
	// RefusedContainer is, in container scope, the container whose merged hint the policy
	// refused (TopologyAffinityError): the containers before it were allocated, none after.
	RefusedContainer string
}

// podAdmitResult is admission.GetPodAdmitResult.
func podAdmitResult(err error) AdmitResult {
	if err == nil {
		return AdmitResult{Admit: true}
	}
	if errors.Is(err, ErrKubeletHangs) {
		return AdmitResult{Hangs: true, Message: err.Error()}
	}
	var ae admissionError
	if !errors.As(err, &ae) {
		return AdmitResult{Reason: ReasonUnexpected, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
	}
	return AdmitResult{Reason: ae.Type(), Message: ae.Error()}
}
