package admit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
)

// why says, from the kubelet's reason and the node as the pod found it, which policy or option
// refused the pod and the numbers behind it.
func why(a *Admission) []string {
	if a.Admitted || a.Before == nil {
		return nil
	}
	c, p := a.Before, a.Before.Policy
	free := fmt.Sprintf("free CPUs (shared pool less reserved): %s [%d]; by NUMA node: %s; by socket: %s; free whole cores: %d",
		orNone(c.FreeCPUs), cpuCount(c.FreeCPUs), byID(c.FreeCPUsByNUMA), byID(c.FreeCPUsBySock), c.FreeCores)
	asked := "asked: " + askedText(c.Asked)
	var out []string
	switch {
	case a.Hangs:
		out = append(out, "cpuManagerPolicyOptions full-pcpus-only with distribute-cpus-across-numa: the NUMA nodes left to take the remainder hold enough free CPUs but too few whole cores, and the kubelet's picker loops forever there (kubernetes/kubernetes#140730, fixed upstream after v1.37); its CPU manager stays locked, this pod stays Pending and no pod after it is admitted until the kubelet restarts",
			"to avoid it: keep whole cores free per NUMA node (reservedSystemCPUs as whole cores), or run without one of the two options", asked, free)
	case a.Reason == ReasonSMTAlignment:
		out = append(out, "cpuManagerPolicyOptions full-pcpus-only: exclusive CPUs are handed out in whole cores only, and only from cores outside the reserved ones", asked, free)
	case a.Reason == ReasonTopologyAffinity:
		providers := "the CPU and memory managers'"
		if c.Devices != nil {
			providers = "the device, CPU and memory managers'"
		}
		out = append(out, fmt.Sprintf("topologyManagerPolicy %s (scope %s%s): %s NUMA hints merge to no affinity this policy admits",
			p.Topology, p.TopologyScope, optText(p.TopologyOptions), providers), asked, free)
		if len(c.FreeMemory) > 0 {
			out = append(out, "free memory by NUMA node: "+memoryText(c.FreeMemory))
		}
	case c.Devices != nil && strings.Contains(a.Message, "Allocate failed due to") && !strings.Contains(a.Message, "[memorymanager]") && !strings.Contains(a.Message, "cpus"):
		out = append(out, "the device manager: it could not give the devices asked (its own check, before any CPU is chosen)", asked)
	case strings.Contains(a.Message, "not enough cpus available"):
		out = append(out, fmt.Sprintf("cpuManagerPolicy %s%s: more exclusive CPUs asked than the shared pool holds outside the reserved CPUs (or than the chosen NUMA nodes hold)", p.CPU, optText(p.CPUOptions)), asked, free)
	case strings.Contains(a.Message, "[memorymanager]"):
		out = append(out, fmt.Sprintf("memoryManagerPolicy %s: no NUMA node set holds the memory asked", p.Memory), asked, "free memory by NUMA node: "+memoryText(c.FreeMemory))
	case a.Handler == HandlerNodeResources && predicateWhy[a.Reason] != "":
		out = append(out, "the kubelet's predicate: "+predicateWhy[a.Reason])
	case a.Handler == HandlerNodeResources:
		out = append(out, "the node-resource predicate: the pod's requests do not fit in the node's allocatable beside the pods it runs", asked)
	}
	out = append(out, devicesText(c.Devices)...)
	if len(a.Unreplayed) > 0 {
		out = append(out, "not replayed: "+strings.Join(a.Unreplayed, "; "))
	}
	return out
}

// predicateWhy says what the predicate's refusals other than resources weighed.
var predicateWhy = map[string]string{
	ReasonPodOSSelector:            "the pod's kubernetes.io/os label names another OS than the node's (linux)",
	ReasonPodOSNotSupported:        "the pod's spec.os names another OS than the node's (linux)",
	ReasonSupplementalGroupsPolicy: "the pod asks for supplementalGroupsPolicy Strict, which the node's status.features does not report supported",
	ReasonNodeAffinity:             "the pod's nodeSelector or required node affinity does not match the node's labels",
	ReasonNodeName:                 "the pod's spec.nodeName names another node",
	ReasonNodePorts:                "a host port the pod asks for is used by a pod the node runs (same protocol and host IP, or 0.0.0.0)",
	ReasonTaintToleration:          "the node has a NoExecute taint the pod does not tolerate (NoSchedule taints are the scheduler's alone)",
}

// devicesText says, per resource, which devices were free on which NUMA node, held, unhealthy.
func devicesText(devices map[string]DeviceContext) []string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(devices)) {
		d := devices[r]
		var nodes []string
		for _, n := range slices.Sorted(maps.Keys(d.FreeByNUMA)) {
			nodes = append(nodes, fmt.Sprintf("NUMA %s: %s [%d]", n, strings.Join(d.FreeByNUMA[n], ","), len(d.FreeByNUMA[n])))
		}
		line := fmt.Sprintf("free %s devices: %d", r, d.Free)
		if len(nodes) > 0 {
			line += "; " + strings.Join(nodes, ", ")
		}
		if len(d.Held) > 0 {
			var held []string
			for _, id := range slices.Sorted(maps.Keys(d.Held)) {
				held = append(held, id+" by "+strings.Join(d.Held[id], ","))
			}
			line += "; held: " + strings.Join(held, ", ")
		}
		if len(d.Unhealthy) > 0 {
			line += "; unhealthy: " + strings.Join(d.Unhealthy, ",")
		}
		out = append(out, line)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// cpuCount is the size of a CPU set the replay wrote ("0-3,8"; "" is none).
func cpuCount(s string) int {
	set, err := cpuset.Parse(s)
	if err != nil {
		return 0
	}
	return set.Size()
}

func byID(m map[int]string) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d: %s [%d]", id, orNone(m[id]), cpuCount(m[id])))
	}
	return strings.Join(parts, ", ")
}

func optText(opts []string) string {
	if len(opts) == 0 {
		return ""
	}
	return ", options " + strings.Join(opts, " ")
}

func askedText(m map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, name+" "+orNone(m[name]))
	}
	return strings.Join(parts, "; ")
}

func memoryText(m map[int]NodeFree) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		var kinds []string
		for _, name := range slices.Sorted(maps.Keys(m[id])) {
			kinds = append(kinds, name+" "+resource.NewQuantity(int64(m[id][name]), resource.BinarySI).String())
		}
		parts = append(parts, fmt.Sprintf("%d: %s", id, strings.Join(kinds, ", ")))
	}
	return strings.Join(parts, "; ")
}

// LargestCPURequest is the largest number of exclusive CPUs a pod like this one (one
// Guaranteed container with that many CPUs and the pod's memory) is admitted with on the node
// as in is, under its options; 0 when none is.
func LargestCPURequest(in Input, pod *v1.Pod) (int, error) {
	memory := resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			memory.Add(q)
		}
	}
	if memory.IsZero() {
		memory = resource.MustParse("1Mi")
	}
	probe := func(n int) (bool, error) {
		q := *resource.NewQuantity(int64(n), resource.DecimalSI)
		res := v1.ResourceList{v1.ResourceCPU: q, v1.ResourceMemory: memory}
		p := &v1.Pod{}
		p.Name, p.Namespace, p.UID = "largest-probe", pod.Namespace, "nodestate-largest-probe"
		p.Spec.Containers = []v1.Container{{Name: "probe", Resources: v1.ResourceRequirements{Requests: res, Limits: res}}}
		try := in
		try.Pods = []*v1.Pod{p}
		r, err := Predict(try)
		if err != nil {
			return false, err
		}
		return len(r.Admissions) == 1 && r.Admissions[0].Admitted, nil
	}
	for n := len(in.Machine.CPUs); n > 0; n-- {
		ok, err := probe(n)
		if err != nil {
			return 0, err
		}
		if ok {
			return n, nil
		}
	}
	return 0, nil
}

// Reasons the resource managers give (their texts are the kubelet's, in Message).
const (
	ReasonSMTAlignment     = "SMTAlignmentError"
	ReasonTopologyAffinity = "TopologyAffinityError"
	ReasonUnexpected       = "UnexpectedAdmissionError"
)
