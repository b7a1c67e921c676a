package common

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Re-admission after a kubelet restart: the kubelet admits every running pod again
// (HandlePodAdditions) while the checkpoints already hold its CPUs and memory. The managers
// then regenerate the pod's hints from its own allocation (the static CPU policy's
// GetTopologyHints/GetPodTopologyHints, the memory manager's regenerateHints), or give none
// when the allocation no longer matches the spec, and their Allocate keeps what the state holds.
// pod.json is a seed pod again, same name and UID, its spec kept or changed.

// readmitScenario is the seed pods (the first one re-admitted) and the re-admitted pod.
type readmitScenario struct {
	short string
	mem   bool // wants the memory manager's Static policy
	seeds func() []*v1.Pod
	again func() *v1.Pod // seed-a as the restarted kubelet sees it
	then  bool           // a Guaranteed pod of 2 CPUs is admitted after it
}

// seedA is the re-admitted seed: one container of cpu and memory (requests = limits).
func seedA(cpu, memory string) *v1.Pod {
	return pod("seed-a", container{name: "app", cpu: cpu, memory: memory})
}

func seedB() *v1.Pod { return pod("seed-b", container{name: "app", cpu: "4", memory: "1Gi"}) }

func readmitScenarios() []readmitScenario {
	multi := func(b string) func() *v1.Pod {
		return func() *v1.Pod {
			return pod("seed-a", container{name: "a", cpu: "2", memory: "256Mi"}, container{name: "b", cpu: b, memory: "256Mi"})
		}
	}
	return []readmitScenario{
		{short: "same", seeds: func() []*v1.Pod { return []*v1.Pod{seedA("2", "1Gi"), seedB()} },
			again: func() *v1.Pod { return seedA("2", "1Gi") }},
		// The allocation no longer matches the request: empty CPU hints; a refused pod's CPUs
		// go back to the pool at the next admission.
		{short: "cpu-up", then: true, seeds: func() []*v1.Pod { return []*v1.Pod{seedA("2", "1Gi"), seedB()} },
			again: func() *v1.Pod { return seedA("4", "1Gi") }},
		{short: "cpu-down", seeds: func() []*v1.Pod { return []*v1.Pod{seedA("2", "1Gi"), seedB()} },
			again: func() *v1.Pod { return seedA("1", "1Gi") }},
		// Only the second container's request changed.
		{short: "multi-one", seeds: func() []*v1.Pod { return []*v1.Pod{multi("2")(), seedB()} },
			again: multi("4")},
		{short: "multi-same", seeds: func() []*v1.Pod { return []*v1.Pod{multi("2")(), seedB()} },
			again: multi("2")},
		// The memory blocks no longer match: the memory manager gives no preference.
		{short: "mem-up", mem: true, seeds: func() []*v1.Pod { return []*v1.Pod{seedA("2", "1Gi"), seedB()} },
			again: func() *v1.Pod { return seedA("2", "2Gi") }},
		// One block held, two resources asked (memory and hugepages): no preference either.
		{short: "mem-hp", mem: true, seeds: func() []*v1.Pod { return []*v1.Pod{seedA("2", "1Gi"), seedB()} },
			again: func() *v1.Pod {
				return pod("seed-a", container{name: "app", cpu: "2", memory: "1Gi", hugepages2M: "256Mi"})
			}},
	}
}

// readmitTopologies are the restarted kubelet's topology policy and scope.
var readmitTopologies = []struct{ policy, scope string }{
	{"none", "container"}, {"best-effort", "container"}, {"restricted", "container"}, {"single-numa-node", "container"},
	{"best-effort", "pod"}, {"restricted", "pod"}, {"single-numa-node", "pod"},
}

// readmitMachine is a kubelet on s: static CPU policy (reserved CPU 0, full-pcpus-only when
// fpo), the topology policy and scope, memory policy Static (100Mi reserved on node 0) or None.
func readmitMachine(s Shape, policy, scope string, fpo, memStatic bool) *Machine {
	m := s.Machine()
	k := KubeletConfig{CPUManagerPolicy: "static", ReservedSystemCPUs: "0", TopologyManagerPolicy: policy, TopologyManagerScope: scope}
	if fpo {
		k.CPUManagerPolicyOptions = map[string]string{"full-pcpus-only": "true"}
	}
	if memStatic {
		k.MemoryManagerPolicy = "Static"
		k.ReservedMemory = []MemReservation{{NUMANode: 0, Limits: map[string]string{"memory": "100Mi"}}}
	}
	m.Kubelet = k
	return m
}

// readmitCases: each scenario under the topology policies and scopes (full-pcpus-only and the
// memory manager's Static policy in turn; memory scenarios always Static), then checkpoints
// written under another configuration than the restarted kubelet's.
func readmitCases() []*genCase {
	// 2 sockets, a NUMA node each, 8 CPUs a node (16Gi, 512 2Mi pages).
	s := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave", HugePages2M: 512}
	var out []*genCase
	i := 0
	for _, sc := range readmitScenarios() {
		for _, tm := range readmitTopologies {
			i++
			if sc.mem && tm.policy == "none" {
				continue // no hints asked: the same as "same"
			}
			fpo := i%2 == 0
			memStatic := sc.mem || i%3 != 0
			m := readmitMachine(s, tm.policy, tm.scope, fpo, memStatic)
			out = append(out, readmitCase(s, m, sc.short, sc.seeds(), sc.again(), sc.then, nil))
		}
	}
	return append(out, readmitReconfiguredCases(s)...)
}

// readmitCase is one case: seeds admitted (by seedKubelet when not nil), seed-a admitted again.
func readmitCase(s Shape, m *Machine, short string, seeds []*v1.Pod, again *v1.Pod, then bool, seedKubelet *KubeletConfig) *genCase {
	k := m.Kubelet
	opt := onOff(len(k.CPUManagerPolicyOptions) > 0, "fpo", "noopt")
	mem := onOff(k.MemoryManagerPolicy == "Static", "Static", "None")
	name := fmt.Sprintf("readmit__%s__%s__%s__tm-%s-%s__mem-%s", s.Name(), short, opt, k.TopologyManagerPolicy, k.TopologyManagerScope, mem)
	desc := fmt.Sprintf("kubelet restart: seed-a re-admitted (%s) on %s; topology %s/%s; cpu static %s; memory %s",
		short, s.Name(), k.TopologyManagerPolicy, k.TopologyManagerScope, opt, mem)
	pods := []*v1.Pod{again}
	if then {
		pods = append(pods, guaranteed("q", 2))
	}
	c := &genCase{name: name, machine: m, seeds: seeds, pods: pods, seedKubelet: seedKubelet,
		tags: []string{"readmit", "seed", short, "opt-" + opt, "tm-" + k.TopologyManagerPolicy + "-" + k.TopologyManagerScope, "mem-" + mem}}
	if then {
		c.tags = append(c.tags, "2pods")
	}
	if seedKubelet != nil {
		c.description = desc + fmt.Sprintf("; checkpoints written with topology %s/%s, cpu options %v", seedKubelet.TopologyManagerPolicy,
			seedKubelet.TopologyManagerScope, seedKubelet.CPUManagerPolicyOptions)
		c.tags = append(c.tags, "reconfigured")
	} else {
		c.description = desc
	}
	return c
}

// readmitReconfiguredCases: the kubelet restarted with a stricter configuration than the one
// that wrote its checkpoints. Memory over a NUMA node (20Gi) or CPUs over one (10) held under
// best-effort, re-admitted under single-numa-node and restricted, as is or with less memory;
// and full-pcpus-only on a node whose free CPUs hold no full core, where releases before 1.37
// check SMT alignment before they see the container already holds its CPUs.
func readmitReconfiguredCases(s Shape) []*genCase {
	var out []*genCase
	for _, tm := range []struct{ policy, scope string }{{"single-numa-node", "container"}, {"single-numa-node", "pod"}, {"restricted", "container"}} {
		for _, v := range []struct {
			short        string
			seed, again  func() *v1.Pod
			memoryStatic bool
		}{
			{"wide-mem", func() *v1.Pod { return seedA("2", "20Gi") }, func() *v1.Pod { return seedA("2", "20Gi") }, true},
			{"wide-mem-down", func() *v1.Pod { return seedA("2", "20Gi") }, func() *v1.Pod { return seedA("2", "18Gi") }, true},
			{"wide-cpu", func() *v1.Pod { return seedA("10", "1Gi") }, func() *v1.Pod { return seedA("10", "1Gi") }, false},
		} {
			m := readmitMachine(s, tm.policy, tm.scope, false, v.memoryStatic)
			seedKubelet := m.Kubelet
			seedKubelet.TopologyManagerPolicy, seedKubelet.TopologyManagerScope = "best-effort", "container"
			out = append(out, readmitCase(s, m, "from-best-effort-"+v.short, []*v1.Pod{v.seed(), seedB()}, v.again(), false, &seedKubelet))
		}
	}
	for _, tm := range []string{"none", "restricted"} {
		m := readmitMachine(s, tm, "container", true, false)
		seedKubelet := m.Kubelet
		seedKubelet.CPUManagerPolicyOptions = nil
		full := pod("seed-b", container{name: "app", cpu: "12", memory: "1Gi"})
		out = append(out, readmitCase(s, m, "to-fpo-full", []*v1.Pod{seedA("2", "1Gi"), full}, seedA("2", "1Gi"), false, &seedKubelet))
	}
	return out
}
