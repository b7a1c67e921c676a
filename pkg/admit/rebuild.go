package admit

// The pods a kubelet re-admits at a start, rebuilt from the node's files alone (issue 44, offline
// and node-local): no API server says what the node runs, but the kubelet's own checkpoints hold
// what it allocated to each pod. 1.38's allocation file (V2) holds the pods themselves; older
// allocation files (V1) hold each container's resources by pod UID; the device, CPU and memory
// checkpoints hold what each container was given. A rebuilt pod asks for what it holds, so its
// fate is the kubelet's as long as its spec has not changed since (an in-place resize the node
// has not actuated yet is the one way it can) and the rebuild knows how its containers relate.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// RebuildInput is what a node's files hold of its pods, each decoded for the target kubelet
// (nil: no such file, or not valid for it).
type RebuildInput struct {
	// Allocation is allocated_pods_state (1.33+): V2's pods, or V1's resources per container.
	Allocation *decode.Report
	// CPU, Memory and Devices are the managers' checkpoints.
	CPU, Memory, Devices *decode.Report
}

// RebuiltPod is one pod as the files give it.
type RebuiltPod struct {
	Pod *v1.Pod `json:"pod"`
	// Sources are the files it was rebuilt from.
	Sources []string `json:"sources"`
	// Lacks is what the files do not say of it and the replay does without.
	Lacks []string `json:"lacks,omitempty"`
	// NotJudged says why its fate cannot be told from the files ("": it can).
	NotJudged string `json:"notJudged,omitempty"`
	// OwnerKnown: the files name its controller or say it has none (none do today: 1.38's V2
	// file keeps a pod's name, namespace and spec only).
	OwnerKnown bool `json:"ownerKnown,omitempty"`
}

// Rebuild is the node's pods rebuilt, in the order the kubelet would re-admit them as far as the
// files tell it.
type Rebuild struct {
	Pods []RebuiltPod `json:"pods"`
	// OrderKnown: every pod has its creation time: the kubelet's order. No file holds it today,
	// so the pods are in UID order, and a pod whose fate depends on the order is not judged.
	OrderKnown bool `json:"orderKnown"`
	// Notes say what the rebuild took and lacked, node-wide.
	Notes []string `json:"notes,omitempty"`
}

// NoteNoCreationTimes is Rebuild's note when the pods' order is not known.
const NoteNoCreationTimes = "the files hold no creation times: the pods are re-admitted in UID order, and a pod whose fate changes in the reverse order is not judged"

// Why a rebuilt pod is not judged.
const (
	notJudgedContainerTypes = "its containers' types (init, app or sidecar) are not in the files: %s hold %d containers (%s); 1.38's allocation file (V2) holds them"
	notJudgedPodLevel       = "it has pod-level resources: the %s holds the pod's share, not its containers'"
	notJudgedOrder          = "its fate depends on the order of re-admission (the pods' creation times), which the files do not hold"
	notJudgedSpecChanged    = "its spec asks for other resources than the node gave it (a resize not actuated yet): the files hold what was given"
)

// RebuildPods rebuilds the pods the node's kubelet re-admits at its next start from its files.
func RebuildPods(in RebuildInput) Rebuild {
	var out Rebuild
	alloc := podAllocations(in.Allocation)
	cpus, mem, dev := cpuState(in.CPU), memoryState(in.Memory), deviceState(in.Devices)
	uids := map[string]bool{}
	for _, m := range []decode.Model{{PodAllocations: alloc}, {CPU: cpus}, {Memory: mem}, {Devices: dev}} {
		m.AddPodUIDs(uids)
	}
	switch {
	case alloc == nil:
		out.Notes = append(out.Notes, "no allocation file (allocated_pods_state, 1.33+): the pods are rebuilt from the CPU, memory and device checkpoints; a pod that holds none of them is not in these files")
	case alloc.FromPodList:
		out.Notes = append(out.Notes, "the pods are the allocation file's (V2, 1.38+): names and specs, no owners or creation times")
	default:
		out.Notes = append(out.Notes, "the allocation file (V1) holds each container's resources, not the containers' types nor the pods' names and creation times")
	}
	out.OrderKnown = true
	for _, uid := range slices.Sorted(maps.Keys(uids)) {
		var p RebuiltPod
		if alloc != nil {
			if r, ok := alloc.Pods[uid]; ok && r.Pod != nil {
				p = fromAllocationV2(uid, r.Pod)
			} else if ok {
				p = fromAllocationV1(uid, r)
			}
		}
		if p.Pod == nil {
			p = fromCheckpoints(uid, cpus, mem, dev)
		} else {
			p.Sources = append(p.Sources, checkpointSources(uid, cpus, mem, dev)...)
			if why := heldDiffers(p.Pod, uid, cpus, mem, dev); why != "" && p.NotJudged == "" {
				p.NotJudged = notJudgedSpecChanged + ": " + why
			}
		}
		if p.Pod.CreationTimestamp.IsZero() {
			out.OrderKnown = false
		}
		out.Pods = append(out.Pods, p)
	}
	if out.OrderKnown {
		sort.SliceStable(out.Pods, func(i, j int) bool {
			return out.Pods[i].Pod.CreationTimestamp.Before(&out.Pods[j].Pod.CreationTimestamp)
		})
	} else if len(out.Pods) > 1 {
		out.Notes = append(out.Notes, NoteNoCreationTimes)
	}
	return out
}

// CheckpointOwners counts the pods holding entries of the CPU, memory or device checkpoint:
// those the managers free once the kubelet no longer counts them active (Input.ActivePods).
func CheckpointOwners(in Input) int {
	uids := map[string]bool{}
	models := []decode.Model{{CPU: cpuState(in.CPU)}, {Memory: memoryState(in.Memory)}}
	if in.Devices != nil {
		models = append(models, decode.Model{Devices: deviceState(in.Devices.Checkpoint)})
	}
	for _, m := range models {
		m.AddPodUIDs(uids)
	}
	return len(uids)
}

func podAllocations(r *decode.Report) *decode.PodAllocationState {
	if r == nil || r.Verdict != decode.Valid {
		return nil
	}
	return r.Decoded.PodAllocations
}

func cpuState(r *decode.Report) *decode.CPUState {
	if r == nil || r.Verdict != decode.Valid {
		return nil
	}
	return r.Decoded.CPU
}

func memoryState(r *decode.Report) *decode.MemoryState {
	if r == nil || r.Verdict != decode.Valid {
		return nil
	}
	return r.Decoded.Memory
}

func deviceState(r *decode.Report) *decode.DeviceState {
	if r == nil || r.Verdict != decode.Valid {
		return nil
	}
	return r.Decoded.Devices
}

// fromAllocationV2 is a pod of 1.38's allocation file: its name, namespace and spec, which the
// kubelet stores without the rest of its metadata (owners, creation time) or its status. A pod
// with no name is one the kubelet migrated from a V1 file, every container made a regular one.
func fromAllocationV2(uid string, pod *v1.Pod) RebuiltPod {
	p := RebuiltPod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}, Spec: *pod.Spec.DeepCopy()},
		Sources: []string{string(decode.KindAllocated) + " (V2)"}, Lacks: []string{"owner", "creation time"}}
	if pod.Name == "" {
		p.Pod.Name = uid
		if n := len(podContainersOf(pod)); n > 1 {
			p.NotJudged = fmt.Sprintf(notJudgedContainerTypes, "its allocation entry (migrated from V1)", n, containerNames(pod))
		}
	}
	return p
}

// fromAllocationV1 is a pod of a V1 allocation file: its containers' resources, every one taken
// for an app container (what a 1.38 kubelet does when it migrates the file).
func fromAllocationV1(uid string, r decode.PodResources) RebuiltPod {
	p := RebuiltPod{Pod: bareRebuiltPod(uid), Sources: []string{string(decode.KindAllocated) + " (V1)"},
		Lacks: []string{"name", "owner", "creation time"}}
	for _, name := range slices.Sorted(maps.Keys(r.Containers)) {
		res := r.Containers[name]
		p.Pod.Spec.Containers = append(p.Pod.Spec.Containers, v1.Container{Name: name, Resources: *res.DeepCopy()})
	}
	if r.PodLevel != nil {
		p.Pod.Spec.Resources = r.PodLevel.DeepCopy()
	}
	if n := len(p.Pod.Spec.Containers); n > 1 {
		p.NotJudged = fmt.Sprintf(notJudgedContainerTypes, "its allocation entries", n, containerNames(p.Pod))
	}
	return p
}

// fromCheckpoints is a pod rebuilt from what the managers gave its containers: each asks for
// what it holds. A container that holds nothing of theirs is not in these files, and asks for
// nothing the managers count.
func fromCheckpoints(uid string, cpus *decode.CPUState, mem *decode.MemoryState, dev *decode.DeviceState) RebuiltPod {
	p := RebuiltPod{Pod: bareRebuiltPod(uid), Sources: checkpointSources(uid, cpus, mem, dev),
		Lacks: []string{"name", "owner", "creation time", "the containers that hold no exclusive CPUs, memory blocks or devices"}}
	ctrs := map[string]*v1.Container{}
	ctr := func(name string) *v1.Container {
		if ctrs[name] == nil {
			ctrs[name] = &v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}}
		}
		return ctrs[name]
	}
	guaranteed := false
	if dev != nil {
		for _, e := range dev.PodDeviceEntries {
			if e.PodUID != uid {
				continue
			}
			// A device listed on two NUMA nodes is one device.
			c := ctr(e.ContainerName)
			q := resource.NewQuantity(int64(len(entryDevices(e))), resource.DecimalSI)
			c.Resources.Limits[v1.ResourceName(e.ResourceName)] = *q
			c.Resources.Requests[v1.ResourceName(e.ResourceName)] = *q
		}
	}
	if cpus != nil {
		for name, set := range cpus.Entries[uid] {
			cs, err := cpuset.Parse(set)
			if err != nil {
				continue
			}
			c := ctr(name)
			q := resource.NewQuantity(int64(cs.Size()), resource.DecimalSI)
			c.Resources.Requests[v1.ResourceCPU], c.Resources.Limits[v1.ResourceCPU] = *q, *q
			guaranteed = true
		}
		if _, ok := cpus.PodEntries[uid]; ok {
			p.NotJudged = fmt.Sprintf(notJudgedPodLevel, decode.KindCPU)
		}
	}
	if mem != nil {
		for name, blocks := range mem.Entries[uid] {
			c := ctr(name)
			sums := map[string]uint64{}
			for _, b := range blocks {
				sums[b.Type] += b.Size
			}
			for t, size := range sums {
				q := resource.NewQuantity(int64(size), resource.BinarySI)
				c.Resources.Requests[v1.ResourceName(t)], c.Resources.Limits[v1.ResourceName(t)] = *q, *q
			}
			guaranteed = true
		}
		if _, ok := mem.PodEntries[uid]; ok {
			p.NotJudged = fmt.Sprintf(notJudgedPodLevel, decode.KindMemory)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ctrs)) {
		p.Pod.Spec.Containers = append(p.Pod.Spec.Containers, *ctrs[name])
	}
	if guaranteed {
		// Only a Guaranteed pod gets exclusive CPUs or memory blocks; its other amounts (memory
		// under the memory manager's policy None, a shared container's CPUs) are in no file, so
		// the class is the status's, as the kubelet reads it first.
		p.Pod.Status.QOSClass = v1.PodQOSGuaranteed
		p.Lacks = append(p.Lacks, "the amounts the managers did not allocate (shared CPUs, memory without the memory manager's Static policy)")
	}
	if n := len(p.Pod.Spec.Containers); n > 1 && p.NotJudged == "" {
		p.NotJudged = fmt.Sprintf(notJudgedContainerTypes, "the checkpoints", n, containerNames(p.Pod))
	}
	return p
}

// entryDevices are the device IDs of an entry, each once.
func entryDevices(e decode.DeviceEntry) []string {
	seen := map[string]bool{}
	for _, id := range e.DeviceIDs {
		seen[id] = true
	}
	for _, ids := range e.DevicesPerNUMA {
		for _, id := range ids {
			seen[id] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func bareRebuiltPod(uid string) *v1.Pod {
	// The files name a pod by UID only: the UID stands for its name.
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
}

func containerNames(p *v1.Pod) string {
	var names []string
	for _, c := range podContainersOf(p) {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// checkpointSources are the managers' checkpoints that hold something of the pod.
func checkpointSources(uid string, cpus *decode.CPUState, mem *decode.MemoryState, dev *decode.DeviceState) []string {
	var out []string
	if cpus != nil && (len(cpus.Entries[uid]) > 0 || cpus.PodEntries[uid] != "") {
		out = append(out, string(decode.KindCPU))
	}
	if mem != nil && (len(mem.Entries[uid]) > 0 || len(mem.PodEntries[uid]) > 0) {
		out = append(out, string(decode.KindMemory))
	}
	if dev != nil && slices.ContainsFunc(dev.PodDeviceEntries, func(e decode.DeviceEntry) bool { return e.PodUID == uid }) {
		out = append(out, string(decode.KindDevices))
	}
	return out
}

// heldDiffers says how a pod from the allocation file asks for other devices or exclusive CPUs
// than its containers hold ("": the same).
func heldDiffers(pod *v1.Pod, uid string, cpus *decode.CPUState, mem *decode.MemoryState, dev *decode.DeviceState) string {
	specs := map[string]v1.ResourceRequirements{}
	for _, c := range podContainersOf(pod) {
		specs[c.Name] = c.Resources
	}
	if dev != nil {
		for _, e := range dev.PodDeviceEntries {
			if e.PodUID != uid {
				continue
			}
			want := specs[e.ContainerName].Limits[v1.ResourceName(e.ResourceName)]
			if held := len(entryDevices(e)); want.Value() != int64(held) {
				return fmt.Sprintf("container %q holds %d %s, asks for %s", e.ContainerName, held, e.ResourceName, want.String())
			}
		}
	}
	if cpus != nil {
		for name, set := range cpus.Entries[uid] {
			cs, err := cpuset.Parse(set)
			want := specs[name].Requests[v1.ResourceCPU]
			if err == nil && want.MilliValue() != int64(cs.Size())*1000 {
				return fmt.Sprintf("container %q holds CPUs %s, asks for %s", name, set, want.String())
			}
		}
	}
	_ = mem // memory blocks may exceed the request (a NUMA node's share): not compared
	return ""
}

// FilePlugins are the device plugins the node's device checkpoint registers, each with the
// devices it last reported: held devices on the NUMA nodes the checkpoint records, the others
// without topology (the checkpoint does not say; only a new allocation would read it), every
// one healthy once its plugin is back. Nil without a checkpoint.
func FilePlugins(r *decode.Report) (map[string][]replay.Device, []string) {
	dev := deviceState(r)
	if dev == nil {
		return nil, nil
	}
	// numa is resource -> held device -> its NUMA nodes (none: no topology, -1 in the file).
	numa := map[string]map[string][]int64{}
	for _, e := range dev.PodDeviceEntries {
		if numa[e.ResourceName] == nil {
			numa[e.ResourceName] = map[string][]int64{}
		}
		for _, id := range e.DeviceIDs {
			numa[e.ResourceName][id] = numa[e.ResourceName][id][:0:0]
		}
		for node, ids := range e.DevicesPerNUMA {
			for _, id := range ids {
				nodes := numa[e.ResourceName][id]
				if node >= 0 && !slices.Contains(nodes, node) {
					nodes = append(nodes, node)
				}
				numa[e.ResourceName][id] = nodes
			}
		}
	}
	plugins := map[string][]replay.Device{}
	var unplaced []string
	for resource, ids := range dev.RegisteredDevices {
		devices := []replay.Device{}
		free := 0
		for _, id := range slices.Sorted(slices.Values(ids)) {
			d := replay.Device{ID: id, Health: "Healthy"}
			if nodes, held := numa[resource][id]; held {
				if len(nodes) > 0 {
					d.Topology = &replay.DeviceTopology{}
					for _, n := range slices.Sorted(slices.Values(nodes)) {
						d.Topology.Nodes = append(d.Topology.Nodes, replay.DeviceNUMANode{ID: n})
					}
				}
			} else {
				free++
			}
			devices = append(devices, d)
		}
		if free > 0 {
			unplaced = append(unplaced, fmt.Sprintf("%s: %d of %d devices held by no pod, NUMA node not known", resource, free, len(ids)))
		}
		plugins[resource] = devices
	}
	sort.Strings(unplaced)
	return plugins, unplaced
}

// FateNotJudged is the fate of a rebuilt pod the files cannot answer for (PodFate.Why says why).
const FateNotJudged = "not judged"

// PredictRestartRebuilt is PredictRestart over the pods rebuilt from the node's files (in.Pods is
// ignored). The pods not judged are left out of the re-admissions: what they hold stays held, as
// the kubelet keeps every checkpoint entry while its sources are not ready. Without creation
// times the re-admissions run in UID order and again in the reverse order; a pod whose fate
// differs is not judged. The fates are in rb's order.
func PredictRestartRebuilt(in Input, rb Rebuild) (RestartResult, error) {
	var judged []*v1.Pod
	for _, p := range rb.Pods {
		if p.NotJudged == "" {
			judged = append(judged, p.Pod)
		}
	}
	in.Pods = judged
	res, err := PredictRestart(in)
	if err != nil {
		return res, err
	}
	byUID := map[string]PodFate{}
	for _, f := range res.Fates {
		byUID[f.UID] = f
	}
	if !rb.OrderKnown && len(judged) > 1 {
		reversed := slices.Clone(judged)
		slices.Reverse(reversed)
		in.Pods = reversed
		other, err := PredictRestart(in)
		if err != nil {
			return res, err
		}
		for _, g := range other.Fates {
			if f := byUID[g.UID]; f.Fate != g.Fate || f.Reason != g.Reason || f.Message != g.Message {
				byUID[g.UID] = PodFate{Pod: f.Pod, Namespace: f.Namespace, UID: f.UID, Fate: FateNotJudged, NotJudged: true, Why: notJudgedOrder}
			}
		}
	}
	res.Fates = res.Fates[:0]
	for _, p := range rb.Pods {
		uid := string(p.Pod.UID)
		f, ok := byUID[uid]
		if !ok {
			f = PodFate{Pod: p.Pod.Name, Namespace: p.Pod.Namespace, UID: uid, Fate: FateNotJudged, NotJudged: true, Why: p.NotJudged}
		}
		if f.NotJudged && f.Fate != FateNotJudged {
			f.Fate = FateNotJudged
		}
		res.Fates = append(res.Fates, f)
	}
	return res, nil
}
