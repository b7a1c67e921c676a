package admit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The kubelet's predicate admit handler (pkg/kubelet/lifecycle/predicate.go), run after the
// resource managers': the pod's OS, SupplementalGroupsPolicy, then the scheduler's
// AdmissionCheck (noderesources.Fits, node affinity and selector, node name, host ports) and
// the node's NoExecute taints, the first failure named.

// Reasons of the predicate's refusals (lifecycle/predicate.go; the scheduler plugins' names).
const (
	ReasonOutOfCPU              = "OutOfcpu"
	ReasonOutOfMemory           = "OutOfmemory"
	ReasonOutOfEphemeralStorage = "OutOfephemeral-storage"
	ReasonOutOfPods             = "OutOfpods"
	insufficientResourcePrefix  = "OutOf"

	ReasonPodOSSelector            = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported        = "PodOSNotSupported"
	ReasonSupplementalGroupsPolicy = "SupplementalGroupsPolicyNotSupported"
	ReasonNodeAffinity             = "NodeAffinity"
	ReasonNodeName                 = "NodeName"
	ReasonNodePorts                = "NodePorts"
	ReasonTaintToleration          = "TaintToleration"
	configSourceAnnotation         = "kubernetes.io/config.source"
	configSourceAPIServer          = "api"
	nodeOS                         = "linux" // the kubelets replayed run on Linux (runtime.GOOS)
	bindAllHostIP                  = "0.0.0.0"
)

// The predicates' descriptions (the scheduler plugins' ErrReason texts, 1.37).
var predicateDescriptions = map[string]string{
	ReasonNodeAffinity:    "node(s) didn't match Pod's node affinity/selector",
	ReasonNodeName:        "node(s) didn't match the requested node name",
	ReasonNodePorts:       "node(s) didn't have free ports for the requested pod ports",
	ReasonTaintToleration: "node(s) had taints that the pod didn't tolerate",
}

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

// predicateAdmit is the predicate handler's answer for pod on node beside others (the pods the
// kubelet runs there), as kubelet release v gives it.
func predicateAdmit(pod *v1.Pod, node *NodeResources, others []*v1.Pod, v *version.Version, gate func(string) bool) replay.AdmitResult {
	// The checks preemption cannot help come first, each its own answer.
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != nodeOS {
		return replay.AdmitResult{Reason: ReasonPodOSSelector, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return replay.AdmitResult{Reason: ReasonPodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	object := node.Object
	if sc := pod.Spec.SecurityContext; object != nil && sc != nil && sc.SupplementalGroupsPolicy != nil && replay.Behaves(v, replay.SupplementalGroupsPolicyCheck) &&
		*sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict && !ptr.Deref(ptr.Deref(object.Status.Features, v1.NodeFeatures{}).SupplementalGroupsPolicy, false) {
		return replay.AdmitResult{Reason: ReasonSupplementalGroupsPolicy, Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
	}
	// AdmissionCheck with every failure, then the taints: the first one named.
	if reasons := fits(pod, node.Allocatable, others); len(reasons) > 0 {
		r := reasons[0]
		return replay.AdmitResult{Reason: insufficientResourcePrefix + string(r.name),
			Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r.name, r.requested, r.used, r.capacity)}
	}
	if object == nil {
		return replay.AdmitResult{Admit: true}
	}
	failed := func(name string) replay.AdmitResult {
		return replay.AdmitResult{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, predicateDescriptions[name])}
	}
	if matches, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(object); !matches {
		return failed(ReasonNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != object.Name {
		return failed(ReasonNodeName)
	}
	if portsConflict(pod, others) {
		return failed(ReasonNodePorts)
	}
	if source, ok := pod.Annotations[configSourceAnnotation]; !ok || source == configSourceAPIServer {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), object.Spec.Taints, pod.Spec.Tolerations, noExecute,
			gate(decode.GateTaintTolerationComparisonOperators)); untolerated {
			return failed(ReasonTaintToleration)
		}
	}
	return replay.AdmitResult{Admit: true}
}

// otherPods are the pods the predicate weighs pod against: the kubelet's admit attributes'
// OtherPods never hold the pod admitted (a running pod admitted anew is not counted twice).
func otherPods(bound []*v1.Pod, pod *v1.Pod) []*v1.Pod {
	i := slices.IndexFunc(bound, func(o *v1.Pod) bool { return pod.UID != "" && o.UID == pod.UID })
	if i < 0 {
		return bound
	}
	return slices.Delete(slices.Clone(bound), i, i+1)
}

// hostPorts are the pod's ports with a host port, its sidecars' too (the scheduler's
// GetHostPorts): each (host IP, protocol, port), the IP 0.0.0.0 and the protocol TCP when unset.
func hostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	add := func(ports []v1.ContainerPort) {
		for _, p := range ports {
			if p.HostPort <= 0 {
				continue
			}
			if p.HostIP == "" {
				p.HostIP = bindAllHostIP
			}
			if p.Protocol == "" {
				p.Protocol = v1.ProtocolTCP
			}
			out = append(out, p)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if replay.IsRestartableInitContainer(&c) {
			add(c.Ports)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c.Ports)
	}
	return out
}

// portsConflict is nodeports.Fits' refusal: a host port of pod that a running pod uses with the
// same protocol on the same IP, or on any IP where either side binds 0.0.0.0 (HostPortInfo).
func portsConflict(pod *v1.Pod, others []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range others {
		for _, used := range hostPorts(o) {
			for _, w := range want {
				if w.HostPort == used.HostPort && w.Protocol == used.Protocol &&
					(w.HostIP == used.HostIP || w.HostIP == bindAllHostIP || used.HostIP == bindAllHostIP) {
					return true
				}
			}
		}
	}
	return false
}
