package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// AdmitResult is admit's answer for one node, as `admit -o json|yaml` prints it: "admissions"
// (one per pod, in order) and "kubeletStart" ("starts": false and no admission when the
// kubelet would not start).
type AdmitResult struct {
	Node string `json:"node,omitempty"`
	nodestate.AdmitPrediction
	// LargestCPURequest is, for a refused pod, the most exclusive CPUs a pod like it is admitted
	// with on this node now (admit pod/NAME).
	LargestCPURequest map[string]int `json:"largestCPURequest,omitempty"`
	// LargestDeviceRequest is, for a refused pod and each device-plugin resource it asks for,
	// the most devices this node admits now with the rest of the pod (its CPUs, memory); absent
	// when even none admits it.
	LargestDeviceRequest map[string]map[string]int `json:"largestDeviceRequest,omitempty"`
	// Error is why the node could not be read or predicted (then nothing else is known).
	Error string `json:"error,omitempty"`
	// Source is where the node's state came from and how old it is (admit --from-published).
	Source *nodestate.Provenance `json:"source,omitempty"`
}

// AdmitListKind is the kind of admit's json/yaml list.
const AdmitListKind = "AdmitResultList"

// NotJudged is the ADMITTED column of a pod the replay cannot judge (nodestate.AdmissionNotJudged).
const NotJudged = "not judged"

// Admit prints one row per container of an admitted pod and one per refused pod, then, for
// each refusal, why; json and yaml print the result itself for one node, a list for several.
// A DEVICES column (each resource's device IDs and their NUMA nodes) is shown when the pods ask
// for devices (o.Devices) or a container holds some, and always with -o wide, which also adds each container's CPUs' NUMA nodes.
func Admit(w io.Writer, o Options, results []AdmitResult) error {
	if len(results) == 1 && !o.ShowNode && (o.Format == JSON || o.Format == YAML) {
		return printOne(w, o.Format, results[0])
	}
	if done, err := printStructured(w, o, AdmitListKind, results); done {
		return err
	}
	wide := o.Format == Wide
	devices := wide || o.Devices || slices.ContainsFunc(results, holdsDevices)
	headers := []string{"POD", "ADMITTED", "CONTAINER", "CPUS"}
	if wide {
		headers = append(headers, "CPU-NUMA")
	}
	headers = append(headers, "MEMORY-NUMA")
	if devices {
		headers = append(headers, "DEVICES")
	}
	if o.Sources {
		headers = append(headers, "AGE", "FROM")
	}
	t := newTable(w, o, append(headers, "REASON", "MESSAGE")...)
	// row puts the optional columns in place: cells are POD ADMITTED CONTAINER CPUS, then
	// MEMORY-NUMA, REASON, MESSAGE.
	var source *nodestate.Provenance
	row := func(node string, first []string, cpuNUMA, memNUMA, devs string, last ...string) {
		cells := slices.Clone(first)
		if wide {
			cells = append(cells, cpuNUMA)
		}
		cells = append(cells, memNUMA)
		if devices {
			cells = append(cells, devs)
		}
		if o.Sources {
			from := "-"
			if source != nil {
				from = string(source.From)
			}
			cells = append(cells, source.Age(), from)
		}
		t.add(node, append(cells, last...)...)
	}
	var why []string
	picks := map[string]bool{}
	for _, r := range results {
		source = r.Source
		switch s := r.KubeletStart; {
		case r.Error != "":
			row(r.Node, []string{"", "error", "", ""}, "", "", "", "", text.OneLine(r.Error))
			continue
		case !s.Starts:
			row(r.Node, []string{"", "no", "", ""}, "", "", "", "KubeletStart", text.OneLine(fmt.Sprintf("kubelet %s would not start (%s): %s", r.Kubelet, s.Phase, s.Error)))
			continue
		}
		for _, a := range r.Admissions {
			name := admittedPod(a)
			where := name
			if r.Node != "" {
				where += " on " + r.Node
			}
			if a.Verdict == nodestate.AdmissionNotJudged {
				// Neither yes nor no: the CPUs the replay without its devices found are no answer.
				row(r.Node, []string{name, NotJudged, "", ""}, "", "", "", "", "")
				for _, reason := range a.NotJudged {
					why = append(why, where+": not judged: "+reason)
				}
				for _, line := range a.Why {
					why = append(why, where+": "+line)
				}
				continue
			}
			if !a.Admitted {
				admitted, reason := "no", a.Reason
				switch {
				case a.Hangs:
					admitted, reason = "hangs", "KubeletHangs"
				case a.NotReached:
					admitted = "waits"
				}
				row(r.Node, []string{name, admitted, "", ""}, "", "", "", reason, text.OneLine(a.Message))
				for _, line := range a.Why {
					why = append(why, where+": "+line)
				}
				if n, ok := r.LargestCPURequest[a.Pod]; ok {
					why = append(why, fmt.Sprintf("%s: the largest exclusive CPU request this node admits now under these options: %d", where, n))
				}
				for _, res := range slices.Sorted(maps.Keys(r.LargestDeviceRequest[a.Pod])) {
					why = append(why, fmt.Sprintf("%s: what would fit: %d %s with the pod's CPUs and memory, the most this node admits now", where, r.LargestDeviceRequest[a.Pod][res], res))
				}
				continue
			}
			for _, c := range a.Containers {
				cpus := c.CPUs
				switch {
				case cpus == "":
					cpus = "(not pinned)"
				case !c.Exclusive:
					cpus += " (shared)"
				}
				row(r.Node, []string{name, "yes", containerLabel(c), cpus}, numaText(c.CPUNUMANodes), numaText(c.MemoryNUMANodes), devicesText(c, picks), "", "")
				for _, res := range c.DevicesApart {
					why = append(why, fmt.Sprintf("%s: container %s: its CPUs are on NUMA %s, its %s devices on none of them: admitted, not aligned (the topology policy allows it)", where, c.Name, numaText(c.CPUNUMANodes), res))
				}
			}
			for _, u := range a.Unreplayed {
				why = append(why, name+": "+u)
			}
		}
	}
	t.render()
	for _, mark := range []struct{ pick, mark string }{{nodestate.DevicePickEquivalent, "*"}, {nodestate.DevicePickArbitrary, "~"}} {
		if picks[mark.pick] {
			fmt.Fprintf(w, "%s devices: %s\n", mark.mark, mark.pick)
		}
	}
	for _, line := range why {
		fmt.Fprintln(w, line)
	}
	return nil
}

func holdsDevices(r AdmitResult) bool {
	for _, a := range r.Admissions {
		for _, c := range a.Containers {
			if len(c.Devices) > 0 {
				return true
			}
		}
	}
	return false
}

// devicesText is each resource's devices grouped by NUMA node ("nvidia.com/gpu gpu-0,gpu-1
// NUMA 0"), marked when the kubelet picked them among others (picks records which marks show).
func devicesText(c nodestate.AdmittedContainer, picks map[string]bool) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(c.Devices)) {
		byNUMA := map[string][]string{}
		for _, id := range c.Devices[r] {
			key := "no NUMA"
			if nodes := c.DeviceNUMANodes[r][id]; len(nodes) > 0 {
				key = "NUMA " + numaText(nodes)
			}
			byNUMA[key] = append(byNUMA[key], id)
		}
		var groups []string
		for _, key := range slices.Sorted(maps.Keys(byNUMA)) {
			groups = append(groups, strings.Join(byNUMA[key], ",")+" "+key)
		}
		mark := ""
		switch pick := c.DevicesPick[r]; pick {
		case nodestate.DevicePickEquivalent:
			mark = "*"
			picks[pick] = true
		case nodestate.DevicePickArbitrary:
			mark = "~"
			picks[pick] = true
		}
		parts = append(parts, r+" "+strings.Join(groups, ", ")+mark)
	}
	return strings.Join(parts, "; ")
}

// AdmitWhere says where the node puts the pods it admits: the NUMA nodes of their CPUs,
// memory and devices ("" when nothing is pinned).
func AdmitWhere(r AdmitResult) string {
	nodes := map[int]bool{}
	for _, a := range r.Admissions {
		for _, c := range a.Containers {
			for _, n := range append(slices.Clone(c.CPUNUMANodes), c.MemoryNUMANodes...) {
				nodes[n] = true
			}
			for _, devs := range c.DeviceNUMANodes {
				for _, ns := range devs {
					for _, n := range ns {
						nodes[n] = true
					}
				}
			}
		}
	}
	if len(nodes) == 0 {
		return ""
	}
	return "NUMA " + numaText(slices.Sorted(maps.Keys(nodes)))
}

func admittedPod(a nodestate.Admission) string {
	if a.Namespace != "" {
		return a.Namespace + "/" + a.Pod
	}
	return a.Pod
}

func containerLabel(c nodestate.AdmittedContainer) string {
	switch {
	case c.Sidecar:
		return c.Name + " (sidecar)"
	case c.Init:
		return c.Name + " (init)"
	}
	return c.Name
}

func numaText(nodes []int) string {
	if len(nodes) == 0 {
		return "-"
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ",")
}
