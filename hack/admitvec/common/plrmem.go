package common

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Pod-level memory at its edges (issue 21's pkg/replay survivors): spec.resources holding memory
// only (IsPodLevelResourcesSet); shared init containers and sidecars beside exclusive containers
// that take the whole memory budget or one byte less (validatePodScopeResources); a pod-level
// pod's memory freed (a refused re-admission) and then asked for exactly (RemoveContainer,
// releaseMemory); pod-level checkpoints written by a kubelet whose memory reservation differed
// (validateState); a sidecar's memory before an init container (getPodRequestedResources).

// plrmemScenario is the seeds, pod.json (and pod2.json) of a case.
type plrmemScenario struct {
	short       string
	seeds       func() []*v1.Pod
	pods        func() []*v1.Pod
	plrm        bool                               // PodLevelResourceManagers on (restart and seeding)
	seedKubelet func(KubeletConfig) *KubeletConfig // the seeding kubelet, when not the restarted one
}

func plrmemScenarios() []plrmemScenario {
	c := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem} }
	ini := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem, init: true} }
	side := func(name, mem string) container { return container{name: name, cpu: "1", memory: mem, sidecar: true} }
	shared := func(name string) container { return container{name: name} }
	sharedInit := container{name: "init", init: true}
	sharedSide := container{name: "side", sidecar: true}
	budget := int64(4 << 30)
	plr := func(p *v1.Pod, memory string) *v1.Pod { return withPodResources(p, "4", memory) }
	two := func(p *v1.Pod) func() []*v1.Pod { return func() []*v1.Pod { return []*v1.Pod{p, guaranteed("q", 2)} } }
	// A pod-level seed re-admitted asking memory no node has: refused, its memory freed at the
	// next admission, where q asks exactly the memory it held.
	refusedThen := func(seed func() *v1.Pod, q *v1.Pod) func() []*v1.Pod {
		return func() []*v1.Pod {
			return []*v1.Pod{withPodResources(seed(), "2", "200Gi"), q}
		}
	}
	movedReservation := func(k KubeletConfig) *KubeletConfig {
		k.ReservedMemory = []MemReservation{{NUMANode: 1, Limits: map[string]string{"memory": "100Mi"}}}
		return &k
	}
	return []plrmemScenario{
		// spec.resources with memory only: the pod is Burstable, its Guaranteed containers too.
		{short: "memonly", plrm: true, pods: two(withPodResources(pod("p", c("a", "1Gi"), c("b", "1Gi")), "", "4Gi"))},
		{short: "memonly-shared", plrm: true, pods: two(withPodResources(pod("p", c("a", "1Gi"), shared("b")), "", "4Gi"))},
		// spec.resources with CPU only, beside Guaranteed containers: a pod-level pod all the
		// same, left to the containers' own resources or skipped by the managers (the gate at
		// its default).
		{short: "cpuonly", plrm: true, pods: two(withPodResources(pod("p", c("a", "1Gi"), c("b", "1Gi")), "4", ""))},
		{short: "cpuonly-default", pods: two(withPodResources(pod("p", c("a", "1Gi"), c("b", "1Gi")), "4", ""))},
		// A shared init container after sidecars holding the whole budget, or one byte less.
		{short: "shinit-eq", plrm: true, pods: two(plr(pod("p", side("s", "4Gi"), sharedInit, shared("app")), "4Gi"))},
		{short: "shinit-minus1", plrm: true, pods: two(plr(pod("p", side("s", bytesQ(budget-1)), sharedInit, shared("app")), "4Gi"))},
		{short: "shinit-2side-eq", plrm: true, pods: two(plr(pod("p", side("s1", "2Gi"), side("s2", "2Gi"), sharedInit, c("app", "1Gi")), "4Gi"))},
		// The init runs before the app: only the sidecars before it count.
		{short: "shinit-app-after", plrm: true, pods: two(plr(pod("p", side("s", "3Gi"), sharedInit, c("app", "1Gi")), "4Gi"))},
		// An exclusive init container after sidecars holding the budget, a shared app.
		{short: "exinit-eq", plrm: true, pods: two(plr(pod("p", side("s", "4Gi"), ini("init", "1Gi"), shared("app")), "4Gi"))},
		// A shared sidecar beside an app holding the budget, or one byte less.
		{short: "shside-eq", plrm: true, pods: two(plr(pod("p", sharedSide, c("app", "4Gi")), "4Gi"))},
		{short: "shside-minus1", plrm: true, pods: two(plr(pod("p", sharedSide, c("app", bytesQ(budget-1))), "4Gi"))},
		{short: "shapp-eq", plrm: true, pods: two(plr(pod("p", c("a", "2Gi"), c("b", "2Gi"), shared("c")), "4Gi"))},
		// Freed pod-level memory asked for exactly: node 1's 16Gi, one shared container or two;
		// a 2-node group (all the free memory of both nodes).
		{short: "freed-node1", plrm: true,
			seeds: func() []*v1.Pod {
				return []*v1.Pod{withPodResources(pod("seed-a", c("a", "1Gi"), shared("b")), "2", bytesQ(memNode))}
			},
			pods: refusedThen(func() *v1.Pod { return pod("seed-a", c("a", "1Gi"), shared("b")) }, pod("q", c("app", bytesQ(memNode))))},
		{short: "freed-node1-one", plrm: true,
			seeds: func() []*v1.Pod { return []*v1.Pod{withPodResources(pod("seed-a", shared("a")), "2", bytesQ(memNode))} },
			pods:  refusedThen(func() *v1.Pod { return pod("seed-a", shared("a")) }, pod("q", c("app", bytesQ(memNode))))},
		{short: "freed-group", plrm: true,
			seeds: func() []*v1.Pod {
				return []*v1.Pod{withPodResources(pod("seed-a", c("a", "1Gi"), shared("b")), "2", "20Gi")}
			},
			pods: refusedThen(func() *v1.Pod { return pod("seed-a", c("a", "1Gi"), shared("b")) }, pod("q", c("app", bytesQ(memNode0+memNode))))},
		// The group freed, then node 1's 16Gi asked: only a group release that returns each
		// node's own share leaves node 0 too small for it.
		{short: "freed-group-node1", plrm: true,
			seeds: func() []*v1.Pod {
				return []*v1.Pod{withPodResources(pod("seed-a", c("a", "1Gi"), shared("b")), "2", "20Gi")}
			},
			pods: refusedThen(func() *v1.Pod { return pod("seed-a", c("a", "1Gi"), shared("b")) }, pod("q", c("app", bytesQ(memNode))))},
		// Pod-level checkpoints written with the reservation on node 1, restarted with it on node 0.
		{short: "seeded-moved", plrm: true, seedKubelet: movedReservation,
			seeds: func() []*v1.Pod {
				return []*v1.Pod{withPodResources(pod("seed-a", c("a", "1Gi"), shared("b")), "2", "2Gi"), withPodResources(pod("seed-b", shared("a")), "2", "3Gi")}
			}, pods: func() []*v1.Pod { return []*v1.Pod{guaranteed("p", 2)} }},
		{short: "seeded-same", plrm: true,
			seeds: func() []*v1.Pod {
				return []*v1.Pod{withPodResources(pod("seed-a", c("a", "1Gi"), shared("b")), "2", "2Gi"), withPodResources(pod("seed-b", shared("a")), "2", "3Gi")}
			}, pods: func() []*v1.Pod { return []*v1.Pod{guaranteed("p", 2)} }},
		// A sidecar before an init container asking less than the sidecar: the init runs beside it.
		{short: "side-before-init", pods: func() []*v1.Pod {
			return []*v1.Pod{pod("p", ini("i1", "2Gi"), side("side", "10Gi"), ini("i2", "8Gi"), c("app", "1Gi")), pod("q", c("app", "1Gi"))}
		}},
		{short: "side-before-init-small", pods: func() []*v1.Pod {
			return []*v1.Pod{pod("p", ini("i1", "2Gi"), side("side", "6Gi"), ini("i2", "4Gi"), c("app", "1Gi")), pod("q", c("app", bytesQ(memNode0-10<<30+1)))}
		}},
	}
}

// plrmemCases: every scenario under topology restricted/pod, best-effort/pod and
// single-numa-node/pod, memory manager Static, CPU policy static, on 2 sockets x 1 NUMA node.
func plrmemCases() []*genCase {
	s := Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}
	var out []*genCase
	for _, sc := range plrmemScenarios() {
		for _, tm := range []string{"restricted", "best-effort", "single-numa-node"} {
			m := memMachine(s, tm, "pod", true)
			if sc.plrm {
				m.Kubelet.FeatureGates = map[string]bool{"PodLevelResourceManagers": true}
			}
			name := fmt.Sprintf("plrmem__%s__%s__tm-%s-pod", s.Name(), sc.short, tm)
			c := &genCase{name: name, machine: m, pods: sc.pods(),
				tags: []string{"memory", "pod-level", sc.short, "tm-" + tm + "-pod"},
				description: fmt.Sprintf("memory Static: %s on %s, PodLevelResourceManagers %s; topology %s/pod; cpu static",
					sc.short, s.Name(), onOff(sc.plrm, "on", "default"), tm)}
			if sc.seeds != nil {
				c.seeds = sc.seeds()
				c.tags = append(c.tags, "seed")
			}
			if sc.seedKubelet != nil {
				c.seedKubelet = sc.seedKubelet(m.Kubelet)
				c.tags = append(c.tags, "reconfigured")
			}
			if len(c.pods) > 1 {
				c.tags = append(c.tags, "2pods")
			}
			out = append(out, c)
		}
	}
	return out
}
