package common

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The node-resource predicate after the resource managers (issue 30): the kubelet runs
// lifecycle's predicate admit handler right after the topology manager's, so a pod the
// managers gave CPUs and memory can still be refused (OutOfcpu, OutOfmemory, OutOfpods,
// OutOf<extended resource>), and what they gave it returns at the next admission. Each case has
// node.json (the node's allocatable and the pods bound to it, Burstable fillers that hold no
// exclusive CPUs, and the seed pods that hold the checkpoint's); pod.json is refused by the
// predicate (or fits exactly), pod2.json comes after it and needs what pod.json was given.

// predScenario is node.json's pods and allocatable, then pod.json and pod2.json.
type predScenario struct {
	short, description string
	bound              []*v1.Pod
	alloc              map[string]string // over predAllocatable
	seeds              []*v1.Pod         // admitted first (checkpoints), and bound
	pods               []*v1.Pod
	// The node object's labels, taints and features (node.json) beyond its allocatable.
	labels   map[string]string
	taints   []v1.Taint
	features *v1.NodeFeatures
}

// The machine: 2 sockets x 1 NUMA node x 4 cores x 2 threads (16 CPUs, 16Gi a node),
// reservedSystemCPUs 0, evictionHard at its default: 15 CPUs and 32Gi - 100Mi allocatable.
var predShape = Shape{Sockets: 2, NUMAPerSocket: 1, CoresPerSocket: 4, Threads: 2, Numbering: "interleave"}

const (
	predAllocMemory = 32<<30 - 100<<20
	predExt         = "example.com/foo"
)

func predAllocatable(over map[string]string) v1.ResourceList {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse("15"), v1.ResourceMemory: *resource.NewQuantity(predAllocMemory, resource.BinarySI),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	for k, v := range over {
		l[v1.ResourceName(k)] = resource.MustParse(v)
	}
	return l
}

// filler is a Burstable pod bound to the node: it counts in the predicate's used resources and
// its pod count, and the managers give it nothing exclusive.
func filler(name, cpu, memory string) *v1.Pod {
	return pod(name, container{name: "app", cpu: cpu, memory: memory, burstable: true})
}

func predScenarios() []predScenario {
	g := func(name, cpu, mem string) *v1.Pod { return pod(name, container{name: "app", cpu: cpu, memory: mem}) }
	fillers := func(n int) []*v1.Pod {
		var out []*v1.Pod
		for i := 0; i < n; i++ {
			out = append(out, filler(fmt.Sprintf("bound-%d", i), "100m", "100Mi"))
		}
		return out
	}
	// An extended resource is asked with requests = limits (a Burstable pod's limits hold it alone).
	ext := func(p *v1.Pod, qty string) *v1.Pod {
		if r := &p.Spec.Containers[0].Resources; r.Limits == nil {
			r.Limits = v1.ResourceList{}
		}
		return withResource(p, "app", predExt, qty)
	}
	overhead := g("a", "4", "1Gi")
	overhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	seedA := g("seed-a", "4", "2Gi")
	return []predScenario{
		// 11 of 15 CPUs requested by the fillers: a (5 CPUs) is out of CPU after the CPU
		// manager gave it 5; b asks the 4 left, exactly.
		{short: "cpu", description: "OutOfcpu after the managers allocated, then a pod fitting exactly",
			bound: []*v1.Pod{filler("bound-0", "6", "1Gi"), filler("bound-1", "5", "1Gi")},
			pods:  []*v1.Pod{g("a", "5", "1Gi"), g("b", "4", "1Gi")}},
		// 3 CPUs requested: a asks the 12 left and one more; b the 12 (it needs a's CPUs).
		{short: "cpu-all", description: "OutOfcpu by one CPU, then a pod taking every CPU left",
			bound: []*v1.Pod{filler("bound-0", "3", "1Gi")},
			pods:  []*v1.Pod{g("a", "13", "1Gi"), g("b", "12", "1Gi")}},
		// 28Gi requested: a (4Gi) is out of memory; b asks the rest exactly, with a's CPUs.
		{short: "memory", description: "OutOfmemory after the managers allocated, then a pod fitting exactly",
			bound: []*v1.Pod{filler("bound-0", "1", "28Gi")},
			pods:  []*v1.Pod{g("a", "8", "4Gi"), g("b", "14", bytesQ(predAllocMemory-28<<30))}},
		{short: "memory-plus1", description: "OutOfmemory by one byte, then a pod fitting exactly",
			bound: []*v1.Pod{filler("bound-0", "1", "28Gi")},
			pods:  []*v1.Pod{g("a", "8", bytesQ(predAllocMemory-28<<30+1)), g("b", "8", bytesQ(predAllocMemory-28<<30))}},
		// The issue's: allocatable 8 CPUs and 4Gi, a asks 4 CPUs and 8Gi, b 4 CPUs.
		{short: "issue", description: "allocatable 8 CPUs and 4Gi: 4 CPUs and 8Gi refused OutOfmemory, then 4 CPUs",
			alloc: map[string]string{"cpu": "8", "memory": "4Gi"},
			pods:  []*v1.Pod{g("a", "4", "8Gi"), g("b", "4", "1Gi")}},
		// 3 pods allowed, 3 bound: a and b are both out of pods (b after the managers gave it
		// a's CPUs again).
		{short: "pods-full", description: "OutOfpods twice: the node runs as many pods as it allows",
			alloc: map[string]string{"pods": "3"}, bound: fillers(3),
			pods: []*v1.Pod{g("a", "6", "1Gi"), g("b", "12", "1Gi")}},
		// 4 allowed, 3 bound: a fits exactly, b is out of pods.
		{short: "pods-exact", description: "a pod filling the node's pod count exactly, then OutOfpods",
			alloc: map[string]string{"pods": "4"}, bound: fillers(3),
			pods: []*v1.Pod{g("a", "6", "1Gi"), g("b", "6", "1Gi")}},
		// No device plugin serves example.com/foo: the device manager allocates nothing and
		// the predicate counts the node's allocatable (1) against the pods' requests.
		{short: "ext", description: "an extended resource with no plugin: OutOfexample.com/foo, then a pod asking exactly the allocatable",
			alloc: map[string]string{predExt: "1"},
			pods:  []*v1.Pod{ext(g("a", "8", "1Gi"), "2"), ext(g("b", "14", "1Gi"), "1")}},
		{short: "ext-used", description: "an extended resource with no plugin, one of two used by a bound pod",
			alloc: map[string]string{predExt: "2"}, bound: []*v1.Pod{ext(filler("bound-0", "1", "1Gi"), "1")},
			pods: []*v1.Pod{ext(g("a", "8", "1Gi"), "2"), ext(g("b", "13", "1Gi"), "1")}},
		{short: "ext-zero", description: "an extended resource the node reports with 0 allocatable",
			alloc: map[string]string{predExt: "0"},
			pods:  []*v1.Pod{ext(g("a", "8", "1Gi"), "1"), g("b", "14", "1Gi")}},
		// A resource the node does not report is dropped from the request (cluster-level
		// resources): a is admitted.
		{short: "ext-missing", description: "an extended resource the node does not report: dropped, the pod admitted",
			pods: []*v1.Pod{ext(g("a", "8", "1Gi"), "3"), g("b", "7", "1Gi")}},
		{short: "ephemeral", description: "OutOfephemeral-storage after the managers allocated",
			alloc: map[string]string{"ephemeral-storage": "10Gi"},
			pods:  []*v1.Pod{withResource(g("a", "8", "1Gi"), "app", "ephemeral-storage", "11Gi"), withResource(g("b", "14", "1Gi"), "app", "ephemeral-storage", "10Gi")}},
		// Two shortfalls: the predicate names the first, pods before cpu before memory.
		{short: "cpu-and-memory", description: "out of CPU and memory: OutOfcpu is named",
			bound: []*v1.Pod{filler("bound-0", "11", "28Gi")},
			pods:  []*v1.Pod{g("a", "5", "8Gi"), g("b", "4", "1Gi")}},
		{short: "pods-and-cpu", description: "out of pods and CPU: OutOfpods is named",
			alloc: map[string]string{"pods": "2"}, bound: []*v1.Pod{filler("bound-0", "6", "1Gi"), filler("bound-1", "6", "1Gi")},
			pods: []*v1.Pod{g("a", "4", "1Gi"), g("b", "3", "1Gi")}},
		// The request is the larger of the init container and the apps: 8 CPUs.
		{short: "init", description: "an init container of 8 CPUs over the apps' 2: OutOfcpu with the init's request",
			bound: []*v1.Pod{filler("bound-0", "8", "1Gi")},
			pods: []*v1.Pod{pod("a", container{name: "init", cpu: "8", memory: "1Gi", init: true}, container{name: "app", cpu: "2", memory: "1Gi"}),
				g("b", "7", "1Gi")}},
		// A sidecar's request adds to the apps'.
		{short: "sidecar", description: "a sidecar and an app of 4 CPUs each: OutOfcpu with their sum",
			bound: []*v1.Pod{filler("bound-0", "8", "1Gi")},
			pods: []*v1.Pod{pod("a", container{name: "side", cpu: "4", memory: "1Gi", sidecar: true}, container{name: "app", cpu: "4", memory: "1Gi"}),
				g("b", "7", "1Gi")}},
		// The pod overhead counts in the request (not in what the managers allocate).
		{short: "overhead", description: "4 CPUs and a 500m overhead where 4 CPUs are left: OutOfcpu",
			bound: []*v1.Pod{filler("bound-0", "11", "1Gi")},
			pods:  []*v1.Pod{overhead, g("b", "4", "1Gi")}},
		// A seed pod holds 4 exclusive CPUs in the checkpoint and is bound: its request counts.
		{short: "seeded", description: "a running Guaranteed pod holding 4 CPUs and fillers of 7: OutOfcpu, then a pod fitting exactly",
			seeds: []*v1.Pod{seedA}, bound: []*v1.Pod{seedA, filler("bound-0", "7", "1Gi")},
			pods: []*v1.Pod{g("a", "5", "1Gi"), g("b", "4", "1Gi")}},
	}
}

// predNodeScenarios are the predicate's checks beyond resources, each refusing pod a (8 CPUs,
// given by the managers first) where b (14 CPUs) needs a's CPUs back: the pod's kubernetes.io/os
// label and spec.os, its node selector and required node affinity, its nodeName, its host ports
// against the bound pods', the node's NoExecute taints (not NoSchedule; a static pod is exempt),
// SupplementalGroupsPolicy Strict on a node that does not report supporting it, and two
// failures at once (the first named).
func predNodeScenarios() []predScenario {
	g := func(name, cpu, mem string) *v1.Pod { return pod(name, container{name: "app", cpu: cpu, memory: mem}) }
	a := func(edit func(p *v1.Pod)) *v1.Pod {
		p := g("a", "8", "1Gi")
		edit(p)
		return p
	}
	b := func() *v1.Pod { return g("b", "14", "1Gi") }
	port := func(p *v1.Pod, n int32, proto v1.Protocol) *v1.Pod {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: n, HostPort: n, Protocol: proto})
		return p
	}
	ssd := func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }
	zone := func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	}
	noExecute := []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoExecute}}
	strict := func(p *v1.Pod) {
		policy := v1.SupplementalGroupsPolicyStrict
		p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
	}
	supported := true
	return []predScenario{
		{short: "selector", description: "a node selector the node's labels miss: NodeAffinity",
			pods: []*v1.Pod{a(ssd), b()}},
		{short: "selector-match", description: "a node selector the node's labels match: admitted",
			labels: map[string]string{"disk": "ssd"}, pods: []*v1.Pod{a(ssd), g("b", "7", "1Gi")}},
		{short: "affinity", description: "a required node affinity (zone In a) on a node of zone b: NodeAffinity",
			labels: map[string]string{"zone": "b"}, pods: []*v1.Pod{a(zone), b()}},
		{short: "nodename", description: "a pod bound to another node's name: NodeName",
			pods: []*v1.Pod{a(func(p *v1.Pod) { p.Spec.NodeName = "node-1" }), b()}},
		{short: "hostport", description: "a host port a bound pod uses: NodePorts",
			bound: []*v1.Pod{port(filler("bound-0", "100m", "100Mi"), 8080, v1.ProtocolTCP)},
			pods:  []*v1.Pod{a(func(p *v1.Pod) { port(p, 8080, v1.ProtocolTCP) }), g("b", "14", "1Gi")}},
		{short: "hostport-udp", description: "the host port a bound pod uses for UDP, asked for TCP: admitted",
			bound: []*v1.Pod{port(filler("bound-0", "100m", "100Mi"), 8080, v1.ProtocolUDP)},
			pods:  []*v1.Pod{a(func(p *v1.Pod) { port(p, 8080, v1.ProtocolTCP) }), g("b", "6", "1Gi")}},
		{short: "taint-noexecute", description: "a NoExecute taint the pod does not tolerate: TaintToleration",
			taints: noExecute, pods: []*v1.Pod{a(func(*v1.Pod) {}), b()}},
		{short: "taint-tolerated", description: "a NoExecute taint the pod tolerates: admitted",
			taints: noExecute, pods: []*v1.Pod{a(func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoExecute}}
			}), g("b", "7", "1Gi")}},
		{short: "taint-noschedule", description: "a NoSchedule taint the pod does not tolerate: admitted (the kubelet weighs NoExecute only)",
			taints: []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}, pods: []*v1.Pod{a(func(*v1.Pod) {}), g("b", "7", "1Gi")}},
		{short: "taint-static", description: "a static pod on a node of an untolerated NoExecute taint: admitted",
			taints: noExecute, pods: []*v1.Pod{a(func(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }), g("b", "7", "1Gi")}},
		{short: "os-label", description: "the pod's kubernetes.io/os label says windows: PodOSSelectorNodeLabelDoesNotMatch",
			pods: []*v1.Pod{a(func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} }), b()}},
		{short: "os-selector", description: "a node selector kubernetes.io/os=windows (not the label): NodeAffinity",
			pods: []*v1.Pod{a(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelOSStable: "windows"} }), b()}},
		{short: "os-field", description: "spec.os windows: PodOSNotSupported",
			pods: []*v1.Pod{a(func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }), b()}},
		{short: "supplemental-strict", description: "SupplementalGroupsPolicy Strict on a node that does not report it: SupplementalGroupsPolicyNotSupported",
			pods: []*v1.Pod{a(strict), b()}},
		{short: "supplemental-supported", description: "SupplementalGroupsPolicy Strict on a node reporting it: admitted",
			features: &v1.NodeFeatures{SupplementalGroupsPolicy: &supported}, pods: []*v1.Pod{a(strict), g("b", "7", "1Gi")}},
		{short: "cpu-and-selector", description: "out of CPU and a node selector missed: OutOfcpu is named",
			bound: []*v1.Pod{filler("bound-0", "11", "1Gi")}, pods: []*v1.Pod{a(ssd), g("b", "4", "1Gi")}},
		{short: "selector-and-port", description: "a node selector missed and a host port in use: NodeAffinity is named",
			bound: []*v1.Pod{port(filler("bound-0", "100m", "100Mi"), 8080, v1.ProtocolTCP)},
			pods:  []*v1.Pod{a(func(p *v1.Pod) { ssd(p); port(p, 8080, v1.ProtocolTCP) }), g("b", "14", "1Gi")}},
		{short: "port-and-taint", description: "a host port in use and an untolerated NoExecute taint: NodePorts is named",
			taints: noExecute, bound: []*v1.Pod{port(filler("bound-0", "100m", "100Mi"), 8080, v1.ProtocolTCP)},
			pods: []*v1.Pod{a(func(p *v1.Pod) { port(p, 8080, v1.ProtocolTCP) }), g("b", "14", "1Gi")}},
	}
}

// predConfigs: the managers' policies the scenarios run under.
var predConfigs = []struct {
	short             string
	tmPolicy, tmScope string
	cpuOptions        map[string]string
	memoryStatic      bool
}{
	{short: "tm-none__mem-None", tmPolicy: "none", tmScope: "container"},
	{short: "tm-restricted-container__mem-Static", tmPolicy: "restricted", tmScope: "container", memoryStatic: true},
	{short: "tm-single-numa-node-pod__mem-None", tmPolicy: "single-numa-node", tmScope: "pod"},
	{short: "tm-best-effort-container-fpo__mem-Static", tmPolicy: "best-effort", tmScope: "container", memoryStatic: true,
		cpuOptions: map[string]string{"full-pcpus-only": "true"}},
}

func predicateCases() []*genCase {
	var out []*genCase
	for _, sc := range append(predScenarios(), predNodeScenarios()...) {
		for _, pc := range predConfigs {
			m := predShape.Machine()
			k := KubeletConfig{CPUManagerPolicy: "static", CPUManagerPolicyOptions: pc.cpuOptions, ReservedSystemCPUs: "0",
				TopologyManagerPolicy: pc.tmPolicy, TopologyManagerScope: pc.tmScope}
			if pc.memoryStatic {
				k.MemoryManagerPolicy = "Static"
				k.ReservedMemory = []MemReservation{{NUMANode: 0, Limits: map[string]string{"memory": "100Mi"}}}
			}
			m.Kubelet = k
			c := &genCase{name: fmt.Sprintf("pred__%s__%s__%s", predShape.Name(), sc.short, pc.short), machine: m, pods: sc.pods, seeds: sc.seeds,
				node:        &NodeFile{Allocatable: predAllocatable(sc.alloc), Pods: sc.bound, Labels: sc.labels, Taints: sc.taints, Features: sc.features},
				tags:        []string{"predicate", sc.short, strings.Split(pc.short, "__")[0], "2pods"},
				description: fmt.Sprintf("%s on %s; cpu static (reserved 0); %s", sc.description, predShape.Name(), strings.ReplaceAll(pc.short, "__", "; "))}
			if c.node.Pods == nil {
				c.node.Pods = []*v1.Pod{}
			}
			out = append(out, c)
		}
	}
	return out
}
