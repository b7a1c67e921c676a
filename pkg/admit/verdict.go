package admit

// The third answer. A pod asking for device-plugin devices the replay does not hold is not
// judged: the device manager is the kubelet's first hint provider and allocates before the CPU
// and memory managers, so its hints and its own checks decide the pod's answer and where its
// CPUs and memory land. What the replay without those devices said stays as an explanation,
// never as the verdict; and every pod after a pod not judged finds a node nobody replayed.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// An Admission's verdict.
const (
	// VerdictAdmitted: the kubelet admits the pod (every hint provider and check it asks replayed).
	VerdictAdmitted = "admitted"
	// VerdictRefused: the kubelet does not admit it: refused with Reason and Message, or its
	// admission never returns (Hangs), or it waits behind one that never returns (NotReached).
	VerdictRefused = "refused"
	// VerdictNotJudged: the replay cannot tell (Admission.NotJudged says why).
	VerdictNotJudged = "notJudged"
)

// devicesNotReplayed is the default reason the device manager is not replayed (Input.Devices nil).
const devicesNotReplayed = "the device manager is not replayed (the node's device plugins and their devices are not known)"

// unjudgedDevices are the extended resources pod asks for whose devices the replay does not
// hold, each with the reason the pod says, and the index (init containers first) of the first container asking for
// one (-1: none).
func unjudgedDevices(pod *v1.Pod, in Input) (map[string]string, int) {
	out, first := map[string]string{}, -1
	// A DRA-backed extended resource (KEP-5004) is DRA's, not the device manager's, which skips
	// it (1.35+): the scheduler's claim holds its devices, and DRA is not replayed.
	draBacked := map[[2]string]string{}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		for _, m := range st.RequestMappings {
			draBacked[[2]string{m.ContainerName, m.ResourceName}] = st.ResourceClaimName
		}
	}
	for i, c := range podContainersOf(pod) {
		for _, name := range slices.Concat(slices.Collect(maps.Keys(c.Resources.Requests)), slices.Collect(maps.Keys(c.Resources.Limits))) {
			if !IsExtendedResource(name) {
				continue
			}
			r := string(name)
			claim, byDRA := draBacked[[2]string{c.Name, r}]
			class, plugin := in.DRAExtendedResources[r], in.devicePluginServes(r)
			switch {
			case byDRA:
				out[r] = fmt.Sprintf("%s: extended resource %s: served by DRA, not a device plugin (status.extendedResourceClaimStatus: claim %s); DRA's allocation is not replayed", ProviderDRA, r, claim)
			case class != "" && !plugin:
				out[r] = fmt.Sprintf("%s: extended resource %s: served by DRA on this node (DeviceClass %s names it, and no device plugin serves it here: the scheduler gives the pod a claim); DRA's allocation is not replayed", ProviderDRA, r, class)
			case in.DRAExtendedNotKnown != "" && !plugin:
				out[r] = fmt.Sprintf("%s: extended resource %s: no device plugin serves it on this node, and DRA may: %s", ProviderDRA, r, in.DRAExtendedNotKnown)
			case in.Devices == nil:
				why := in.DevicesNotReplayed
				if why == "" {
					why = devicesNotReplayed
				}
				out[r] = deviceReason(r, why)
			case in.Devices.NotJudged[r] != "":
				out[r] = deviceReason(r, "its devices' NUMA nodes are not known: "+in.Devices.NotJudged[r])
			default:
				continue
			}
			if first < 0 {
				first = i
			}
		}
	}
	return out, first
}

// devicePluginServes: a device plugin registered the extended resource r on this node (its
// devices, or the node's allocatable). Otherwise the scheduler's DRA plugin takes a pod's
// request for it when a DeviceClass names it (KEP-5004), and the device manager leaves it
// alone; the kubelet's predicate drops a request for a resource the node does not list.
func (in Input) devicePluginServes(r string) bool {
	if in.Devices != nil && len(in.Devices.Plugins[r]) > 0 {
		return true
	}
	if in.Node != nil {
		if q, ok := in.Node.Allocatable[v1.ResourceName(r)]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// deviceReason is why a device plugin resource is not judged, as a pod's reason says it.
func deviceReason(resource, why string) string {
	return fmt.Sprintf("%s: device plugin resource %s: %s", ProviderDevices, resource, why)
}

// AsksExtendedResource reports whether some pod asks for an extended resource (requests or
// limits: a pod from a file is not defaulted yet).
func AsksExtendedResource(pods []*v1.Pod) bool {
	for _, p := range pods {
		for _, c := range podContainersOf(p) {
			for _, list := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range list {
					if IsExtendedResource(name) {
						return true
					}
				}
			}
		}
	}
	return false
}

// IsExtendedResource is v1helper.IsExtendedResourceName: a device plugin can serve it.
func IsExtendedResource(name v1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, "requests.")
}

// refusedBeforeAnyDevice: the replay without the pod's unreplayed devices refused it with
// TopologyAffinityError before any of those devices could be allocated, so the kubelet refuses
// it alike. The merge of every provider's hints (topologymanager policy.go mergePermutation)
// is preferred only if every hint in it is, and its affinity is the AND of theirs: the device
// manager's hints can only narrow it or make it not preferred, and restricted and
// single-numa-node admit a preferred merge only. The message is constant. In pod scope all
// hints merge before any allocation (scope_pod.go); in container scope each container's merge
// comes before its allocation and after the allocation of the containers before it
// (scope_container.go), so the refusing container must be at or before the first one asking for
// an unreplayed device (firstDevice, an index into podContainersOf).
func refusedBeforeAnyDevice(a Admission, pa replay.PodAdmission, pod *v1.Pod, scope string, firstDevice int) bool {
	if a.Admitted || a.Hangs || a.NotReached || a.Handler != HandlerResourceManagers || a.Reason != ReasonTopologyAffinity {
		return false
	}
	if scope == replay.TopologyScopePod {
		return true
	}
	refused := slices.IndexFunc(podContainersOf(pod), func(c v1.Container) bool { return c.Name == pa.RefusedContainer })
	return refused >= 0 && refused <= firstDevice
}

// judgeDevices gives the admission its verdict: not judged when the pod asks for devices the
// replay does not hold (unless provably refused before them), or when it follows a pod not
// judged (afterNotJudged names it). It returns whether the pod is not judged.
func judgeDevices(a *Admission, pa replay.PodAdmission, pod *v1.Pod, in Input, afterNotJudged string) bool {
	a.Verdict = VerdictRefused
	if a.Admitted {
		a.Verdict = VerdictAdmitted
	}
	devices, first := unjudgedDevices(pod, in)
	if afterNotJudged == "" && len(devices) > 0 && in.Config != nil && refusedBeforeAnyDevice(*a, pa, pod, in.Config.TopologyScope(), first) {
		a.Why = append(a.Why, fmt.Sprintf("its %s devices were not replayed, but their hints could only narrow the merge (the kubelet refuses it there, before it allocates any device)",
			strings.Join(slices.Sorted(maps.Keys(devices)), ", ")))
		return false
	}
	var reasons []string
	if afterNotJudged != "" {
		reasons = append(reasons, fmt.Sprintf("after pod %s, which is not judged: where its CPUs, memory and devices land decides what this pod finds", afterNotJudged))
	}
	for _, r := range slices.Sorted(maps.Keys(devices)) {
		reasons = append(reasons, devices[r])
	}
	if len(reasons) == 0 {
		return false
	}
	replayed := "replayed without its devices: "
	if len(devices) == 0 {
		replayed = "replayed after the pods before it as the replay without their devices left the node: "
	}
	*a = Admission{Pod: a.Pod, Namespace: a.Namespace, UID: a.UID, Verdict: VerdictNotJudged, NotJudged: reasons, Unreplayed: a.Unreplayed,
		Containers: []Container{}, Why: []string{replayed + partialAnswer(*a)}}
	return true
}

// partialAnswer is what the replay said of a pod, in a line.
func partialAnswer(a Admission) string {
	switch {
	case a.NotReached:
		return a.Message
	case a.Hangs:
		return "the kubelet never answers (" + a.Message + ")"
	case !a.Admitted:
		return fmt.Sprintf("refused, %s: %s", a.Reason, a.Message)
	}
	var parts []string
	for _, c := range a.Containers {
		cpus := c.CPUs
		switch {
		case cpus == "":
			cpus = "not pinned"
		case !c.Exclusive:
			cpus += " (shared)"
		}
		part := fmt.Sprintf("%s CPUs %s", c.Name, cpus)
		if len(c.MemoryNUMANodes) > 0 {
			part += fmt.Sprintf(", memory NUMA %s", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.MemoryNUMANodes)), ","), "[]"))
		}
		parts = append(parts, part)
	}
	return "admitted (" + strings.Join(parts, "; ") + ")"
}
