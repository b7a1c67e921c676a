// Package common is the release-independent half of admitvec: the case files (machine.json,
// pods, expected.json), the node-allocatable reservation cmd/kubelet computes, and the order of
// the steps the kubelet takes. The real managers are behind Kubelet, implemented once per API
// shape in ../shapes and built in one module per release.
package common

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Machine is machine.json (schema admitvec/machine/v1).
type Machine struct {
	Schema  string          `json:"schema"`
	Shape   json.RawMessage `json:"shape,omitempty"`
	CPUs    []CPU           `json:"cpus"`
	NUMA    []NUMANode      `json:"numa"`
	Kubelet KubeletConfig   `json:"kubelet"`
}

// CPU is one online logical CPU.
type CPU struct {
	ID          int  `json:"id"`
	Core        int  `json:"core"`
	Socket      int  `json:"socket"`
	NUMA        int  `json:"numa"`
	UncoreCache *int `json:"uncoreCache,omitempty"`
}

// NUMANode is one NUMA node's memory as cadvisor reports it.
type NUMANode struct {
	ID        int         `json:"id"`
	Memory    uint64      `json:"memory"`
	HugePages []HugePages `json:"hugepages,omitempty"`
	Distances []uint64    `json:"distances,omitempty"`
}

// HugePages is one page size of a NUMA node.
type HugePages struct {
	PageSizeKiB uint64 `json:"pageSizeKiB"`
	NumPages    uint64 `json:"numPages"`
}

// KubeletConfig holds the KubeletConfiguration fields the resource managers see.
type KubeletConfig struct {
	CPUManagerPolicy             string            `json:"cpuManagerPolicy,omitempty"`
	CPUManagerPolicyOptions      map[string]string `json:"cpuManagerPolicyOptions,omitempty"`
	ReservedSystemCPUs           string            `json:"reservedSystemCPUs,omitempty"`
	KubeReserved                 map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved               map[string]string `json:"systemReserved,omitempty"`
	EvictionHard                 map[string]string `json:"evictionHard,omitempty"`
	MemoryManagerPolicy          string            `json:"memoryManagerPolicy,omitempty"`
	ReservedMemory               []MemReservation  `json:"reservedMemory,omitempty"`
	FeatureGates                 map[string]bool   `json:"featureGates,omitempty"`
	TopologyManagerPolicy        string            `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope         string            `json:"topologyManagerScope,omitempty"`
	TopologyManagerPolicyOptions map[string]string `json:"topologyManagerPolicyOptions,omitempty"`
}

// MemReservation is one reservedMemory entry.
type MemReservation struct {
	NUMANode int32             `json:"numaNode"`
	Limits   map[string]string `json:"limits"`
}

// Expected is expected.json.
type Expected struct {
	Version         string      `json:"version,omitempty"` // setup/seed-result.json only
	Starts          bool        `json:"starts"`
	Phase           string      `json:"phase"`
	StartError      string      `json:"startError"`
	AllocatableCPUs *string     `json:"allocatableCPUs,omitempty"`
	Pods            []PodResult `json:"pods,omitempty"`
	// The device set's (-devices): GetCapacity once the plugins registered, and the devices
	// the kubelet cannot tell apart (devices.go).
	DeviceCapacity    *map[string]int        `json:"deviceCapacity,omitempty"`
	DeviceAllocatable *map[string]int        `json:"deviceAllocatable,omitempty"`
	DeviceClasses     *map[string][][]string `json:"deviceClasses,omitempty"`
	DeviceChoice      string                 `json:"deviceChoice,omitempty"`
}

// PodResult is the admission of one pod.
type PodResult struct {
	Pod     string `json:"pod"`
	UID     string `json:"uid"`
	Admit   bool   `json:"admit"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Hangs: the admission did not return within the watchdog's limit (the kubelet's
	// admission is wedged, holding the CPU manager's lock); no state, no pods after it.
	Hangs      bool                       `json:"hangs,omitempty"`
	Containers map[string]ContainerResult `json:"containers,omitempty"`
	PodCPUs    string                     `json:"podCPUs,omitempty"`
	StateAfter *StateAfter                `json:"stateAfter,omitempty"`
}

// ContainerResult is what the kubelet gives one container.
type ContainerResult struct {
	CPUs         string  `json:"cpus"`
	Exclusive    bool    `json:"exclusive"`
	MemoryNUMA   []int   `json:"memoryNUMA"`
	MemoryBlocks []Block `json:"memoryBlocks,omitempty"`
	// Devices is GetDevices (-devices only): resource -> sorted IDs, {} when none.
	Devices *map[string][]string `json:"devices,omitempty"`
}

// Block is a memory manager block (state.Block's JSON).
type Block struct {
	NUMAAffinity []int  `json:"numaAffinity"`
	Type         string `json:"type"`
	Size         uint64 `json:"size"`
}

// StateAfter is the managers' state after an admission.
type StateAfter struct {
	DefaultCPUSet     string                        `json:"defaultCpuSet"`
	CPUAssignments    map[string]map[string]string  `json:"cpuAssignments"`
	MemoryAssignments map[string]map[string][]Block `json:"memoryAssignments,omitempty"`
	// PodCPUSets and PodMemory are the pod-level entries (pod-level resources, 1.36+).
	PodCPUSets map[string]string  `json:"podCpuSets,omitempty"`
	PodMemory  map[string][]Block `json:"podMemory,omitempty"`
	// DeviceAssignments is the device manager's (-devices only): uid -> container -> resource -> IDs.
	DeviceAssignments *map[string]map[string]map[string][]string `json:"deviceAssignments,omitempty"`
}

// SortBlocks orders blocks by type: the memory manager builds them from a map.
func SortBlocks(b []Block) []Block {
	sort.SliceStable(b, func(i, j int) bool { return b[i].Type < b[j].Type })
	return b
}

// Config is what the harness hands a release's managers, as container_manager_linux.go has it.
type Config struct {
	Machine        *Machine
	Reservation    v1.ResourceList
	ReservedMemory []ReservedMemory
	StateDir       string
	// Devices: make the device manager, the first hint provider (-devices).
	Devices bool
	// Only: "cpu" or "memory" makes and starts that manager alone (start mode); "" both.
	Only string
}

// ReservedMemory is a reservedMemory entry as kubeletconfig.MemoryReservation holds it.
type ReservedMemory struct {
	NUMANode int32
	Limits   v1.ResourceList
}

// Reservation is cmd/kubelet's node-allocatable reservation: reservedSystemCPUs overrides the
// kube/system reserved cpu, then system + kube reserved + evictionHard memory.available
// (default 100Mi; "N%" of the memory capacity).
func Reservation(m *Machine) (v1.ResourceList, error) {
	k := m.Kubelet
	kube, err := parseList(k.KubeReserved)
	if err != nil {
		return nil, err
	}
	sys, err := parseList(k.SystemReserved)
	if err != nil {
		return nil, err
	}
	if k.ReservedSystemCPUs != "" {
		n, err := countCPUList(k.ReservedSystemCPUs)
		if err != nil {
			return nil, err
		}
		delete(kube, v1.ResourceCPU)
		sys[v1.ResourceCPU] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	out := v1.ResourceList{}
	for _, l := range []v1.ResourceList{sys, kube} {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	evict, ok := k.EvictionHard["memory.available"]
	if k.EvictionHard == nil {
		evict, ok = "100Mi", true
	}
	if ok {
		var q resource.Quantity
		if p, isPct := strings.CutSuffix(evict, "%"); isPct {
			var pct float64
			if _, err := fmt.Sscanf(p, "%g", &pct); err != nil {
				return nil, fmt.Errorf("evictionHard memory.available %q: %w", evict, err)
			}
			var capacity uint64
			for _, n := range m.NUMA {
				capacity += n.Memory
			}
			q = *resource.NewQuantity(int64(float64(capacity)*pct/100), resource.BinarySI)
		} else if q, err = resource.ParseQuantity(evict); err != nil {
			return nil, err
		}
		sum := out[v1.ResourceMemory]
		sum.Add(q)
		out[v1.ResourceMemory] = sum
	}
	return out, nil
}

// ReservedMemoryOf parses reservedMemory.
func ReservedMemoryOf(m *Machine) ([]ReservedMemory, error) {
	var out []ReservedMemory
	for _, r := range m.Kubelet.ReservedMemory {
		l, err := parseList(r.Limits)
		if err != nil {
			return nil, err
		}
		out = append(out, ReservedMemory{NUMANode: r.NUMANode, Limits: l})
	}
	return out, nil
}

func parseList(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, v, err)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

// countCPUList counts the CPUs of a Linux CPU list ("0-3,8").
func countCPUList(s string) (int, error) {
	ids, err := parseCPUList(s)
	return len(ids), err
}

// parseCPUList reads a Linux CPU list ("0-3,8") as ids in its order.
func parseCPUList(s string) ([]int, error) {
	var ids []int
	for _, part := range strings.Split(s, ",") {
		var lo, hi int
		if _, err := fmt.Sscanf(part, "%d-%d", &lo, &hi); err == nil {
			for c := lo; c <= hi; c++ {
				ids = append(ids, c)
			}
		} else if _, err := fmt.Sscanf(part, "%d", &lo); err == nil {
			ids = append(ids, lo)
		} else {
			return nil, fmt.Errorf("cpu list %q", s)
		}
	}
	return ids, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// WriteJSON writes v as the shipped vectors are written (one-space indent).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readPod reads a v1.Pod; ok is false when the file does not exist.
func readPod(path string) (*v1.Pod, bool, error) {
	var p v1.Pod
	if err := readJSON(path, &p); err != nil {
		if os.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return &p, true, nil
}

// checkpointOwners lists the pods (uid -> container names) that own entries of a checkpoint:
// the kubelet that wrote it was running them, so they are active at the restart.
func checkpointOwners(dir string, owners map[string]map[string]bool) error {
	for _, name := range []string{"cpu_manager_state", "memory_manager_state"} {
		var cp struct {
			Entries    map[string]map[string]json.RawMessage `json:"entries"`
			PodEntries map[string]json.RawMessage            `json:"podEntries"`
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return err
		}
		if json.Unmarshal(b, &cp) != nil {
			continue // the real restore says what is wrong with it
		}
		for uid, ctrs := range cp.Entries {
			if owners[uid] == nil {
				owners[uid] = map[string]bool{}
			}
			for c := range ctrs {
				owners[uid][c] = true
			}
		}
		for uid := range cp.PodEntries {
			if owners[uid] == nil {
				owners[uid] = map[string]bool{}
			}
		}
	}
	return nil
}

// NodeFile is node.json: the node object's allocatable and the pods bound to the node, which
// the kubelet's predicate admit handler reads (lifecycle.NewPredicateAdmitHandler: the node
// from its cache, the pods as the admit attributes' OtherPods). A case without one runs the
// resource managers' handler alone.
type NodeFile struct {
	Allocatable v1.ResourceList `json:"allocatable"`
	Pods        []*v1.Pod       `json:"pods"`
	// Name and Labels are the node object's (judge mode: the predicate checks a bound pod's
	// nodeName and node selector against them); "node-0" and no label but the OS's when absent.
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Taints and Features are the node object's spec.taints and status.features (the
	// predicate's NoExecute taints and SupplementalGroupsPolicy check).
	Taints   []v1.Taint       `json:"taints,omitempty"`
	Features *v1.NodeFeatures `json:"features,omitempty"`
}

// readNodeFile reads node.json; nil when there is none.
func readNodeFile(path string) (*NodeFile, error) {
	var nf NodeFile
	if err := readJSON(path, &nf); err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return &nf, nil
}

// boundPods are the pods the kubelet runs: non-nil (maybe empty) when there is a node.json.
func (nf *NodeFile) boundPods() []*v1.Pod {
	if nf == nil {
		return nil
	}
	return append(make([]*v1.Pod, 0, len(nf.Pods)), nf.Pods...)
}

// node is the node object the kubelet's cache holds: its allocatable (capacity alike: the
// predicate reads allocatable only) and the OS label the kubelet sets.
func (nf *NodeFile) node() *v1.Node {
	if nf == nil {
		return nil
	}
	n := &v1.Node{}
	n.Name, n.Labels = "node-0", map[string]string{v1.LabelOSStable: "linux"}
	if nf.Name != "" {
		n.Name = nf.Name
	}
	for k, v := range nf.Labels {
		n.Labels[k] = v
	}
	n.Status.Capacity, n.Status.Allocatable = nf.Allocatable.DeepCopy(), nf.Allocatable.DeepCopy()
	n.Spec.Taints, n.Status.Features = nf.Taints, nf.Features
	return n
}
