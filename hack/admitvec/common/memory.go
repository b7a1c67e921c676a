package common

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The memory manager's Static policy (issue 21's memory survivors): the pod-scope request of
// init containers, sidecars and apps; init memory reused by later containers and what a second
// pod then gets; requests at a NUMA node's free memory and one byte (one page) over it;
// multi-NUMA groups; seeded checkpoints holding such a group; pod-level memory.

// Every NUMA node has 16Gi; node 0 keeps 100Mi reserved (the evictionHard default).
const (
	memNode  = int64(16 << 30)
	memNode0 = memNode - 100<<20
)

func bytesQ(n int64) string { return fmt.Sprint(n) }

// withResource sets requests = limits of one resource on the named container.
func withResource(p *v1.Pod, ctr, name, qty string) *v1.Pod {
	set := func(cs []v1.Container) {
		for i := range cs {
			if cs[i].Name == ctr {
				cs[i].Resources.Requests[v1.ResourceName(name)] = resource.MustParse(qty)
				cs[i].Resources.Limits[v1.ResourceName(name)] = resource.MustParse(qty)
			}
		}
	}
	set(p.Spec.InitContainers)
	set(p.Spec.Containers)
	return p
}

// memScenario is pod.json (and pod2.json) on a machine of nodes NUMA nodes.
type memScenario struct {
	short string
	huge  bool // needs the hugepages shape
	// hpReserved: 1Gi of node 0's 1Gi hugepages reserved (systemReserved and reservedMemory).
	hpReserved bool
	pods       func(nodes int) []*v1.Pod
	seeds      func(nodes int) []*v1.Pod
}

func memScenarios() []memScenario {
	c := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem} }
	ini := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem, init: true} }
	side := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem, sidecar: true} }
	one := func(p *v1.Pod) func(int) []*v1.Pod { return func(int) []*v1.Pod { return []*v1.Pod{p} } }
	exact := func(name string, n int64) *v1.Pod { return pod(name, c("app", bytesQ(n))) }
	return []memScenario{
		// Pod-scope request: max(init, apps + sidecars), sized so that the two differ in NUMA nodes;
		// container scope: the apps reuse the init's memory.
		{short: "init-more", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "20Gi"), c("app", "4Gi")), pod("q", c("app", "11Gi"))}
		}},
		{short: "init-less", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "2Gi"), c("a", "9Gi"), c("b", "9Gi")), pod("q", c("app", "12Gi"))}
		}},
		{short: "two-init", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("i1", "5Gi"), ini("i2", "18Gi"), c("app", "3Gi")), pod("q", c("app", "10Gi"))}
		}},
		{short: "init-eq-app", pods: one(pod("p", ini("init", "6Gi"), c("a", "3Gi"), c("b", "3Gi")))},
		// A sidecar before the init: the init runs beside it (byRestartable + q).
		{short: "side-then-init", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", side("side", "4Gi"), ini("init", "13Gi"), c("app", "2Gi")), pod("q", c("app", "9Gi"))}
		}},
		{short: "init-then-side", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "13Gi"), side("side", "4Gi"), c("app", "2Gi")), pod("q", c("app", "9Gi"))}
		}},
		{short: "side-big", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", side("side", "6Gi"), ini("init", "1Gi"), c("app", "11Gi")), pod("q", c("app", "5Gi"))}
		}},
		// Init memory reused by two apps in turn, then a pod needing what is left.
		{short: "reuse-2apps", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "12Gi"), c("a", "5Gi"), c("b", "5Gi")), exact("q", memNode0-12<<30)}
		}},
		// Init memory reused in part (the app asks more) and exactly; pod2 asks what node 0 keeps.
		{short: "reuse-partial", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "6Gi"), c("app", "8Gi")), exact("q", memNode0-8<<30)}
		}},
		{short: "reuse-exact", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", ini("init", "6Gi"), c("app", "6Gi")), exact("q", memNode0-6<<30)}
		}},
		// Boundaries: node 1's free memory exactly and one byte more, node 0's likewise.
		{short: "node1-exact", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode), exact("q", memNode0)} }},
		{short: "node1-plus1", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode+1), exact("q", memNode0)} }},
		{short: "node0-exact", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode0), exact("q", memNode)} }},
		{short: "node0-plus1", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode0+1), exact("q", memNode+1)} }},
		// Two NUMA nodes' worth exactly and one byte more.
		{short: "two-exact", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode0+memNode), exact("q", 1<<30)} }},
		{short: "two-plus1", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", memNode0+memNode+1), exact("q", 1<<30)} }},
		// A multi-NUMA group, then a single-node pod (not on the group's nodes) and another group.
		{short: "group-then-small", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", 20<<30), exact("q", 1<<30)} }},
		{short: "group-then-group", pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", 20<<30), exact("q", 18<<30)} }},
		// The second container cannot have memory: the pod is refused, the first's memory
		// returned at the next admission (removeStaleState).
		{short: "refused-release", pods: func(int) []*v1.Pod {
			return []*v1.Pod{pod("p", c("a", "10Gi"), c("b", "60Gi")), exact("q", memNode)}
		}},
		// Hugepages reported by every NUMA node: 2 pages of 1Gi, 512 of 2Mi per node.
		{short: "hp1g-exact", huge: true, pods: func(int) []*v1.Pod {
			return []*v1.Pod{withResource(pod("p", c("app", "1Gi")), "app", "hugepages-1Gi", "2Gi"), withResource(pod("q", c("app", "1Gi")), "app", "hugepages-1Gi", "2Gi")}
		}},
		{short: "hp1g-plus1", huge: true, pods: func(int) []*v1.Pod {
			return []*v1.Pod{withResource(pod("p", c("app", "1Gi")), "app", "hugepages-1Gi", "3Gi"), withResource(pod("q", c("app", "1Gi")), "app", "hugepages-1Gi", "1Gi")}
		}},
		{short: "hp2m-plus1", huge: true, pods: func(int) []*v1.Pod {
			return []*v1.Pod{withResource(pod("p", c("app", "1Gi")), "app", "hugepages-2Mi", "1026Mi"), withResource(pod("q", c("app", "1Gi")), "app", "hugepages-2Mi", "1Gi")}
		}},
		{short: "hp-init-reuse", huge: true, pods: func(int) []*v1.Pod {
			p := withResource(pod("p", ini("init", "2Gi"), c("app", "1Gi")), "init", "hugepages-2Mi", "800Mi")
			return []*v1.Pod{withResource(p, "app", "hugepages-2Mi", "400Mi"), withResource(pod("q", c("app", "1Gi")), "app", "hugepages-2Mi", "1Gi")}
		}},
		// Reserved hugepages: the checkpoint's free pages are the total less the reservation.
		{short: "hp-reserved-seeded", huge: true, hpReserved: true, seeds: func(int) []*v1.Pod {
			return []*v1.Pod{withResource(pod("seed-a", c("app", "1Gi")), "app", "hugepages-1Gi", "1Gi")}
		}, pods: func(int) []*v1.Pod {
			return []*v1.Pod{withResource(pod("p", c("app", "1Gi")), "app", "hugepages-1Gi", "1Gi"), withResource(pod("q", c("app", "1Gi")), "app", "hugepages-1Gi", "1Gi")}
		}},
		// Seeded: a multi-NUMA group (and init memory reused) already in the checkpoint.
		{short: "seeded-group", seeds: func(int) []*v1.Pod { return []*v1.Pod{exact("seed-a", 20<<30)} },
			pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", 2<<30), exact("q", 10<<30)} }},
		{short: "seeded-reuse", seeds: func(int) []*v1.Pod {
			return []*v1.Pod{pod("seed-a", ini("init", "12Gi"), c("app", "4Gi")), exact("seed-b", 6<<30)}
		}, pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", 8<<30), exact("q", 10<<30)} }},
		{short: "seeded-full", seeds: func(int) []*v1.Pod { return []*v1.Pod{exact("seed-a", memNode0), exact("seed-b", 8<<30)} },
			pods: func(int) []*v1.Pod { return []*v1.Pod{exact("p", 8<<30), exact("q", 1)} }},
	}
}

var memTopologies = []struct{ policy, scope string }{
	{"single-numa-node", "container"}, {"single-numa-node", "pod"},
	{"restricted", "container"}, {"restricted", "pod"},
	{"best-effort", "container"}, {"best-effort", "pod"},
}

// memMachine: memory manager Static (100Mi reserved on node 0), CPU policy static (reserved
// CPU 0) or none in turn.
func memMachine(s Shape, policy, scope string, cpuStatic bool) *Machine {
	m := s.Machine()
	k := KubeletConfig{CPUManagerPolicy: "none", TopologyManagerPolicy: policy, TopologyManagerScope: scope,
		MemoryManagerPolicy: "Static", ReservedMemory: []MemReservation{{NUMANode: 0, Limits: map[string]string{"memory": "100Mi"}}}}
	if cpuStatic {
		k.CPUManagerPolicy, k.ReservedSystemCPUs = "static", "0"
	}
	m.Kubelet = k
	return m
}

// memoryCases: every scenario under the six topology policy/scope pairs (three for a single
// container), the 2- and 4-NUMA
// shapes taken in turn (the hugepages scenarios on the hugepages shape), CPU policy static on
// every third; then pod-level memory with PodLevelResourceManagers on.
func memoryCases() []*genCase {
	shapes := []Shape{
		{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
	}
	huge := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", HugePages2M: 512, HugePages1G: 2}
	var out []*genCase
	i := 0
	for _, sc := range memScenarios() {
		// One container: the scopes agree, so one scope per policy, taken in turn.
		first := sc.pods(2)[0]
		single := len(first.Spec.InitContainers)+len(first.Spec.Containers) == 1 && sc.seeds == nil
		for t, tm := range memTopologies {
			if single && t%2 != (i/6)%2 {
				continue
			}
			i++
			s := shapes[i%len(shapes)]
			if sc.huge {
				s = huge
			}
			cpuStatic := i%3 == 0
			m := memMachine(s, tm.policy, tm.scope, cpuStatic)
			if sc.hpReserved {
				m.Kubelet.SystemReserved = map[string]string{"hugepages-1Gi": "1Gi"}
				m.Kubelet.ReservedMemory[0].Limits["hugepages-1Gi"] = "1Gi"
			}
			cpu := onOff(cpuStatic, "static", "none")
			name := fmt.Sprintf("mem__%s__%s__tm-%s-%s__cpu-%s", s.Name(), sc.short, tm.policy, tm.scope, cpu)
			c := &genCase{name: name, machine: m, pods: sc.pods(len(m.NUMA)),
				tags: []string{"memory", sc.short, "tm-" + tm.policy + "-" + tm.scope, "cpu-" + cpu},
				description: fmt.Sprintf("memory Static: %s on %s (%d NUMA nodes); topology %s/%s; cpu %s",
					sc.short, s.Name(), len(m.NUMA), tm.policy, tm.scope, cpu)}
			if sc.seeds != nil {
				c.seeds = sc.seeds(len(m.NUMA))
				c.tags = append(c.tags, "seed")
			}
			if len(c.pods) > 1 {
				c.tags = append(c.tags, "2pods")
			}
			out = append(out, c)
		}
	}
	return append(out, memoryPodLevelCases(shapes[0])...)
}

// memoryPodLevelCases: pod-level memory split between exclusive containers and the pod's
// shared pool (validatePodScopeResources, AllocatePod), PodLevelResourceManagers on.
func memoryPodLevelCases(s Shape) []*genCase {
	c := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem} }
	shared := func(name string) container { return container{name: name} }
	pods := []struct {
		short string
		pod   func() *v1.Pod
	}{
		{"excl+shared", func() *v1.Pod { return withPodResources(pod("p", c("a", "3Gi"), shared("b")), "4", "4Gi") }},
		{"excl-eq-budget", func() *v1.Pod { return withPodResources(pod("p", c("a", "4Gi"), shared("b")), "4", "4Gi") }},
		{"excl-only", func() *v1.Pod { return withPodResources(pod("p", c("a", "4Gi")), "4", "4Gi") }},
		{"shared-init", func() *v1.Pod {
			return withPodResources(pod("p", container{name: "side", cpu: "1", memory: "4Gi", sidecar: true}, container{name: "init", init: true}, c("a", "2Gi")), "4", "6Gi")
		}},
		{"init-excl", func() *v1.Pod {
			return withPodResources(pod("p", container{name: "init", cpu: "1", memory: "5Gi", init: true}, c("a", "2Gi"), shared("b")), "4", "6Gi")
		}},
		{"over-node", func() *v1.Pod { return withPodResources(pod("p", c("a", "10Gi"), shared("b")), "4", "20Gi") }},
	}
	var out []*genCase
	for _, p := range pods {
		for _, tm := range []struct{ policy, scope string }{{"restricted", "pod"}, {"single-numa-node", "pod"}} {
			m := memMachine(s, tm.policy, tm.scope, true)
			m.Kubelet.FeatureGates = map[string]bool{"PodLevelResourceManagers": true}
			name := fmt.Sprintf("mem__%s__plr-%s__tm-%s-%s", s.Name(), p.short, tm.policy, tm.scope)
			out = append(out, &genCase{name: name, machine: m, pods: []*v1.Pod{p.pod(), guaranteed("q", 2)},
				tags: []string{"memory", "pod-level", p.short, "tm-" + tm.policy + "-" + tm.scope, "2pods"},
				description: fmt.Sprintf("memory Static, pod-level memory (%s) on %s, PodLevelResourceManagers on; topology %s/%s; cpu static",
					p.short, s.Name(), tm.policy, tm.scope)})
		}
	}
	// A zero pod-level request (hugepages-2Mi: 0) is no request at all: no block, no hint.
	huge := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", HugePages2M: 512, HugePages1G: 2}
	for _, tm := range []string{"restricted", "single-numa-node"} {
		m := memMachine(huge, tm, "pod", true)
		m.Kubelet.FeatureGates = map[string]bool{"PodLevelResourceManagers": true}
		p := withPodResources(pod("p", c("a", "3Gi"), shared("b")), "4", "4Gi")
		podLevelResources[p]["hugepages-2Mi"] = resource.MustParse("0")
		name := fmt.Sprintf("mem__%s__plr-hp-zero__tm-%s-pod", huge.Name(), tm)
		out = append(out, &genCase{name: name, machine: m, pods: []*v1.Pod{p, guaranteed("q", 2)},
			tags:        []string{"memory", "pod-level", "hp-zero", "tm-" + tm + "-pod", "2pods"},
			description: fmt.Sprintf("memory Static, pod-level memory 4Gi and hugepages-2Mi 0 on %s, PodLevelResourceManagers on; topology %s/pod; cpu static", huge.Name(), tm)})
	}
	return out
}
