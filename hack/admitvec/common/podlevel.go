package common

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pod-level resources (pod.spec.resources) as the managers read them: the PodLevelResources
// gate (beta, on from 1.34), PodLevelResourceManagers (alpha 1.36, beta off 1.37), and the
// releases before them, which ignore spec.resources (1.31), skip such pods (1.34, 1.35) or
// reject the gate they do not know.

// podLevelResources holds the pods' spec.resources until they are written: PodSpec.Resources
// is not in every release's k8s.io/api (1.31's), and this file builds against each.
var podLevelResources = map[*v1.Pod]v1.ResourceList{}

// withPodResources gives a pod pod-level resources, requests = limits (cpu or memory "" =
// none; both "" = an empty but present spec.resources).
func withPodResources(p *v1.Pod, cpu, memory string) *v1.Pod {
	rl := v1.ResourceList{}
	if cpu != "" {
		rl[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		rl[v1.ResourceMemory] = resource.MustParse(memory)
	}
	podLevelResources[p] = rl
	return p
}

// podJSON is the pod as written, its spec.resources included.
func podJSON(p *v1.Pod) (any, error) {
	rl, ok := podLevelResources[p]
	if !ok {
		return p, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	res := map[string]any{}
	if len(rl) > 0 {
		res["requests"], res["limits"] = rl, rl
	}
	out["spec"].(map[string]any)["resources"] = res
	return out, nil
}

// plrScenario is a pod with pod-level resources, sized for a NUMA node of perNUMA CPUs.
type plrScenario struct {
	short string
	mem   bool // wants the memory manager's Static policy
	pod   func(name string, perNUMA int) *v1.Pod
	then  bool // a Guaranteed pod of 2 CPUs is admitted after it
}

func plrScenarios() []plrScenario {
	g := func(name, cpu string) container { return container{name: name, cpu: cpu, memory: "256Mi"} }
	shared := func(name string) container { return container{name: name} }
	return []plrScenario{
		// Exclusive CPUs for a Guaranteed-equivalent container, the rest the pod's shared pool.
		{short: "excl+shared", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2"), shared("b")), "4", "1Gi")
		}},
		{short: "shared", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, shared("a"), shared("b")), "4", "1Gi")
		}},
		{short: "frac", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "1"), shared("b")), "2500m", "1Gi")
		}},
		// One container holds the whole budget, CPUs and memory.
		{short: "whole", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "a", cpu: "2", memory: "1Gi"}), "2", "1Gi")
		}},
		{short: "all-excl", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2"), g("b", "2")), "4", "1Gi")
		}},
		// The exclusive containers take the whole budget: no shared pool for b.
		{short: "no-pool", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "4"), shared("b")), "4", "1Gi")
		}},
		// CPUs of the pod that no container holds: only the pod-level entry records them.
		{short: "leftover", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2")), "4", "1Gi")
		}},
		{short: "sidecar", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "init", init: true}, container{name: "side", cpu: "2", memory: "256Mi", sidecar: true}, shared("app")), "4", "1Gi")
		}},
		// Sidecars take the budget before a shared init container runs.
		{short: "sidecar-full", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "s1", cpu: "2", memory: "256Mi", sidecar: true}, container{name: "s2", cpu: "2", memory: "256Mi", sidecar: true},
				container{name: "init", init: true}, g("app", "1")), "4", "1Gi")
		}},
		// A sidecar in the shared pool, the app's exclusive CPUs the whole budget.
		{short: "sidecar-shared", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "side", sidecar: true}, g("app", "4")), "4", "1Gi")
		}},
		{short: "init-excl", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "init", cpu: "3", memory: "256Mi", init: true}, g("a", "2"), shared("b")), "4", "1Gi")
		}},
		{short: "burst-ctr", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "a", cpu: "2", memory: "256Mi", burstable: true}, shared("b")), "4", "1Gi")
		}},
		// More than a NUMA node.
		{short: "numa+2", pod: func(n string, perNUMA int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2"), shared("b")), fmt.Sprint(perNUMA+2), "1Gi")
		}},
		{short: "odd3", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "1"), shared("b")), "3", "1Gi")
		}},
		// Pod-level CPU without memory: the pod is Burstable.
		{short: "cpu-only", pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2"), shared("b")), "4", "")
		}},
		// Pod-level memory larger than a NUMA node.
		{short: "mem20g", mem: true, pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "a", cpu: "1", memory: "2Gi"}, shared("b")), "2", "20Gi")
		}},
		// The CPU manager allocates, the memory manager cannot: the pod is refused, and the
		// next admission returns its CPUs (the pod-level set with its last container).
		{short: "mem-refused", mem: true, then: true, pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, g("a", "2")), "4", "200Gi")
		}},
		{short: "mem-excl", mem: true, pod: func(n string, _ int) *v1.Pod {
			return withPodResources(pod(n, container{name: "a", cpu: "2", memory: "3Gi"}, shared("b")), "4", "4Gi")
		}},
	}
}

var plrTopologies = []struct{ policy, scope string }{
	{"none", "container"}, {"best-effort", "pod"}, {"restricted", "pod"}, {"single-numa-node", "pod"}, {"restricted", "container"},
}

// plrMachine is a kubelet on s, static CPU policy (reserved CPU 0), the topology policy and
// scope, PodLevelResourceManagers set when gateOn (left to its default otherwise, so that
// releases that do not know it run the case too).
func plrMachine(s Shape, policy, scope, opt string, gateOn, memStatic bool) *Machine {
	m := s.Machine()
	k := KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "0", TopologyManagerPolicy: policy, TopologyManagerScope: scope}
	for _, o := range cpuOptionSets {
		if o.short == opt {
			k.CPUManagerPolicyOptions = o.opts
		}
	}
	if gateOn {
		k.FeatureGates = map[string]bool{"PodLevelResourceManagers": true}
	}
	if memStatic {
		k.MemoryManagerPolicy = "Static"
		k.ReservedMemory = []MemReservation{{NUMANode: 0, Limits: map[string]string{"memory": "100Mi"}}}
	}
	m.Kubelet = k
	return m
}

func onOff(b bool, on, off string) string {
	if b {
		return on
	}
	return off
}

// podLevelCases: every scenario under five topology policy/scope pairs with
// PodLevelResourceManagers on, and under two with it at its default; then seeded checkpoints
// (pod-level entries restored at Start, with the gate on and off) and the gates themselves.
func podLevelCases() []*genCase {
	shapes := []Shape{
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
		{Sockets: 1, NUMAPerSocket: 2, CoresPerSocket: 8, Threads: 2, Numbering: "interleave"},
	}
	cpuOpts := []string{"noopt", "fpo", "noopt", "dan"}
	var out []*genCase
	i := 0
	for _, sc := range plrScenarios() {
		for t, tm := range plrTopologies {
			for _, gateOn := range []bool{true, false} {
				if !gateOn && t != 0 && t != 2 {
					continue
				}
				i++
				s := shapes[i%len(shapes)]
				opt := cpuOpts[i%len(cpuOpts)]
				memStatic := sc.mem || i%2 == 0
				m := plrMachine(s, tm.policy, tm.scope, opt, gateOn, memStatic)
				perNUMA := len(m.CPUs) / len(m.NUMA)
				gate := onOff(gateOn, "plrm-on", "plrm-default")
				mem := onOff(memStatic, "Static", "None")
				name := fmt.Sprintf("plr__%s__%s__%s__tm-%s-%s__%s__mem-%s", s.Name(), sc.short, gate, tm.policy, tm.scope, opt, mem)
				pods := []*v1.Pod{sc.pod("p", perNUMA)}
				if sc.then {
					pods = append(pods, guaranteed("q", 2))
				}
				out = append(out, &genCase{name: name, machine: m, pods: pods,
					tags: []string{"pod-level", sc.short, gate, "tm-" + tm.policy + "-" + tm.scope, "opt-" + opt, "mem-" + mem},
					description: fmt.Sprintf("pod-level resources (%s) on %s; PodLevelResourceManagers %s; topology %s/%s; cpu static %s; memory %s",
						sc.short, s.Name(), onOff(gateOn, "on", "default"), tm.policy, tm.scope, opt, mem)})
			}
		}
	}
	out = append(out, podLevelSeededCases(shapes[0])...)
	return append(out, podLevelGateCases(shapes[0])...)
}

// podLevelSeededCases: seed pods with pod-level resources admitted by the real managers (gate
// on), then the kubelet restarted on their checkpoints with the gate on, or at its default
// (setup/seed-gates.json: the gates of the seeding kubelet), and two more pods admitted.
func podLevelSeededCases(s Shape) []*genCase {
	byName := map[string]plrScenario{}
	for _, sc := range plrScenarios() {
		byName[sc.short] = sc
	}
	var out []*genCase
	for _, seed := range []string{"excl+shared", "leftover", "shared", "whole"} {
		for _, tm := range []struct{ policy, scope string }{{"none", "container"}, {"restricted", "pod"}} {
			for _, restartOn := range []bool{true, false} {
				m := plrMachine(s, tm.policy, tm.scope, "noopt", restartOn, true)
				perNUMA := len(m.CPUs) / len(m.NUMA)
				gate := onOff(restartOn, "plrm-on", "plrm-default")
				name := fmt.Sprintf("plr__%s__seeded-%s__%s__tm-%s-%s__mem-Static", s.Name(), seed, gate, tm.policy, tm.scope)
				c := &genCase{name: name, machine: m,
					seeds:     []*v1.Pod{byName[seed].pod("seed-a", perNUMA), guaranteed("seed-b", 2)},
					seedGates: map[string]bool{"PodLevelResourceManagers": true},
					pods:      []*v1.Pod{byName["excl+shared"].pod("p", perNUMA), guaranteed("q", 2)},
					tags:      []string{"pod-level", "seed", "2pods", gate, "tm-" + tm.policy + "-" + tm.scope, "mem-Static"},
					description: fmt.Sprintf("checkpoints of a pod-level pod (%s) and a Guaranteed one written with PodLevelResourceManagers on, restarted with it %s; topology %s/%s; memory Static",
						seed, onOff(restartOn, "on", "at its default"), tm.policy, tm.scope)}
				out = append(out, c)
			}
		}
	}
	return out
}

// podLevelGateCases: the gates around pod-level resources on a pod with them and on one whose
// spec.resources is set but empty (the kubelet's QoS class, PodLevelResourcesFixKubeletQOSClass).
// One gate per case: a release names one of several unknown gates, and from 1.36 lists the
// gates whose dependencies are off (PodLevelResources=false), in map order.
func podLevelGateCases(s Shape) []*genCase {
	variants := []struct {
		short string
		gates map[string]bool
	}{
		{"fixqos-off", map[string]bool{"PodLevelResourcesFixKubeletQOSClass": false}},
		{"plrm-on", map[string]bool{"PodLevelResourceManagers": true}},
		{"plrm-off", map[string]bool{"PodLevelResourceManagers": false}},
	}
	var out []*genCase
	for _, v := range variants {
		for _, p := range []struct {
			short string
			pod   *v1.Pod
		}{
			{"excl+shared", withPodResources(pod("p", container{name: "a", cpu: "2", memory: "256Mi"}, container{name: "b"}), "4", "1Gi")},
			{"empty-resources", withPodResources(guaranteed("p", 2), "", "")},
		} {
			m := plrMachine(s, "restricted", "pod", "noopt", false, false)
			m.Kubelet.FeatureGates = v.gates
			name := fmt.Sprintf("plr__%s__gate-%s__%s", s.Name(), v.short, p.short)
			out = append(out, &genCase{name: name, machine: m, pods: []*v1.Pod{p.pod}, tags: []string{"pod-level", "gates"},
				description: fmt.Sprintf("feature gates %v, a pod with %s pod-level resources; topology restricted/pod", v.gates, p.short)})
		}
	}
	return out
}

// alignBySocketBoundaryCases: align-by-socket's preferred hints where the narrowest mask that
// could hold the pod and the masks that fit now differ in sockets: NUMA nodes of 2 or 4 per
// socket, some of their CPUs held by a running pod (setup/write.json) so that only wider masks
// fit, pods of a NUMA node and one CPU, a socket less one, a socket and two.
func alignBySocketBoundaryCases() []*genCase {
	shapes := []Shape{
		{Sockets: 2, NUMAPerSocket: 4, CoresPerSocket: 8, Threads: 1, Numbering: "interleave"},
		{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"},
	}
	// free: how many CPUs of a NUMA node (its local index in the socket, its size) stay free.
	layouts := []struct {
		short string
		free  func(local, size int) int
	}{
		{"all", func(_, size int) int { return size }},
		{"one", func(int, int) int { return 1 }},
		{"alt", func(local, size int) int { return map[bool]int{true: size, false: size / 2}[local%2 == 0] }},
	}
	var out []*genCase
	for _, s := range shapes {
		m0 := s.Machine()
		perNUMA := len(m0.CPUs) / len(m0.NUMA)
		perSocket := len(m0.CPUs) / s.Sockets
		const reserved = 0
		for _, l := range layouts {
			var avail []int
			for node := range m0.NUMA {
				var ids []int
				for _, c := range m0.CPUs {
					if c.NUMA == node && c.ID != reserved {
						ids = append(ids, c.ID)
					}
				}
				k := min(l.free(node%s.NUMAPerSocket, perNUMA), len(ids))
				avail = append(avail, ids[len(ids)-k:]...)
			}
			var online []int
			for _, c := range m0.CPUs {
				online = append(online, c.ID)
			}
			def := append([]int{reserved}, avail...)
			def = filter(online, func(c int) bool { return slices.Contains(def, c) })
			w := &CPUWrite{PolicyName: "static", DefaultCPUSet: CPUList(def)}
			if held := minus(online, def); len(held) > 0 {
				w.Entries = map[string]map[string]string{"uid-old": {"old": CPUList(held)}}
			}
			for _, n := range []int{perNUMA + 1, perSocket - 1, perSocket + 2} {
				for _, tm := range []string{"restricted", "best-effort"} {
					m := s.Machine()
					m.Kubelet = KubeletConfig{CPUManagerPolicy: "static", TopologyManagerPolicy: tm, TopologyManagerScope: "container",
						CPUManagerPolicyOptions: map[string]string{"align-by-socket": "true"}, ReservedSystemCPUs: fmt.Sprint(reserved),
						FeatureGates: map[string]bool{"CPUManagerPolicyAlphaOptions": true}}
					name := fmt.Sprintf("absb__%s__%s__tm-%s__n%d", s.Name(), l.short, tm, n)
					out = append(out, &genCase{name: name, machine: m, write: w, pods: []*v1.Pod{guaranteed("p", n)},
						tags: []string{"align-by-socket", "tm-" + tm, "avail-" + l.short},
						description: fmt.Sprintf("align-by-socket on %s (%d NUMA nodes per socket), available %s, topology policy %s, a pod of %d CPUs",
							s.Name(), s.NUMAPerSocket, CPUList(avail), tm, n)})
				}
			}
		}
	}
	return out
}
