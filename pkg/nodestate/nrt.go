package nodestate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/k8stopologyawareschedwg/podfingerprint"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The NodeResourceTopology API (topology.node.k8s.io, k8stopologyawareschedwg/
// noderesourcetopology-api) that the ecosystem's topology-aware scheduling reads: one
// cluster-scoped object per node, named after it. Its Go types are not a dependency here: the
// object is written as unstructured, in the v1alpha2 shape.
var NRTResource = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}

const (
	nrtKind = "NodeResourceTopology"
	// The attributes the NRT producers (RTE, NFD's topology-updater) set and
	// NodeResourceTopologyMatch reads.
	nrtPolicyAttribute = "topologyManagerPolicy"
	nrtScopeAttribute  = "topologyManagerScope"
)

// NodeResourceTopology is the node's NodeResourceTopology object, from its published state: a
// zone node-N (type Node) per NUMA node with its cpu, memory, hugepages and device-plugin
// devices' capacity, allocatable and available, the costs to the other zones (the NUMA
// distances), and the topology manager's policy and scope, with the pods fingerprint where the
// kubelet's PodResources API listed the pods. CPUs: allocatable is the CPU manager's (the
// reserved CPUs out), available its shared pool's allocatable CPUs (static policy). Memory and
// hugepages: the memory manager's accounting where its state has one (Static), else the
// machine's. Devices: the PodResources API's healthy devices, less those its pods hold.
func (p *PublishedNode) NodeResourceTopology() (*unstructured.Unstructured, error) {
	if p.Err != nil {
		return nil, p.Err
	}
	res, err := p.Admit(nil)
	if err != nil {
		return nil, err
	}
	in := p.input
	m := in.Machine
	allocatable, err := cpuset.Parse(res.AllocatableCPUs)
	if err != nil {
		return nil, fmt.Errorf("allocatable CPUs %q: %w", res.AllocatableCPUs, err)
	}
	static := res.AllocatableCPUs != ""
	var shared cpuset.CPUSet
	if cpu := cpuState(in.CPU); static && cpu != nil {
		if shared, err = cpuset.Parse(cpu.DefaultCPUSet); err != nil {
			return nil, fmt.Errorf("cpu_manager_state's default CPU set: %w", err)
		}
	} else if static {
		shared = allocatable // no state yet: every CPU is the shared pool's
	}
	var memory *decode.MemoryState
	if in.Memory != nil && in.Memory.Verdict == decode.Valid {
		memory = in.Memory.Decoded.Memory
	}
	devices, pods := publishedDevices(p.State)

	var zones []any
	for _, n := range m.NUMA {
		var zoneCPUs []int
		for _, c := range m.CPUs {
			if c.NUMA == n.ID {
				zoneCPUs = append(zoneCPUs, c.ID)
			}
		}
		zone := cpuset.New(zoneCPUs...)
		var resources []any
		if zone.Size() > 0 {
			alloc, avail := zone.Size(), zone.Size()
			if static {
				alloc = zone.Intersection(allocatable).Size()
				avail = zone.Intersection(allocatable).Intersection(shared).Size()
			}
			resources = append(resources, nrtResource("cpu", uint64(zone.Size()), uint64(alloc), uint64(avail)))
		}
		resources = append(resources, memoryResources(n, memory)...)
		for _, name := range slices.Sorted(maps.Keys(devices)) {
			if d, ok := devices[name][n.ID]; ok {
				resources = append(resources, nrtResource(name, d.capacity, d.capacity, d.capacity-d.held))
			}
		}
		zoneObj := map[string]any{"name": nrtZoneName(n.ID), "type": "Node", "resources": resources}
		var costs []any
		for j, d := range n.Distances {
			if j < len(m.NUMA) {
				costs = append(costs, map[string]any{"name": nrtZoneName(m.NUMA[j].ID), "value": int64(d)})
			}
		}
		if costs != nil {
			zoneObj["costs"] = costs
		}
		zones = append(zones, zoneObj)
	}
	attributes := []any{
		map[string]any{"name": nrtPolicyAttribute, "value": in.Config.TopologyPolicy()},
		map[string]any{"name": nrtScopeAttribute, "value": in.Config.TopologyScope()},
	}
	if pods != nil {
		fp := podfingerprint.NewFingerprint(len(pods))
		for _, pod := range pods {
			_ = fp.Add(pod[0], pod[1])
		}
		attributes = append(attributes,
			map[string]any{"name": podfingerprint.Attribute, "value": fp.Sign()},
			map[string]any{"name": podfingerprint.AttributeMethod, "value": podfingerprint.MethodAll})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": NRTResource.GroupVersion().String(),
		"kind":       nrtKind,
		"metadata":   map[string]any{"name": p.State.Node},
		"zones":      zones,
		"attributes": attributes,
	}}
	return obj, nil
}

func nrtZoneName(numa int) string { return "node-" + strconv.Itoa(numa) }

func nrtResource(name string, capacity, allocatable, available uint64) map[string]any {
	q := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return map[string]any{"name": name, "capacity": q(capacity), "allocatable": q(allocatable), "available": q(available)}
}

func cpuState(r *decode.Report) *decode.CPUState {
	if r == nil || r.Verdict != decode.Valid {
		return nil
	}
	return r.Decoded.CPU
}

// memoryResources are a NUMA node's memory and hugepages: the memory manager's accounting
// (total, allocatable, free) where its state holds the node, else the machine's capacity, all
// of it allocatable and available (policy None tracks no NUMA placement).
func memoryResources(n machine.NUMANode, state *decode.MemoryState) []any {
	if state != nil && state.MachineState[n.ID] != nil {
		var out []any
		tables := state.MachineState[n.ID].MemoryMap
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			t := tables[name]
			if t == nil || (name != "memory" && t.Total == 0) {
				continue
			}
			out = append(out, nrtResource(name, t.Total, t.Allocatable, t.Free))
		}
		return out
	}
	out := []any{nrtResource("memory", n.Memory, n.Memory, n.Memory)}
	for _, h := range n.HugePages {
		if h.NumPages == 0 {
			continue
		}
		size := h.PageSizeKiB * 1024 * h.NumPages
		out = append(out, nrtResource(hugepagesName(h.PageSizeKiB), size, size, size))
	}
	return out
}

// hugepagesName is the resource name of a page size, as the kubelet spells it.
func hugepagesName(kib uint64) string {
	switch {
	case kib%(1<<20) == 0:
		return "hugepages-" + strconv.FormatUint(kib>>20, 10) + "Gi"
	case kib%(1<<10) == 0:
		return "hugepages-" + strconv.FormatUint(kib>>10, 10) + "Mi"
	}
	return "hugepages-" + strconv.FormatUint(kib, 10) + "Ki"
}

type zoneDevices struct{ capacity, held uint64 }

// publishedDevices are, per resource and NUMA node, the healthy devices the kubelet's
// PodResources API listed and how many its pods hold, and the pods it listed (namespace,
// name); nil, nil where the section is absent or says the API could not be read. A device on
// several NUMA nodes counts on its first, as it is allocated from one.
func publishedDevices(s *PublishedState) (map[string]map[int]zoneDevices, [][2]string) {
	dump, ok := s.Sections[machine.PodResourcesHeader]
	if !ok {
		return nil, nil
	}
	pr, err := machine.ParsePodResources(dump)
	if err != nil || pr.Error != "" {
		return nil, nil
	}
	out := map[string]map[int]zoneDevices{}
	numaOf := map[[2]string]int{}
	for _, g := range pr.Allocatable {
		if len(g.NUMANodes) == 0 {
			continue // no NUMA node: no zone to count it in
		}
		numa := int(g.NUMANodes[0])
		if out[g.Resource] == nil {
			out[g.Resource] = map[int]zoneDevices{}
		}
		z := out[g.Resource][numa]
		z.capacity += uint64(len(g.IDs))
		out[g.Resource][numa] = z
		for _, id := range g.IDs {
			numaOf[[2]string{g.Resource, id}] = numa
		}
	}
	pods := [][2]string{}
	for _, p := range pr.Pods {
		pods = append(pods, [2]string{p.Namespace, p.Name})
		for _, c := range p.Containers {
			for _, g := range c.Devices {
				for _, id := range g.IDs {
					if numa, ok := numaOf[[2]string{g.Resource, id}]; ok {
						z := out[g.Resource][numa]
						z.held++
						out[g.Resource][numa] = z
					}
				}
			}
		}
	}
	return out, pods
}
