package admit

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The node-resource predicate (pkg/kubelet/lifecycle/predicate.go, via the scheduler's
// noderesources.Fits): does the pod fit in the node's allocatable beside the pods it runs?
// Only the resource checks are replayed (not node affinity, ports or taints).

// Reasons of the predicate's resource refusals (lifecycle/predicate.go).
const (
	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
	ReasonOutOfPods             = "OutOfpods"
	insufficientResourcePrefix  = "OutOf"
)

type insufficient struct {
	name                      v1.ResourceName
	requested, used, capacity int64
}

// podRequests is the scheduler's resource view of a pod (resource.PodRequests: the larger of
// init and long-running containers, plus overhead).
func podRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// amount is a request in the scheduler's unit: millicores for CPU, else the value.
func amount(name v1.ResourceName, list v1.ResourceList) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// isScalar is the scheduler's IsScalarResourceName: extended, hugepages, prefixed native and
// attachable-volume resources.
func isScalar(name v1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, "attachable-volumes-") ||
		(strings.Contains(s, "/") && !strings.HasPrefix(s, "requests."))
}

// fits is noderesources.fitsRequest, in its order: pods, cpu, memory, ephemeral storage, then
// the scalar resources (the kubelet walks a map there; sorted here).
func fits(pod *v1.Pod, allocatable v1.ResourceList, others []*v1.Pod) []insufficient {
	var out []insufficient
	allowed := allocatable.Pods().Value()
	if int64(len(others))+1 > allowed {
		out = append(out, insufficient{v1.ResourcePods, 1, int64(len(others)), allowed})
	}
	req := podRequests(pod)
	// Extended resources the node does not have are dropped first (removeMissingExtendedResources).
	for name := range req {
		if strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), "kubernetes.io/") {
			if _, ok := allocatable[name]; !ok {
				delete(req, name)
			}
		}
	}
	used := v1.ResourceList{}
	for _, o := range others {
		for name, q := range podRequests(o) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	// The kubelet returns here when the pod asks for nothing; the checks below, each only for a
	// resource asked (r > 0), come to the same.
	names := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}
	var scalars []string
	for name := range req {
		if isScalar(name) {
			scalars = append(scalars, string(name))
		}
	}
	sort.Strings(scalars)
	for _, s := range scalars {
		names = append(names, v1.ResourceName(s))
	}
	for _, name := range names {
		r := amount(name, req)
		if r > 0 && r > amount(name, allocatable)-amount(name, used) {
			out = append(out, insufficient{name, r, amount(name, used), amount(name, allocatable)})
		}
	}
	return out
}

// nodeResourcesAdmit is the predicate handler's answer from its first resource refusal.
func nodeResourcesAdmit(pod *v1.Pod, allocatable v1.ResourceList, others []*v1.Pod) replay.AdmitResult {
	reasons := fits(pod, allocatable, others)
	if len(reasons) == 0 {
		return replay.AdmitResult{Admit: true}
	}
	r := reasons[0]
	reason := insufficientResourcePrefix + string(r.name)
	return replay.AdmitResult{Reason: reason,
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r.name, r.requested, r.used, r.capacity)}
}
