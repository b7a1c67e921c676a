//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	pubstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// The closed loop's nodes (judgeloop_test.go): kwok nodes with a realistic GPU machine whose
// state lives in a directory the real kubelet managers (hack/admitvec's judge mode) start from
// and write, published as the node publisher does: a ConfigMap of pubstate.PublishedState and
// a NodeResourceTopology object computed from the same state.

// The machine: 2 sockets of 16 cores x 2 threads, one NUMA node a socket (CPUs numbered as
// Linux does on such a server: socket 0's first threads, socket 1's, then the siblings),
// 256 GiB a NUMA node, 8 GPUs, 4 on each NUMA node.
const (
	jlSockets     = 2
	jlCores       = 16
	jlThreads     = 2
	jlNUMAMemory  = 256 << 30
	jlGPUsPerNUMA = 4
	jlGPU         = "nvidia.com/gpu"
	// jlReservedCPUs are reservedSystemCPUs (a core of NUMA node 0, both threads), and
	// jlReservedMemory the memory reserved on NUMA node 0: systemReserved 1Gi + the default
	// evictionHard memory.available 100Mi, which the memory manager's Static policy wants.
	jlReservedCPUs   = "0,32"
	jlReservedMemory = 1124 << 20
	jlKubelet        = "v1.37.1"
)

// jlPool is a node pool: its topology manager policy and CPU manager options.
type jlPool struct {
	Name           string
	TopologyPolicy string
	FullPCPUsOnly  bool
}

type jlCPU struct {
	ID     int `json:"id"`
	Core   int `json:"core"`
	Socket int `json:"socket"`
	NUMA   int `json:"numa"`
}

func jlCPUs() []jlCPU {
	var out []jlCPU
	for t := 0; t < jlThreads; t++ {
		for s := 0; s < jlSockets; s++ {
			for c := 0; c < jlCores; c++ {
				out = append(out, jlCPU{ID: t*jlSockets*jlCores + s*jlCores + c, Core: c, Socket: s, NUMA: s})
			}
		}
	}
	return out
}

func jlZoneCPUs(numa int) cpuset.CPUSet {
	var ids []int
	for _, c := range jlCPUs() {
		if c.NUMA == numa {
			ids = append(ids, c.ID)
		}
	}
	return cpuset.New(ids...)
}

func jlReserved() cpuset.CPUSet {
	set, err := cpuset.Parse(jlReservedCPUs)
	if err != nil {
		panic(err)
	}
	return set
}

func jlGPUID(i int) string { return fmt.Sprintf("GPU-%08d-0000-4000-8000-%012d", i, i) }

// kubeletConfig is the KubeletConfiguration fields the managers read; the same map is
// machine.json's "kubelet" (admitvec's names are the KubeletConfiguration's) and, with its
// apiVersion and kind, the config file the node publishes.
func (p jlPool) kubeletConfig() map[string]any {
	c := map[string]any{
		"cpuManagerPolicy":      "static",
		"reservedSystemCPUs":    jlReservedCPUs,
		"topologyManagerPolicy": p.TopologyPolicy,
		"topologyManagerScope":  "container",
		"memoryManagerPolicy":   "Static",
		"systemReserved":        map[string]string{"memory": "1Gi"},
		"reservedMemory":        []map[string]any{{"numaNode": 0, "limits": map[string]string{"memory": "1124Mi"}}},
	}
	if p.FullPCPUsOnly {
		c["cpuManagerPolicyOptions"] = map[string]string{"full-pcpus-only": "true"}
	}
	return c
}

// jlAllocatable is the node's allocatable as its kubelet reports it.
func jlAllocatable() corev1.ResourceList {
	reserved := jlReserved().Size()
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(len(jlCPUs())-reserved), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(jlSockets*jlNUMAMemory-jlReservedMemory, resource.BinarySI),
		corev1.ResourcePods:   resource.MustParse("110"),
		jlGPU:                 *resource.NewQuantity(jlSockets*jlGPUsPerNUMA, resource.DecimalSI),
	}
}

// jlSysfs is the sysfs section the node reader would print for the machine.
func jlSysfs() []byte {
	var b strings.Builder
	all := cpuset.New()
	for _, c := range jlCPUs() {
		all = all.Union(cpuset.New(c.ID))
	}
	fmt.Fprintf(&b, "%s\ncpu/online:%s\n", machine.SysfsHeader, all)
	for _, c := range jlCPUs() {
		fmt.Fprintf(&b, "cpu/cpu%d/topology/core_id:%d\ncpu/cpu%d/topology/physical_package_id:%d\n", c.ID, c.Core, c.ID, c.Socket)
	}
	for n := 0; n < jlSockets; n++ {
		dist := []string{}
		for m := 0; m < jlSockets; m++ {
			dist = append(dist, map[bool]string{true: "10", false: "21"}[n == m])
		}
		fmt.Fprintf(&b, "node/node%d/cpulist:%s\nnode/node%d/meminfo:Node %d MemTotal:  %d kB\nnode/node%d/distance:%s\n",
			n, jlZoneCPUs(n), n, n, jlNUMAMemory>>10, n, strings.Join(dist, " "))
	}
	fmt.Fprintf(&b, "/proc/meminfo:MemTotal:  %d kB\n%s\n", jlSockets*jlNUMAMemory>>10, machine.SysfsEnd)
	return []byte(b.String())
}

// jlState is what the judge's verdict says of the managers' state (admitvec's StateAfter).
type jlState struct {
	DefaultCPUSet     string                                    `json:"defaultCpuSet"`
	CPUAssignments    map[string]map[string]string              `json:"cpuAssignments"`
	MemoryAssignments map[string]map[string][]jlBlock           `json:"memoryAssignments"`
	DeviceAssignments map[string]map[string]map[string][]string `json:"deviceAssignments"`
}

type jlBlock struct {
	NUMAAffinity []int  `json:"numaAffinity"`
	Type         string `json:"type"`
	Size         uint64 `json:"size"`
}

// jlNode is one kwok node and its state directory.
type jlNode struct {
	name   string
	labels map[string]string
	pool   jlPool
	dir    string
	uid    string
	// pods are the pods admitted there, in admission order (node.json's).
	pods  []*corev1.Pod
	state jlState
	// replay is the node's published ConfigMap as the scheduler's filter prepares it.
	replay *pubstate.PublishedNode
}

// init writes the node's directory: machine.json, devices.json, an empty node.json and no
// checkpoint (a fresh node).
func (n *jlNode) init() error {
	m := map[string]any{"schema": "admitvec/machine/v1", "cpus": jlCPUs(), "kubelet": n.pool.kubeletConfig()}
	var numa []map[string]any
	for i := 0; i < jlSockets; i++ {
		var dist []int
		for j := 0; j < jlSockets; j++ {
			dist = append(dist, map[bool]int{true: 10, false: 21}[i == j])
		}
		numa = append(numa, map[string]any{"id": i, "memory": uint64(jlNUMAMemory), "distances": dist})
	}
	m["numa"] = numa
	type topo struct {
		Nodes []map[string]int `json:"nodes"`
	}
	type dev struct {
		ID       string `json:"ID"`
		Health   string `json:"health"`
		Topology topo   `json:"topology"`
	}
	var devs []dev
	for i := 0; i < jlSockets*jlGPUsPerNUMA; i++ {
		devs = append(devs, dev{ID: jlGPUID(i), Health: "Healthy", Topology: topo{Nodes: []map[string]int{{"ID": i / jlGPUsPerNUMA}}}})
	}
	if err := os.MkdirAll(filepath.Join(n.dir, "device-plugins"), 0o755); err != nil {
		return err
	}
	for name, v := range map[string]any{"machine.json": m, "devices.json": map[string]any{"resources": map[string]any{jlGPU: devs}}} {
		if err := jlWriteJSON(filepath.Join(n.dir, name), v); err != nil {
			return err
		}
	}
	n.state = jlState{DefaultCPUSet: cpuset.New(jlAllIDs()...).String()}
	return n.writeNodeFile()
}

func jlAllIDs() []int {
	var ids []int
	for _, c := range jlCPUs() {
		ids = append(ids, c.ID)
	}
	return ids
}

func (n *jlNode) writeNodeFile() error {
	return jlWriteJSON(filepath.Join(n.dir, "node.json"), map[string]any{"name": n.name, "labels": n.labels, "allocatable": jlAllocatable(), "pods": n.pods})
}

func jlWriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// The checkpoint files the judge writes, as they lie under the kubelet's root dir.
var jlCheckpoints = []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint"}

// podResources is the PodResources section the node reader would print: every healthy
// device with the NUMA node its plugin reported, and which container holds which.
func (n *jlNode) podResources() []byte {
	pr := machine.PodResources{Pods: []machine.PodResourcesPod{}}
	for z := 0; z < jlSockets; z++ {
		d := machine.PodResourcesDevices{Resource: jlGPU, NUMANodes: []int64{int64(z)}}
		for i := z * jlGPUsPerNUMA; i < (z+1)*jlGPUsPerNUMA; i++ {
			d.IDs = append(d.IDs, jlGPUID(i))
		}
		pr.Allocatable = append(pr.Allocatable, d)
	}
	for _, p := range n.pods {
		pp := machine.PodResourcesPod{Namespace: p.Namespace, Name: p.Name}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			pc := machine.PodResourcesContainer{Name: c.Name}
			byZone := map[int][]string{}
			for _, id := range n.state.DeviceAssignments[string(p.UID)][c.Name][jlGPU] {
				byZone[jlGPUZone(id)] = append(byZone[jlGPUZone(id)], id)
			}
			for z := 0; z < jlSockets; z++ {
				if ids := byZone[z]; len(ids) > 0 {
					pc.Devices = append(pc.Devices, machine.PodResourcesDevices{Resource: jlGPU, IDs: ids, NUMANodes: []int64{int64(z)}})
				}
			}
			pp.Containers = append(pp.Containers, pc)
		}
		pr.Pods = append(pr.Pods, pp)
	}
	b, _ := json.Marshal(pr)
	return []byte(machine.PodResourcesHeader + "\n" + string(b) + "\n" + machine.PodResourcesEnd + "\n")
}

func jlGPUZone(id string) int {
	for i := 0; i < jlSockets*jlGPUsPerNUMA; i++ {
		if jlGPUID(i) == id {
			return i / jlGPUsPerNUMA
		}
	}
	return -1
}

// publishedState is the node's state as the node publisher writes it: the kubelet's config
// file, its checkpoints, the sysfs and PodResources sections.
func (n *jlNode) publishedState(now time.Time) (*pubstate.PublishedState, error) {
	cfg := n.pool.kubeletConfig()
	cfg["apiVersion"], cfg["kind"] = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"
	cfgBytes, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	s := &pubstate.PublishedState{Format: pubstate.PublishedFormat, Node: n.name, ReadAt: now.UTC().Truncate(time.Second),
		KubeletVersion: jlKubelet, KubeletVersionFrom: "the Node object", KubeletRootDir: "/var/lib/kubelet",
		KubeletConfig: cfgBytes, KubeletConfigFrom: "/var/lib/kubelet/config.yaml", Files: map[string][]byte{},
		Sections: map[string][]byte{machine.SysfsHeader: jlSysfs(), machine.PodResourcesHeader: n.podResources()}}
	for _, f := range jlCheckpoints {
		b, err := os.ReadFile(filepath.Join(n.dir, f))
		if os.IsNotExist(err) {
			s.Missing = append(s.Missing, f)
			continue
		} else if err != nil {
			return nil, err
		}
		s.Files[f] = b
	}
	return s, nil
}

// zones are the NodeResourceTopology zones of the state: per NUMA node, capacity (the
// machine), allocatable (less what the kubelet reserves there) and available (less what the
// managers hold exclusively: CPUs outside the default set, memory blocks, devices).
func (n *jlNode) zones() ([]any, error) {
	def, err := cpuset.Parse(n.state.DefaultCPUSet)
	if err != nil {
		return nil, err
	}
	reserved := jlReserved()
	memHeld := map[int]uint64{}
	for _, ctrs := range n.state.MemoryAssignments {
		for _, blocks := range ctrs {
			for _, b := range blocks {
				if b.Type != string(corev1.ResourceMemory) || len(b.NUMAAffinity) == 0 {
					continue
				}
				for _, z := range b.NUMAAffinity {
					memHeld[z] += b.Size / uint64(len(b.NUMAAffinity))
				}
			}
		}
	}
	gpuHeld := map[int]int{}
	for _, ctrs := range n.state.DeviceAssignments {
		held := map[string]bool{} // an init container's devices reused by an app container count once
		for _, res := range ctrs {
			for _, id := range res[jlGPU] {
				if !held[id] {
					held[id] = true
					gpuHeld[jlGPUZone(id)]++
				}
			}
		}
	}
	var zones []any
	for z := 0; z < jlSockets; z++ {
		cpus := jlZoneCPUs(z)
		cpuAlloc := cpus.Difference(reserved).Size()
		cpuAvail := def.Intersection(cpus).Difference(reserved).Size()
		memAlloc := uint64(jlNUMAMemory)
		if z == 0 {
			memAlloc -= jlReservedMemory
		}
		var costs []any
		for o := 0; o < jlSockets; o++ {
			costs = append(costs, map[string]any{"name": fmt.Sprintf("node-%d", o), "value": int64(map[bool]int{true: 10, false: 21}[o == z])})
		}
		res := func(name string, capacity, alloc, avail int64) map[string]any {
			return map[string]any{"name": name, "capacity": fmt.Sprint(capacity), "allocatable": fmt.Sprint(alloc), "available": fmt.Sprint(avail)}
		}
		zones = append(zones, map[string]any{"name": fmt.Sprintf("node-%d", z), "type": "Node", "costs": costs, "resources": []any{
			res("cpu", int64(cpus.Size()), int64(cpuAlloc), int64(cpuAvail)),
			res("memory", jlNUMAMemory, int64(memAlloc), int64(memAlloc-memHeld[z])),
			res(jlGPU, jlGPUsPerNUMA, jlGPUsPerNUMA, int64(jlGPUsPerNUMA-gpuHeld[z])),
		}})
	}
	return zones, nil
}

var (
	jlNRTGVR = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}
	// jlPolicyNames are NRT's deprecated topologyPolicies values, for consumers that read them.
	jlPolicyNames = map[string]string{"single-numa-node": "SingleNUMANodeContainerLevel", "restricted": "RestrictedContainerLevel", "best-effort": "BestEffortContainerLevel", "none": "None"}
)

// jlEnsureNRTCRD creates the NodeResourceTopology CRD (topology.node.k8s.io, v1alpha2 served
// and stored; the fields left open) unless the API server serves it already.
func jlEnsureNRTCRD(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		// A *.k8s.io group: the API server wants the approval annotation (the upstream CRD's).
		"metadata": map[string]any{"name": "noderesourcetopologies.topology.node.k8s.io",
			"annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"}},
		"spec": map[string]any{
			"group": "topology.node.k8s.io", "scope": "Cluster",
			"names": map[string]any{"plural": "noderesourcetopologies", "singular": "noderesourcetopology", "kind": "NodeResourceTopology", "listKind": "NodeResourceTopologyList", "shortNames": []any{"node-res-topo"}},
			"versions": []any{map[string]any{"name": "v1alpha2", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := cp.dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for {
		if _, err := cp.dynamic.Resource(jlNRTGVR).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("noderesourcetopologies not served: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// publish writes both published objects of the node (created or replaced): the ConfigMap as
// pubstate.PublishedStateOf reads it, and the NodeResourceTopology object.
func (n *jlNode) publish(ctx context.Context) error {
	s, err := n.publishedState(time.Now())
	if err != nil {
		return err
	}
	data, err := pubstate.EncodePublished(s)
	if err != nil {
		return err
	}
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: types.UID(n.uid)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: pubstate.PublishedNamespace,
		Labels:          map[string]string{pubstate.PublishedLabel: "true"},
		Annotations:     map[string]string{pubstate.FingerprintAnnotation: s.Fingerprint(), pubstate.ReadAtAnnotation: s.ReadAt.Format(time.RFC3339)},
		OwnerReferences: owner}, BinaryData: map[string][]byte{pubstate.PublishedDataKey: data}}
	cms := cp.client.CoreV1().ConfigMaps(pubstate.PublishedNamespace)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	zones, err := n.zones()
	if err != nil {
		return err
	}
	nrt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
		"metadata":         map[string]any{"name": n.name, "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Node", "name": n.name, "uid": n.uid}}},
		"topologyPolicies": []any{jlPolicyNames[n.pool.TopologyPolicy]},
		"attributes": []any{
			map[string]any{"name": "topologyManagerPolicy", "value": n.pool.TopologyPolicy},
			map[string]any{"name": "topologyManagerScope", "value": "container"},
		},
		"zones": zones,
	}}
	nrts := cp.dynamic.Resource(jlNRTGVR)
	old, err := nrts.Get(ctx, n.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = nrts.Create(ctx, nrt, metav1.CreateOptions{})
	case err == nil:
		nrt.SetResourceVersion(old.GetResourceVersion())
		_, err = nrts.Update(ctx, nrt, metav1.UpdateOptions{})
	}
	return err
}

// advance takes the checkpoints a judgement wrote as the node's.
func (n *jlNode) advance(out string, written []string, state *jlState) error {
	for _, f := range written {
		if !slices.Contains(jlCheckpoints, f) {
			return fmt.Errorf("the judge wrote an unknown file %q", f)
		}
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(n.dir, f), b, 0o644); err != nil {
			return err
		}
	}
	if state != nil {
		n.state = *state
	}
	return n.writeNodeFile()
}

// sortedNodeNames lists nodes by name.
func jlSortedNodeNames(nodes map[string]*jlNode) []string {
	out := make([]string, 0, len(nodes))
	for name := range nodes {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
