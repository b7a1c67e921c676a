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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Shape is a machine's topology. NUMA nodes split a socket (NUMAPerSocket) or span several
// (SocketsPerNUMA); Numbering is "interleave" (thread t of core c is c + t*cores, as x86 Linux
// numbers them) or "sequential" (siblings adjacent).
type Shape struct {
	Sockets, NUMAPerSocket, SocketsPerNUMA, CoresPerSocket, Threads int
	Numbering                                                       string
	UncoreCores                                                     int   // cores per uncore cache; 0 = none reported
	Offline                                                         []int // CPU ids offline
	FarDistance                                                     uint64
	NoDistances                                                     bool
	HugePages2M, HugePages1G                                        uint64 // pages per NUMA node
	// CrossedIDs numbers NUMA nodes backwards (socket 0 holds the highest NUMA node): with as
	// many sockets as NUMA nodes, the NUMA-first and socket-first orders then break ties apart.
	CrossedIDs bool
}

func (s Shape) numaNodes() int {
	if s.SocketsPerNUMA > 1 {
		return s.Sockets / s.SocketsPerNUMA
	}
	return s.Sockets * s.NUMAPerSocket
}

func (s Shape) numCPUs() int { return s.Sockets * s.CoresPerSocket * s.Threads }

// Name is a short name: s2n4c4t2 (sockets, NUMA nodes, cores per NUMA node or per socket, threads).
func (s Shape) Name() string {
	n := fmt.Sprintf("s%dn%dc%dt%d", s.Sockets, s.numaNodes(), s.CoresPerSocket, s.Threads)
	if s.Numbering == "sequential" {
		n += "q"
	}
	if s.UncoreCores > 0 {
		n += fmt.Sprintf("u%d", s.UncoreCores)
	}
	if len(s.Offline) > 0 {
		n += "off" + strings.ReplaceAll(CPUList(s.Offline), ",", "_")
	}
	if s.FarDistance != 0 {
		n += fmt.Sprintf("d%d", s.FarDistance)
	}
	if s.NoDistances {
		n += "nod"
	}
	if s.HugePages2M+s.HugePages1G > 0 {
		n += "h"
	}
	if s.CrossedIDs {
		n += "x"
	}
	return n
}

// Machine builds machine.json's machine part.
func (s Shape) Machine() *Machine {
	m := &Machine{Schema: "admitvec/machine/v1"}
	offline := map[int]bool{}
	for _, c := range s.Offline {
		offline[c] = true
	}
	totalCores := s.Sockets * s.CoresPerSocket
	coresPerNUMA := s.CoresPerSocket / max(s.NUMAPerSocket, 1)
	var online []int
	for socket := 0; socket < s.Sockets; socket++ {
		for core := 0; core < s.CoresPerSocket; core++ {
			global := socket*s.CoresPerSocket + core
			numa := socket*max(s.NUMAPerSocket, 1) + core/coresPerNUMA
			if s.SocketsPerNUMA > 1 {
				numa = socket / s.SocketsPerNUMA
			}
			if s.CrossedIDs {
				numa = s.numaNodes() - 1 - numa
			}
			for t := 0; t < s.Threads; t++ {
				id := global + t*totalCores
				if s.Numbering == "sequential" {
					id = global*s.Threads + t
				}
				if offline[id] {
					continue
				}
				c := CPU{ID: id, Core: core, Socket: socket, NUMA: numa}
				if s.UncoreCores > 0 {
					u := socket*((s.CoresPerSocket+s.UncoreCores-1)/s.UncoreCores) + core/s.UncoreCores
					c.UncoreCache = &u
				}
				m.CPUs = append(m.CPUs, c)
				online = append(online, id)
			}
		}
	}
	sort.Slice(m.CPUs, func(i, j int) bool { return m.CPUs[i].ID < m.CPUs[j].ID })
	sort.Ints(online)
	n := s.numaNodes()
	for i := 0; i < n; i++ {
		node := NUMANode{ID: i, Memory: 16 << 30}
		if !s.NoDistances {
			for j := 0; j < n; j++ {
				d := uint64(10)
				if i != j {
					d = 21
					if s.FarDistance != 0 && (i/2 != j/2) {
						d = s.FarDistance // pairs of nodes close, the rest far
					}
				}
				node.Distances = append(node.Distances, d)
			}
		}
		if s.HugePages2M+s.HugePages1G > 0 {
			node.HugePages = []HugePages{{PageSizeKiB: 2048, NumPages: s.HugePages2M}, {PageSizeKiB: 1048576, NumPages: s.HugePages1G}}
		}
		m.NUMA = append(m.NUMA, node)
	}
	shape := map[string]any{"sockets": s.Sockets, "numaNodes": n, "coresPerSocket": s.CoresPerSocket, "threadsPerCore": s.Threads,
		"numbering": s.Numbering, "online": CPUList(online), "offline": CPUList(s.Offline), "uncoreCoresPerGroup": s.UncoreCores}
	m.Shape, _ = json.Marshal(shape)
	return m
}

// genCase is one generated case's inputs.
type genCase struct {
	name, description string
	tags              []string
	machine           *Machine
	pods              []*v1.Pod
	seeds             []*v1.Pod
	seedGates         map[string]bool // the seeding kubelet's gates, when not machine.json's
	seedKubelet       *KubeletConfig  // the seeding kubelet's configuration, when not machine.json's
	write             *CPUWrite
	node              *NodeFile // node.json: the predicate handler runs after the managers'
}

func (g *genCase) writeTo(dir string) error {
	d := filepath.Join(dir, g.name)
	if err := WriteJSON(filepath.Join(d, "machine.json"), g.machine); err != nil {
		return err
	}
	for i, p := range g.pods {
		name := "pod.json"
		if i > 0 {
			name = "pod2.json"
		}
		if err := writePod(filepath.Join(d, name), p); err != nil {
			return err
		}
	}
	for i, p := range g.seeds {
		if err := writePod(filepath.Join(d, "setup", fmt.Sprintf("seed%d.json", i)), p); err != nil {
			return err
		}
	}
	if g.seedGates != nil {
		if err := WriteJSON(filepath.Join(d, "setup", "seed-gates.json"), g.seedGates); err != nil {
			return err
		}
	}
	if g.seedKubelet != nil {
		if err := WriteJSON(filepath.Join(d, "setup", "seed-kubelet.json"), g.seedKubelet); err != nil {
			return err
		}
	}
	if g.write != nil {
		if err := WriteJSON(filepath.Join(d, "setup", "write.json"), map[string]any{"cpu": g.write}); err != nil {
			return err
		}
	}
	if g.node != nil {
		if err := WriteJSON(filepath.Join(d, "node.json"), g.node); err != nil {
			return err
		}
	}
	return WriteJSON(filepath.Join(d, "setup", "meta.json"), Meta{Description: g.description, Tags: SortedTags(g.tags...)})
}

func writePod(path string, p *v1.Pod) error {
	v, err := podJSON(p)
	if err != nil {
		return err
	}
	return WriteJSON(path, v)
}

// container is a container's spec: cpu and memory requests = limits unless burstable.
type container struct {
	name, cpu, memory string
	hugepages2M       string
	burstable, init   bool
	sidecar           bool
}

func pod(name string, ctrs ...container) *v1.Pod {
	p := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	for _, c := range ctrs {
		rl := v1.ResourceList{}
		if c.cpu != "" {
			rl[v1.ResourceCPU] = resource.MustParse(c.cpu)
		}
		if c.memory != "" {
			rl[v1.ResourceMemory] = resource.MustParse(c.memory)
		}
		if c.hugepages2M != "" {
			rl["hugepages-2Mi"] = resource.MustParse(c.hugepages2M)
		}
		ctr := v1.Container{Name: c.name, Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}
		if c.burstable {
			ctr.Resources.Limits = nil
		}
		if c.sidecar {
			makeSidecar(&ctr)
		}
		if c.init || c.sidecar {
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, ctr)
		}
	}
	return p
}

func guaranteed(name string, cpus int) *v1.Pod {
	return pod(name, container{name: "app", cpu: fmt.Sprint(cpus), memory: "256Mi"})
}

// Generate writes the generated cases' inputs under out: admission cases (machine shapes x
// kubelet configs x pods) and CPU-picker cases.
func Generate(out string) error {
	var all []*genCase
	all = append(all, admissionCases()...)
	all = append(all, pickerCases("pick", pickerShapes(), rotateOptions)...)
	all = append(all, pickerCases("pickx", pickerOptionShapes(), everyExtraOption)...)
	all = append(all, alignBySocketCases()...)
	all = append(all, betaGateOffCases()...)
	all = append(all, podLevelCases()...)
	all = append(all, alignBySocketBoundaryCases()...)
	all = append(all, readmitCases()...)
	all = append(all, memoryCases()...)
	all = append(all, hangCases()...)
	all = append(all, topologyGateCases()...)
	all = append(all, plrmemCases()...)
	all = append(all, tieCases()...)
	all = append(all, pickMutCases()...)
	all = append(all, predicateCases()...)
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.name] {
			return fmt.Errorf("case %s generated twice", c.name)
		}
		seen[c.name] = true
		if err := c.writeTo(out); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "generated %d cases\n", len(all))
	return nil
}

// kubeletVariant is one kubelet configuration of the generated admission cases.
type kubeletVariant struct {
	name string
	cfg  KubeletConfig
}

var cpuOptionSets = []struct {
	short string
	opts  map[string]string
}{
	{"noopt", nil},
	{"fpo", map[string]string{"full-pcpus-only": "true"}},
	{"dan", map[string]string{"distribute-cpus-across-numa": "true"}},
	{"fpo+abs", map[string]string{"full-pcpus-only": "true", "align-by-socket": "true"}},
	{"uncore", map[string]string{"prefer-align-cpus-by-uncorecache": "true"}},
	{"dac", map[string]string{"distribute-cpus-across-cores": "true"}},
	{"scr", map[string]string{"strict-cpu-reservation": "true"}},
	{"fpo+dan", map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"}},
	{"fpo+scr", map[string]string{"full-pcpus-only": "true", "strict-cpu-reservation": "true"}},
	{"abs", map[string]string{"align-by-socket": "true"}},
	{"fpo+uncore", map[string]string{"full-pcpus-only": "true", "prefer-align-cpus-by-uncorecache": "true"}},
	{"fpo+dac", map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}},
}

var topologyVariants = []struct {
	short, policy, scope string
	opts                 map[string]string
}{
	{"tm-none", "none", "container", nil},
	{"tm-best-effort-container", "best-effort", "container", nil},
	{"tm-best-effort-pod", "best-effort", "pod", nil},
	{"tm-restricted-container", "restricted", "container", nil},
	{"tm-restricted-pod", "restricted", "pod", nil},
	{"tm-single-numa-node-container", "single-numa-node", "container", nil},
	{"tm-single-numa-node-pod", "single-numa-node", "pod", nil},
	{"tm-best-effort-pod-pcn", "best-effort", "pod", map[string]string{"prefer-closest-numa-nodes": "true"}},
	{"tm-restricted-container-pcn", "restricted", "container", map[string]string{"prefer-closest-numa-nodes": "true"}},
	{"tm-single-numa-node-pod-max16", "single-numa-node", "pod", map[string]string{"max-allowable-numa-nodes": "16"}},
	{"tm-best-effort-container-max16-pcn", "best-effort", "container", map[string]string{"max-allowable-numa-nodes": "16", "prefer-closest-numa-nodes": "true"}},
}

// reservations: how CPUs are reserved; f gives reservedSystemCPUs for a machine ("" = kubeReserved).
var reservations = []struct {
	short string
	apply func(k *KubeletConfig, m *Machine)
}{
	{"r-cpu0", func(k *KubeletConfig, m *Machine) { k.ReservedSystemCPUs = "0" }},
	{"r-core0", func(k *KubeletConfig, m *Machine) { k.ReservedSystemCPUs = CPUList(siblings(m, 0)) }},
	{"r-kube1", func(k *KubeletConfig, m *Machine) { k.KubeReserved = map[string]string{"cpu": "1"} }},
	{"r-kube2", func(k *KubeletConfig, m *Machine) { k.KubeReserved = map[string]string{"cpu": "2"} }},
	{"r-sys500m", func(k *KubeletConfig, m *Machine) { k.SystemReserved = map[string]string{"cpu": "500m"} }},
	{"r-last", func(k *KubeletConfig, m *Machine) {
		k.ReservedSystemCPUs = CPUList(siblings(m, m.CPUs[len(m.CPUs)-1].ID))
	}},
	{"r-both-numa", func(k *KubeletConfig, m *Machine) {
		var ids []int
		for _, n := range m.NUMA {
			for _, c := range m.CPUs {
				if c.NUMA == n.ID {
					ids = append(ids, c.ID)
					break
				}
			}
		}
		sort.Ints(ids)
		k.ReservedSystemCPUs = CPUList(ids)
	}},
}

// siblings are the online threads of cpu's core.
func siblings(m *Machine, cpu int) []int {
	var me CPU
	for _, c := range m.CPUs {
		if c.ID == cpu {
			me = c
		}
	}
	var out []int
	for _, c := range m.CPUs {
		if c.Socket == me.Socket && c.Core == me.Core && c.NUMA == me.NUMA {
			out = append(out, c.ID)
		}
	}
	return out
}

func admissionShapes() []Shape {
	return []Shape{
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 2, CoresPerSocket: 8, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, SocketsPerNUMA: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 6, Threads: 1, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 4},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 4},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "sequential"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", Offline: []int{13}},
		{Sockets: 2, NUMAPerSocket: 4, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", FarDistance: 32},
		{Sockets: 4, NUMAPerSocket: 4, CoresPerSocket: 4, Threads: 1, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", HugePages2M: 512, HugePages1G: 2},
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", NoDistances: true},
	}
}

// scenario is the pods of an admission case, sized for the machine.
type scenario struct {
	short string
	pods  func(m *Machine, perNUMA int) []*v1.Pod
	seeds func(m *Machine, perNUMA int) []*v1.Pod
	mem   bool // wants the memory manager's Static policy
}

func scenarios() []scenario {
	one := func(p func(m *Machine, perNUMA int) *v1.Pod) func(*Machine, int) []*v1.Pod {
		return func(m *Machine, n int) []*v1.Pod { return []*v1.Pod{p(m, n)} }
	}
	return []scenario{
		{short: "fit2", pods: one(func(*Machine, int) *v1.Pod { return guaranteed("p", 2) })},
		{short: "odd3", pods: one(func(*Machine, int) *v1.Pod { return guaranteed("p", 3) })},
		{short: "numa", pods: one(func(_ *Machine, n int) *v1.Pod { return guaranteed("p", n) })},
		{short: "numa+1", pods: one(func(_ *Machine, n int) *v1.Pod { return guaranteed("p", n+1) })},
		{short: "half", pods: one(func(m *Machine, _ int) *v1.Pod { return guaranteed("p", len(m.CPUs)/2) })},
		{short: "all", pods: one(func(m *Machine, _ int) *v1.Pod { return guaranteed("p", len(m.CPUs)-2) })},
		{short: "frac", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "app", cpu: "1500m", memory: "256Mi"})
		})},
		{short: "burst", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "app", cpu: "2", memory: "256Mi", burstable: true})
		})},
		{short: "multi", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "a", cpu: "2", memory: "256Mi"}, container{name: "b", cpu: "2", memory: "256Mi"})
		})},
		{short: "init-reuse", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "init", cpu: "4", memory: "256Mi", init: true}, container{name: "app", cpu: "2", memory: "256Mi"})
		})},
		{short: "sidecar", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "side", cpu: "2", memory: "256Mi", sidecar: true}, container{name: "app", cpu: "2", memory: "256Mi"})
		})},
		{short: "sidecar-init", pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "init", cpu: "2", memory: "256Mi", init: true},
				container{name: "side", cpu: "2", memory: "256Mi", sidecar: true}, container{name: "app", cpu: "2", memory: "256Mi"})
		})},
		{short: "mem20g", mem: true, pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "app", cpu: "2", memory: "20Gi"})
		})},
		{short: "hp", mem: true, pods: one(func(*Machine, int) *v1.Pod {
			return pod("p", container{name: "app", cpu: "2", memory: "1Gi", hugepages2M: "512Mi"})
		})},
		{short: "2pods", pods: func(_ *Machine, n int) []*v1.Pod { return []*v1.Pod{guaranteed("p", n), guaranteed("q", n)} }},
		{short: "seeded", seeds: func(_ *Machine, n int) []*v1.Pod { return []*v1.Pod{guaranteed("seed-a", max(n-2, 1))} },
			pods: func(_ *Machine, n int) []*v1.Pod { return []*v1.Pod{guaranteed("p", n), guaranteed("q", 2)} }},
		{short: "seeded-mem", mem: true, seeds: func(_ *Machine, n int) []*v1.Pod {
			return []*v1.Pod{pod("seed-a", container{name: "app", cpu: "2", memory: "12Gi"})}
		}, pods: func(*Machine, int) []*v1.Pod {
			return []*v1.Pod{pod("p", container{name: "app", cpu: "2", memory: "8Gi"}), pod("q", container{name: "app", cpu: "2", memory: "4Gi"})}
		}},
	}
}

// admissionCases: every shape x every scenario, with two kubelet configurations each, taken
// in turn from the CPU option sets, topology variants, reservations and memory policies so
// that every value meets many others.
func admissionCases() []*genCase {
	var out []*genCase
	i := 0
	for _, s := range admissionShapes() {
		for _, sc := range scenarios() {
			// A pod asking for hugepages the machine does not have makes the v1.37.1 memory
			// manager's Static hints dereference a nil table (a kubelet panic, not a vector);
			// on 16 NUMA nodes its hints (2^16 masks) merged with the CPU manager's do not end.
			bigNUMA := s.numaNodes() > 8
			for variant := 0; variant < 2; variant++ {
				i++
				if (sc.short == "hp" && s.HugePages2M == 0) || (sc.mem && bigNUMA) {
					continue
				}
				m := s.Machine()
				perNUMA := len(m.CPUs) / len(m.NUMA)
				opts := cpuOptionSets[(i*5+variant)%len(cpuOptionSets)]
				tm := topologyVariants[(i*3+variant*5)%len(topologyVariants)]
				res := reservations[(i+variant*3)%len(reservations)]
				k := KubeletConfig{CPUManagerPolicy: "static", CPUManagerPolicyOptions: opts.opts,
					TopologyManagerPolicy: tm.policy, TopologyManagerScope: tm.scope, TopologyManagerPolicyOptions: tm.opts}
				if (i+variant)%13 == 0 {
					k.CPUManagerPolicy = "none"
				}
				res.apply(&k, m)
				if len(opts.opts) > 0 || len(tm.opts) > 0 {
					k.FeatureGates = map[string]bool{"CPUManagerPolicyAlphaOptions": true}
				}
				if len(tm.opts) > 0 {
					k.FeatureGates["TopologyManagerPolicyAlphaOptions"] = true
				}
				memPolicy := "None"
				if sc.mem || ((i+variant)%3 == 0 && !bigNUMA) {
					memPolicy = "Static"
					k.MemoryManagerPolicy = "Static"
					k.ReservedMemory = []MemReservation{{NUMANode: 0, Limits: map[string]string{"memory": "100Mi"}}}
				}
				m.Kubelet = k
				name := fmt.Sprintf("%s__%s__%s-%s__%s__%s__mem-%s", s.Name(), sc.short, k.CPUManagerPolicy, opts.short, res.short, tm.short, memPolicy)
				c := &genCase{name: name, machine: m, pods: sc.pods(m, perNUMA),
					tags:        []string{sc.short, "opt-" + opts.short, tm.short, "mem-" + memPolicy, res.short, "cpu-" + k.CPUManagerPolicy},
					description: fmt.Sprintf("%s on %s (%d CPUs, %d NUMA nodes); cpu %s %s; %s; %s; memory %s", sc.short, s.Name(), len(m.CPUs), len(m.NUMA), k.CPUManagerPolicy, opts.short, res.short, tm.short, memPolicy)}
				if sc.seeds != nil {
					c.seeds = sc.seeds(m, perNUMA)
					c.tags = append(c.tags, "seed")
				}
				if len(c.pods) > 1 {
					c.tags = append(c.tags, "2pods")
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func pickerShapes() []Shape {
	return []Shape{
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 6, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 3, Threads: 2, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 2, CoresPerSocket: 6, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, SocketsPerNUMA: 2, CoresPerSocket: 3, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 6, Threads: 2, Numbering: "sequential"},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 4, SocketsPerNUMA: 2, CoresPerSocket: 2, Threads: 2, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 4},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 2},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 1, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 4, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 3, Threads: 2, Numbering: "interleave", CrossedIDs: true},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "sequential", CrossedIDs: true},
	}
}

// rotateOptions: every set and count without an option (the picker itself), and every other
// one again with an option in turn (dac where the machine reports no uncore caches).
func rotateOptions(i int, s Shape) []int {
	opts := []int{0}
	if i%2 == 0 {
		o := 1 + (i/2)%5
		if pickerOptions[o].short == "uncore" && s.UncoreCores == 0 {
			o = 5
		}
		opts = append(opts, o)
	}
	return opts
}

// everyExtraOption: the option sets the rotation leaves thin, each on every set and count
// (uncore only where the machine reports uncore caches).
func everyExtraOption(_ int, s Shape) []int {
	var opts []int
	for o, opt := range pickerOptions {
		if o > 5 && (s.UncoreCores > 0 || opt.short != "uncore") {
			opts = append(opts, o)
		}
	}
	if s.UncoreCores > 0 {
		opts = append(opts, 4)
	}
	return opts
}

// pickerOptionShapes: SMT machines with several NUMA nodes (align-by-socket with
// distribute-cpus-across-numa, whose share per node is cut to its free CPUs) and uncore caches.
func pickerOptionShapes() []Shape {
	return []Shape{
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 4},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 2},
	}
}

var pickerOptions = []struct {
	short string
	opts  map[string]string
}{
	{"noopt", nil},
	{"fpo", map[string]string{"full-pcpus-only": "true"}},
	{"dan", map[string]string{"distribute-cpus-across-numa": "true"}},
	{"abs", map[string]string{"align-by-socket": "true"}},
	{"uncore", map[string]string{"prefer-align-cpus-by-uncorecache": "true"}},
	{"dac", map[string]string{"distribute-cpus-across-cores": "true"}},
	{"dan+abs", map[string]string{"distribute-cpus-across-numa": "true", "align-by-socket": "true"}},
	{"fpo+dan+abs", map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-numa": "true", "align-by-socket": "true"}},
}

// pickerCases drive the static policy's CPU picker (takeByTopology and its option variants):
// a checkpoint whose default set is the available CPUs plus the reserved CPU (the highest), the
// rest held by a running pod, then one Guaranteed container of n CPUs under topology policy none.
func pickerCases(prefix string, shapes []Shape, options func(i int, s Shape) []int) []*genCase {
	var out []*genCase
	i := 0
	for _, s := range shapes {
		m0 := s.Machine()
		var online []int
		for _, c := range m0.CPUs {
			online = append(online, c.ID)
		}
		// The reserved CPU must be in the checkpoint's default set but is not available to
		// pods: it is the first online CPU outside the available set (the highest for "all").
		sets := map[string][]int{"all": online[:len(online)-1]}
		sets["minus6"] = without(online, 6) // the 0-5,7-11 on 12 CPUs
		sets["minus0"] = without(online, 0) // a core's first thread taken
		sets["evens"] = filter(online, func(c int) bool { return c%2 == 0 || c >= len(online)/2 })
		sets["numa0gone"] = filter(online, func(c int) bool { return cpuOf(m0, c).NUMA != 0 || c%3 == 0 })
		sets["socket0half"] = filter(online, func(c int) bool { return cpuOf(m0, c).Socket != 0 || cpuOf(m0, c).Core%2 == 1 })
		sets["lcg"] = filter(online, func(c int) bool { return (c*7+3)%5 < 3 })
		if s.CrossedIDs {
			// Each socket's last core taken: every socket and NUMA node holds as many free
			// CPUs, so the order between them is the ids' (NUMA ids or socket ids).
			sets["tie"] = filter(online, func(c int) bool { return cpuOf(m0, c).Core != s.CoresPerSocket-1 })
		}
		for _, setName := range sortedKeys(sets) {
			avail := sets[setName]
			ns := []int{1, 2, 3, 4, 6, len(avail) / 2, len(avail)}
			seenN := map[int]bool{}
			for _, n := range ns {
				if n < 1 || n > len(avail) || seenN[n] {
					continue
				}
				seenN[n] = true
				i++
				// Every set and count without an option (the picker itself), and every other
				// one again with an option in turn.
				for _, o := range options(i, s) {
					opt := pickerOptions[o]
					out = append(out, pickerCase(prefix, s, setName, avail, n, opt.short, opt.opts))
				}
			}
		}
	}
	return out
}

// pickerCase is one CPU-picker case: a checkpoint whose default set is avail plus the reserved
// CPU (the first online CPU outside avail), the rest held by a running pod, then one
// Guaranteed container of n CPUs under topology policy none.
func pickerCase(prefix string, s Shape, setName string, avail []int, n int, optShort string, opts map[string]string) *genCase {
	m := s.Machine()
	var online []int
	for _, c := range m.CPUs {
		online = append(online, c.ID)
	}
	outside := minus(online, avail)
	reserved := outside[0]
	k := KubeletConfig{CPUManagerPolicy: "static", CPUManagerPolicyOptions: opts, ReservedSystemCPUs: fmt.Sprint(reserved)}
	if opts != nil {
		k.FeatureGates = map[string]bool{"CPUManagerPolicyAlphaOptions": true}
	}
	m.Kubelet = k
	def := append(append([]int(nil), avail...), reserved)
	sort.Ints(def)
	w := &CPUWrite{PolicyName: "static", DefaultCPUSet: CPUList(def)}
	if held := minus(outside, []int{reserved}); len(held) > 0 {
		w.Entries = map[string]map[string]string{"uid-old": {"old": CPUList(held)}}
	}
	name := fmt.Sprintf("%s__%s__%s__n%d__%s", prefix, s.Name(), setName, n, optShort)
	return &genCase{name: name, machine: m, write: w, pods: []*v1.Pod{guaranteed("p", n)},
		tags: []string{"picker", "opt-" + optShort, "avail-" + setName},
		description: fmt.Sprintf("CPU picker: %d of available %s on %s, option %s, reserved %d, topology manager none",
			n, CPUList(avail), s.Name(), optShort, reserved)}
}

func cpuOf(m *Machine, id int) CPU {
	for _, c := range m.CPUs {
		if c.ID == id {
			return c
		}
	}
	return CPU{ID: -1}
}

func filter(ids []int, keep func(int) bool) []int {
	var out []int
	for _, c := range ids {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func without(ids []int, drop int) []int { return filter(ids, func(c int) bool { return c != drop }) }

func minus(a, b []int) []int {
	in := map[int]bool{}
	for _, c := range b {
		in[c] = true
	}
	return filter(a, func(c int) bool { return !in[c] })
}

// alignBySocketCases: align-by-socket where the kubelet refuses it (more sockets than NUMA
// nodes; the single-numa-node topology policy) and where it takes it (a socket holding one or
// more NUMA nodes, ids crossed or not), each with a pod of 2 CPUs and one of half the machine.
func alignBySocketCases() []*genCase {
	shapes := []Shape{
		{Sockets: 2, SocketsPerNUMA: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 4, SocketsPerNUMA: 2, CoresPerSocket: 2, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", CrossedIDs: true},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
	}
	tms := []string{"none", "restricted", "single-numa-node"}
	var out []*genCase
	for _, s := range shapes {
		for _, tm := range tms {
			for _, half := range []bool{false, true} {
				m := s.Machine()
				n := 2
				if half {
					n = len(m.CPUs) / 2
				}
				k := KubeletConfig{CPUManagerPolicy: "static", TopologyManagerPolicy: tm, TopologyManagerScope: "container",
					CPUManagerPolicyOptions: map[string]string{"align-by-socket": "true"}, ReservedSystemCPUs: "0",
					FeatureGates: map[string]bool{"CPUManagerPolicyAlphaOptions": true}}
				m.Kubelet = k
				name := fmt.Sprintf("abs__%s__tm-%s__n%d", s.Name(), tm, n)
				out = append(out, &genCase{name: name, machine: m, pods: []*v1.Pod{guaranteed("p", n)},
					tags: []string{"align-by-socket", "tm-" + tm},
					description: fmt.Sprintf("align-by-socket on %s (%d sockets, %d NUMA nodes), topology policy %s, a pod of %d CPUs",
						s.Name(), s.Sockets, s.numaNodes(), tm, n)})
			}
		}
	}
	return out
}

// betaGateOffCases: CPUManagerPolicyBetaOptions off, with a beta option (refused), a stable one
// and an alpha one with its gate on (both taken): the gates are checked per option level.
func betaGateOffCases() []*genCase {
	var out []*genCase
	for _, opt := range []string{"distribute-cpus-across-numa", "full-pcpus-only", "align-by-socket"} {
		m := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}.Machine()
		m.Kubelet = KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "0",
			CPUManagerPolicyOptions: map[string]string{opt: "true"},
			FeatureGates:            map[string]bool{"CPUManagerPolicyBetaOptions": false, "CPUManagerPolicyAlphaOptions": true}}
		out = append(out, &genCase{name: "gate__beta-off__" + opt, machine: m, pods: []*v1.Pod{guaranteed("p", 2)},
			tags: []string{"gates"}, description: "CPUManagerPolicyBetaOptions off, CPU option " + opt})
	}
	return out
}
