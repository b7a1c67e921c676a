package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// fileFindings: a checkpoint the target kubelet refuses (decode's verdict). A refusal that is
// already the start prediction's error is not said twice.
//
// Every refusal is an error, also where the kubelet starts without the file: the device manager
// "continues after failing to read checkpoint file" and may hand devices in use to other pods,
// and the DRA manager forgets device health. A pre-upgrade check that exits 0 there lets the
// upgrade through.
func fileFindings(in Input, startErr string) []Finding {
	var out []Finding
	for _, r := range in.Files {
		if r == nil || (startErr != "" && r.Error == startErr) {
			continue
		}
		switch r.Verdict {
		case decode.Valid, decode.NotRead:
			continue
		}
		who := "the kubelet"
		if r.Reader != "" {
			who = "kubelet " + r.Reader
		}
		// decode says what the kubelet does then: most managers stop it, a few carry on.
		effect := "it is not a file the kubelet restores at start"
		if r.Refused != nil {
			effect = r.Refused.Effect
		}
		out = append(out, Finding{Severity: SeverityError, Check: "file-refused", File: r.File,
			Message: fmt.Sprintf("%s refuses this file (%s), so %s: %s", who, r.Verdict, effect, r.Error),
			Fix:     fmt.Sprintf("drain the node, then delete %s before that kubelet starts", onNode(in, r.File))})
	}
	return out
}

func onNode(in Input, rel string) string {
	if strings.HasPrefix(rel, "/") {
		return rel
	}
	return strings.TrimSuffix(in.RootDir, "/") + "/" + rel
}

// configFindings: what cmd/kubelet refuses before the managers run, beyond what the managers'
// start checks see. reservedSystemCPUs must be online CPUs (getReservedCPUs); the managers on
// their own, as the vectors run them, report it later or not at all.
func configFindings(in Input) []Finding {
	if in.Config == nil || in.Machine == nil || in.Config.ReservedSystemCPUs == "" {
		return nil
	}
	set, err := replay.ParseCPUSet(in.Config.ReservedSystemCPUs)
	if err != nil {
		return []Finding{{Severity: SeverityError, Check: "reserved-cpus", File: "kubelet-config", Entry: "reservedSystemCPUs",
			Message: fmt.Sprintf("the kubelet exits at start: unable to parse reserved-cpus list: %v", err),
			Fix:     "write reservedSystemCPUs as a Linux CPU list, e.g. 0,16 or 0-1"}}
	}
	online := in.Machine.Online()
	if set.IsSubsetOf(online) {
		return nil
	}
	return []Finding{{Severity: SeverityError, Check: "reserved-cpus", File: "kubelet-config", Entry: "reservedSystemCPUs",
		Message: fmt.Sprintf("the kubelet exits at start: reserved-cpus: %s is not a subset of online-cpus: %s", in.Config.ReservedSystemCPUs, online),
		Fix:     fmt.Sprintf("reserve online CPUs only (offline or missing: %s)", set.Difference(online))}}
}

// cpuFindings checks cpu_manager_state on its own terms: overlaps, CPUs the machine lacks,
// online CPUs the state forgot, stale pods.
func cpuFindings(in Input, rep *decode.Report, checkedByStart bool) []Finding {
	cs, ok := decodedCPU(rep)
	if !ok || cs == nil {
		return nil
	}
	file := rep.File
	var out []Finding
	def, err := replay.ParseCPUSet(cs.DefaultCPUSet)
	if err != nil {
		return append(out, Finding{Severity: SeverityError, Check: "cpu-unparsable", File: file, Entry: "defaultCpuSet",
			Message: fmt.Sprintf("default CPU set %q does not parse: %v", cs.DefaultCPUSet, err)})
	}
	type owner struct {
		pod, ctr string
		set      cpuset.CPUSet
	}
	var owners []owner
	for _, pod := range slices.Sorted(maps.Keys(cs.Entries)) {
		for _, ctr := range slices.Sorted(maps.Keys(cs.Entries[pod])) {
			s, err := replay.ParseCPUSet(cs.Entries[pod][ctr])
			if err != nil {
				out = append(out, Finding{Severity: SeverityError, Check: "cpu-unparsable", File: file, Entry: pod + "/" + ctr,
					Message: fmt.Sprintf("cpuset %q does not parse: %v", cs.Entries[pod][ctr], err)})
				continue
			}
			owners = append(owners, owner{pod, ctr, s})
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(cs.PodEntries)) {
		s, err := replay.ParseCPUSet(cs.PodEntries[pod])
		if err != nil {
			out = append(out, Finding{Severity: SeverityError, Check: "cpu-unparsable", File: file, Entry: entry(pod, ""),
				Message: fmt.Sprintf("cpuset %q does not parse: %v", cs.PodEntries[pod], err)})
			continue
		}
		owners = append(owners, owner{pod, "", s})
	}
	ids := def.List()
	firstOwner := map[int]int{} // CPU -> index of the first owner holding it
	for i, o := range owners {
		ids = append(ids, o.set.UnsortedList()...)
		if x := o.set.Intersection(def); !x.IsEmpty() && cs.PolicyName == replay.CPUPolicyStatic {
			out = append(out, Finding{Severity: SeverityError, Check: "cpu-overlap", File: file, Entry: entry(o.pod, o.ctr),
				Message: fmt.Sprintf("exclusive CPUs %s are also in the shared pool (defaultCpuSet %s)", x, def),
				Fix:     "drain the node and delete the file: two owners of one CPU cannot both be right"})
		}
		shared := map[int][]int{} // earlier owner -> CPUs shared with it
		for _, cpu := range o.set.List() {
			j, ok := firstOwner[cpu]
			if !ok {
				firstOwner[cpu] = i
				continue
			}
			// A pod's app containers reuse its init containers' CPUs: only other pods conflict.
			if owners[j].pod != o.pod {
				shared[j] = append(shared[j], cpu)
			}
		}
		for _, j := range slices.Sorted(maps.Keys(shared)) {
			out = append(out, Finding{Severity: SeverityError, Check: "cpu-overlap", File: file, Entry: entry(o.pod, o.ctr),
				Message: fmt.Sprintf("exclusive CPUs %s are also assigned to %s", cpuset.New(shared[j]...), entry(owners[j].pod, owners[j].ctr)),
				Fix:     "drain one of the pods; the kubelet starts with this, but exclusivity is already broken"})
		}
	}
	known := cpuset.New(ids...)
	if in.Machine != nil && cs.PolicyName == replay.CPUPolicyStatic && !def.IsEmpty() && !checkedByStart {
		online := in.Machine.Online()
		if extra := known.Difference(online); !extra.IsEmpty() {
			out = append(out, Finding{Severity: SeverityError, Check: "cpu-outside-machine", File: file,
				Message: fmt.Sprintf("CPUs %s are in the state but not online on the machine (online: %s)", extra, online),
				Fix:     "bring those CPUs online again, or drain the node and delete the file"})
		}
		if gone := online.Difference(known); !gone.IsEmpty() {
			out = append(out, Finding{Severity: SeverityError, Check: "cpu-missing-from-state", File: file,
				Message: fmt.Sprintf("online CPUs %s are neither shared nor assigned in the state", gone),
				Fix:     "the machine has CPUs the state was not written for (resize, onlined CPU): drain the node and delete the file"})
		}
	}
	const cpuFreed = "its exclusive CPUs return to the shared pool at the kubelet's next reconcile"
	out = append(out, staleEntries(in, file, cs.Entries, cs.PodEntries, cpuFreed)...)
	return out
}

// staleContainers: entries of containers a live pod no longer has.
// staleEntries are the pods (container- or pod-level) and the containers a state file still
// holds resources for although the API no longer has them; freed says what the kubelet does
// about it.
func staleEntries[C, P any](in Input, file string, entries map[string]map[string]C, podEntries map[string]P, freed string) []Finding {
	var out []Finding
	if in.LivePods != nil {
		for _, pod := range sortedUnion(entries, podEntries) {
			if !in.LivePods[pod] {
				out = append(out, staleFinding(file, pod, freed))
			}
		}
	}
	return append(out, staleContainers(in, file, slices.Sorted(maps.Keys(entries)), func(pod string) []string { return slices.Sorted(maps.Keys(entries[pod])) }, freed)...)
}

func staleContainers(in Input, file string, pods []string, ctrs func(string) []string, what string) []Finding {
	var out []Finding
	for _, pod := range pods {
		live, known := in.LiveContainers[pod]
		if !known || (in.LivePods != nil && !in.LivePods[pod]) {
			continue
		}
		for _, c := range ctrs(pod) {
			if !live[c] {
				out = append(out, Finding{Severity: SeverityWarning, Check: "stale-container", File: file, Entry: pod + "/" + c,
					Message: "pod " + pod + " has no container " + c + " any more, but it still holds resources here",
					Fix:     "nothing to do if the kubelet runs: " + what})
			}
		}
	}
	return out
}

func entry(pod, ctr string) string {
	if ctr == "" {
		return "pod " + pod
	}
	return pod + "/" + ctr
}

func staleFinding(file, pod, what string) Finding {
	return Finding{Severity: SeverityWarning, Check: "stale-pod", File: file, Entry: "pod " + pod,
		Message: "pod " + pod + " is gone from the API server but still holds resources here",
		Fix:     "nothing to do if the kubelet runs: " + what}
}

func sortedUnion[A, B any](a map[string]A, b map[string]B) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}

// memoryFindings: assignments over what a NUMA node has, on nodes the machine lacks, stored
// totals that differ from the machine, stale pods.
func memoryFindings(in Input, rep *decode.Report) []Finding {
	ms, ok := decodedMemory(rep)
	if !ok || ms == nil {
		return nil
	}
	file := rep.File
	var out []Finding
	// Assigned bytes per node and type, as the blocks record them (spread over the affinity as
	// the kubelet does it is not knowable; a single-node block is exact).
	assigned := map[int]map[string]uint64{}
	for _, pod := range slices.Sorted(maps.Keys(ms.Entries)) {
		for _, ctr := range slices.Sorted(maps.Keys(ms.Entries[pod])) {
			for _, b := range ms.Entries[pod][ctr] {
				if len(b.NUMAAffinity) == 1 {
					id := b.NUMAAffinity[0]
					if assigned[id] == nil {
						assigned[id] = map[string]uint64{}
					}
					assigned[id][b.Type] += b.Size
				}
				if in.Machine != nil {
					for _, id := range b.NUMAAffinity {
						if _, ok := in.Machine.Node(id); !ok {
							out = append(out, Finding{Severity: SeverityError, Check: "memory-outside-machine", File: file, Entry: pod + "/" + ctr,
								Message: fmt.Sprintf("%s of %s is pinned to NUMA node %d, which the machine does not have", bytesText(b.Size), b.Type, id),
								Fix:     "drain the node and delete the file"})
						}
					}
				}
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(assigned)) {
		node := ms.MachineState[id]
		for _, typ := range slices.Sorted(maps.Keys(assigned[id])) {
			var alloc uint64
			if node != nil && node.MemoryMap[typ] != nil {
				alloc = node.MemoryMap[typ].Allocatable
			}
			if in.Machine != nil {
				if n, ok := in.Machine.Node(id); ok && typ == "memory" && (alloc == 0 || n.Memory < alloc) {
					alloc = n.Memory
				}
			}
			if alloc > 0 && assigned[id][typ] > alloc {
				out = append(out, Finding{Severity: SeverityWarning, Check: "memory-over-node", File: file, Entry: fmt.Sprintf("NUMA node %d", id),
					Message: fmt.Sprintf("%s of %s is assigned on NUMA node %d, which has %s allocatable", bytesText(assigned[id][typ]), typ, id, bytesText(alloc)),
					Fix:     "the node is overcommitted: drain pods pinned to it"})
			}
		}
	}
	if in.Machine != nil && ms.PolicyName == replay.MemoryPolicyStatic {
		for _, id := range sortedNodeIDs(ms.MachineState) {
			node := ms.MachineState[id]
			n, ok := in.Machine.Node(id)
			if !ok {
				out = append(out, Finding{Severity: SeverityError, Check: "memory-outside-machine", File: file, Entry: fmt.Sprintf("NUMA node %d", id),
					Message: fmt.Sprintf("the state has NUMA node %d, which the machine does not have", id), Fix: "drain the node and delete the file"})
				continue
			}
			if t := node.MemoryMap["memory"]; t != nil && t.Total != n.Memory {
				out = append(out, Finding{Severity: SeverityError, Check: "memory-machine-drift", File: file, Entry: fmt.Sprintf("NUMA node %d", id),
					Message: fmt.Sprintf("the state records %d bytes of memory, the machine has %d (%+d)", t.Total, n.Memory, int64(n.Memory)-int64(t.Total)),
					Fix:     "the node's memory changed since the state was written (reboot, firmware, resize): drain the node and delete the file"})
			}
			for _, hp := range n.HugePages {
				name := replay.HugePagesName(hp.PageSizeKiB)
				if t := node.MemoryMap[name]; t != nil && t.Total != hp.NumPages*hp.PageSizeKiB*1024 {
					out = append(out, Finding{Severity: SeverityError, Check: "memory-machine-drift", File: file, Entry: fmt.Sprintf("NUMA node %d %s", id, name),
						Message: fmt.Sprintf("the state records %s of %s, the machine has %s", bytesText(t.Total), name, bytesText(hp.NumPages*hp.PageSizeKiB*1024)),
						Fix:     "restore the hugepage pool, or drain the node and delete the file"})
				}
			}
		}
		for _, id := range in.Machine.NodeIDs() {
			if _, ok := ms.MachineState[id]; !ok && len(ms.MachineState) > 0 {
				out = append(out, Finding{Severity: SeverityError, Check: "memory-machine-drift", File: file, Entry: fmt.Sprintf("NUMA node %d", id),
					Message: fmt.Sprintf("the machine has NUMA node %d, which the state does not record", id), Fix: "drain the node and delete the file"})
			}
		}
	}
	const memFreed = "its NUMA memory is released at the kubelet's next reconcile"
	out = append(out, staleEntries(in, file, ms.Entries, ms.PodEntries, memFreed)...)
	return out
}

func sortedNodeIDs(m map[int]*decode.NUMANodeMemory) []int {
	out := make([]int, 0, len(m))
	for k, v := range m {
		if v != nil {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// deviceFindings: a device held by two containers, stale pods.
func deviceFindings(in Input) []Finding {
	rep := fileOf(in.Files, decode.KindDevices)
	if rep == nil {
		return nil
	}
	ds, ok := rep.Decoded.Devices, rep.Decoded.Devices != nil
	if !ok || ds == nil {
		return nil
	}
	var out []Finding
	holders := map[string]string{}
	stale := map[string]bool{}
	for _, e := range ds.PodDeviceEntries {
		ids := append([]string(nil), e.DeviceIDs...)
		for _, numa := range slices.Sorted(maps.Keys(e.DevicesPerNUMA)) {
			ids = append(ids, e.DevicesPerNUMA[numa]...)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue // one device listed under two NUMA nodes of one entry
			}
			seen[id] = true
			key := e.ResourceName + "/" + id
			who := e.PodUID + "/" + e.ContainerName
			if prev, ok := holders[key]; ok && prev != who && !strings.HasPrefix(prev, e.PodUID+"/") {
				out = append(out, Finding{Severity: SeverityError, Check: "device-held-twice", File: rep.File, Entry: who,
					Message: fmt.Sprintf("device %s of %s is also held by %s", id, e.ResourceName, prev),
					Fix:     "drain one of the pods; the device plugin gave one device to two containers"})
			} else if !ok {
				holders[key] = who
			}
		}
		if in.LivePods != nil && !in.LivePods[e.PodUID] && !stale[e.PodUID] {
			stale[e.PodUID] = true
			out = append(out, staleFinding(rep.File, e.PodUID, "its devices are freed at the device manager's next update"))
		}
	}
	return out
}

// draFindings: claims reserved for pods that are gone.
func draFindings(in Input) []Finding {
	rep := fileOf(in.Files, decode.KindDRA)
	if rep == nil || in.LivePods == nil {
		return nil
	}
	st, ok := rep.Decoded.DRA, rep.Decoded.DRA != nil
	if !ok || st == nil {
		return nil
	}
	var out []Finding
	for _, c := range st.Claims {
		for _, pod := range c.PodUIDs {
			if !in.LivePods[pod] {
				out = append(out, Finding{Severity: SeverityWarning, Check: "stale-pod", File: rep.File, Entry: "claim " + c.Namespace + "/" + c.ClaimName,
					Message: fmt.Sprintf("claim %s/%s is still prepared for pod %s, which is gone from the API server", c.Namespace, c.ClaimName, pod),
					Fix:     "nothing to do if the kubelet runs: it unprepares the claim once no pod uses it"})
			}
		}
	}
	return out
}
