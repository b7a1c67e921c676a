package common

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's takeByTopologyNUMADistributed (distribute-cpus-across-numa; with
// full-pcpus-only its cpuGroupSize is the threads per core) hands the remainder of a NUMA
// combination out in groups, from a subset of NUMA nodes it keeps when the subset's free CPUs
// add up to the remainder. When they do but its whole groups do not (two NUMA nodes with 3
// free CPUs each and 6 to hand out in groups of 2), `for remainder > 0` never ends: Allocate
// does not return, the CPU manager's lock stays held, the kubelet admits nothing more
// (v1.31-v1.37; kubernetes PR #140730). The remainder is under len(combination) x group, so a
// hang needs a combination of 4+ NUMA nodes whose free CPUs are not whole cores.

// hangShapes: 2 sockets x 2 NUMA nodes x 4 cores x 2 threads, and 2 x 4 NUMA nodes of 4 cores.
var hangShapes = []Shape{
	{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 8, Threads: 2, Numbering: "interleave"},
	{Sockets: 2, NUMAPerSocket: 4, CoresPerSocket: 16, Threads: 2, Numbering: "interleave"},
}

var hangOptions = map[string]map[string]string{
	"fpo+dan":     {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true"},
	"fpo+dan+abs": {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true", "align-by-socket": "true"},
	"dan+abs":     {"distribute-cpus-across-numa": "true", "align-by-socket": "true"},
	"dan":         {"distribute-cpus-across-numa": "true"},
	"fpo+abs":     {"full-pcpus-only": "true", "align-by-socket": "true"},
	"fpo":         {"full-pcpus-only": "true"},
}

// hangInput is one case: the CPUs free (a named set of the shape) or reservedSystemCPUs (the
// rest free, no checkpoint), the pods' sizes, the CPU options.
type hangInput struct {
	shape    int
	set      string // a hangSets key, or "" with reserved
	reserved string // reservedSystemCPUs
	pods     []int
	opts     []string
	why      string
}

// hangSets are the free CPUs of each shape (numbering: core = cpu % cores, its second thread
// cpu + cores, NUMA node = core / 4).
func hangSets(s Shape) map[string][]int {
	online := s.Machine().CPUs
	var all []int
	for _, c := range online {
		all = append(all, c.ID)
	}
	cores := s.Sockets * s.CoresPerSocket
	// odd7: each NUMA node's first core has its second thread taken (7 free CPUs a node).
	firstThreadOnly := filter(all, func(c int) bool { return !(c >= cores && (c-cores)%4 == 0) })
	sets := map[string][]int{"odd7": firstThreadOnly}
	if s.numaNodes() == 4 {
		issue, _ := parseCPUList("0-8,10-14,17-22,24-25,27-29") // 7, 7, 6, 5 free
		sets["issue"] = issue
		sets["whole"] = filter(all, func(c int) bool { return c%cores != 11 && c%cores != 15 }) // 8, 8, 6, 6
		// NUMA nodes with fewer free CPUs than an even share: align-by-socket caps the share at
		// each node's whole groups (issue 21's surviving mutant of that cap).
		for name, list := range map[string]string{"short1": "0,2-6,8,10,12-13,15-19,21,25,28-31", "short2": "0-5,7-8,13,15-19,22-31", "short3": "2-7,12-14,16,18-23,25,29-31"} {
			sets[name], _ = parseCPUList(list)
		}
	} else {
		sets["whole"] = filter(all, func(c int) bool { return c%cores != 3 && c%cores != 7 }) // 6, 6, 8 x 6
	}
	return sets
}

func hangInputs() []hangInput {
	both := []string{"fpo+dan", "fpo+dan+abs"}
	return []hangInput{
		{0, "issue", "", []int{22}, []string{"fpo+dan", "fpo+dan+abs", "dan+abs", "dan", "fpo+abs", "fpo"}, "7,7,6,5 free: 4 + 4 + 4 + 4 spread, 6 left on 3,3 free"},
		{0, "issue", "", []int{18}, both, "3 NUMA nodes suffice"},
		{0, "issue", "", []int{20}, []string{"fpo+dan+abs"}, "remainder 4: two groups of 2 always fit"},
		{0, "issue", "", []int{24}, both, "11 whole groups for 24: no NUMA combination qualifies, the packed picker takes them"},
		{0, "odd7", "", []int{22}, []string{"fpo+dan", "fpo+dan+abs", "dan"}, "7 free a node: 4 each, 6 left on 3,3"},
		{0, "odd7", "", []int{20}, []string{"fpo+dan"}, "remainder 4"},
		{0, "odd7", "", []int{24}, []string{"fpo+dan"}, "6 each, no remainder"},
		{0, "whole", "", []int{22}, both, "whole cores free: 3 NUMA nodes"},
		{0, "whole", "", []int{26}, []string{"fpo+dan+abs"}, "whole cores free: 4 NUMA nodes, even leftovers"},
		{0, "odd7", "", []int{2, 22}, []string{"fpo+dan"}, "the first pod takes a core; the second hangs"},
		{0, "odd7", "", []int{22, 2}, []string{"fpo+dan"}, "the first pod hangs; the second is never admitted"},
		{0, "short1", "", []int{8}, both, "a NUMA node short of the even share: capped at its whole groups"},
		{0, "short2", "", []int{12}, []string{"fpo+dan+abs"}, "a NUMA node short of the even share"},
		{0, "short3", "", []int{12}, []string{"fpo+dan+abs"}, "a NUMA node short of the even share"},
		{0, "", "0,4,8,12", []int{22}, both, "reservedSystemCPUs takes one thread of a core on each NUMA node"},
		{0, "", "0,4", []int{22}, []string{"fpo+dan"}, "one thread reserved on 2 NUMA nodes: 3 NUMA nodes suffice"},
		{0, "", "0", []int{22}, []string{"fpo+dan"}, "one thread reserved"},
		{1, "odd7", "", []int{22}, []string{"fpo+dan", "fpo+dan+abs", "dan"}, "7 free a node: 4 NUMA nodes, 6 left on 3,3"},
		{1, "odd7", "", []int{26}, []string{"fpo+dan"}, "5 NUMA nodes, 6 left"},
		{1, "odd7", "", []int{28}, []string{"fpo+dan+abs"}, "5 NUMA nodes, 8 left on 3,3,3"},
		{1, "odd7", "", []int{30}, []string{"fpo+dan"}, "5 NUMA nodes, 6 each, no remainder"},
		{1, "odd7", "", []int{46}, []string{"fpo+dan"}, "8 NUMA nodes, 14 left on 3 x 5"},
		{1, "odd7", "", []int{48}, []string{"fpo+dan"}, "8 NUMA nodes, 6 each"},
		{1, "whole", "", []int{22}, []string{"fpo+dan"}, "whole cores free"},
		{1, "whole", "", []int{46}, []string{"fpo+dan+abs"}, "whole cores free: 8 NUMA nodes"},
		{1, "", "0,4,8,12,16,20,24,28", []int{26}, []string{"fpo+dan"}, "reservedSystemCPUs takes one thread of a core on each NUMA node"},
	}
}

// hangCases: the picker's hanging inputs and their near misses (whole cores free, an option
// off, fewer NUMA nodes needed), as pick__ cases (the checkpoint leaves exactly the set free)
// or with reservedSystemCPUs and no checkpoint.
func hangCases() []*genCase {
	var out []*genCase
	for _, in := range hangInputs() {
		s := hangShapes[in.shape]
		var sizes []string
		for _, n := range in.pods {
			sizes = append(sizes, fmt.Sprint(n))
		}
		for _, o := range in.opts {
			var c *genCase
			if in.set != "" {
				c = pickerCase("hang", s, in.set, hangSets(s)[in.set], in.pods[0], o, hangOptions[o])
			} else {
				c = reservedCase(s, in.reserved, in.pods[0], o)
			}
			c.name = fmt.Sprintf("hang__%s__%s__n%s__%s", s.Name(), availName(in), strings.Join(sizes, "+"), o)
			c.pods = nil
			for i, n := range in.pods {
				c.pods = append(c.pods, guaranteed([]string{"p", "q"}[i], n))
			}
			c.tags = append(c.tags, "hang")
			c.description = fmt.Sprintf("%s; pods of %s CPUs (%s)", c.description, strings.Join(sizes, " then "), in.why)
			out = append(out, c)
		}
	}
	return out
}

func availName(in hangInput) string {
	if in.set != "" {
		return in.set
	}
	return "rsc" + strings.ReplaceAll(in.reserved, ",", "_")
}

// reservedCase: every CPU free but reservedSystemCPUs, no checkpoint.
func reservedCase(s Shape, reserved string, n int, optShort string) *genCase {
	m := s.Machine()
	m.Kubelet = KubeletConfig{CPUManagerPolicy: "static", CPUManagerPolicyOptions: hangOptions[optShort], ReservedSystemCPUs: reserved,
		FeatureGates: map[string]bool{"CPUManagerPolicyAlphaOptions": true}}
	return &genCase{machine: m, pods: []*v1.Pod{guaranteed("p", n)},
		tags: []string{"picker", "opt-" + optShort, "reserved"},
		description: fmt.Sprintf("CPU picker: %d CPUs on %s, every CPU free but reservedSystemCPUs %s, option %s, topology manager none",
			n, s.Name(), reserved, optShort)}
}
