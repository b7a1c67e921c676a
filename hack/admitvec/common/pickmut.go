package common

// Issue 21's surviving mutants of the CPU picker (docs/mutation.md, "Stop 25"): inputs where
// the mutated replay picks other CPUs than the original, found by a search comparing the two
// over random shapes, free sets, counts and options. Each is a picker case (pickerCase: the
// checkpoint leaves exactly avail free, topology manager none).
type pickMutInput struct {
	name   string // what the case kills
	shape  Shape
	avail  []int
	n      int
	option string // a pickerOptions short name
}

func pickMutInputs() []pickMutInput {
	return []pickMutInput{
		// 3 threads a core, 2 CPUs asked: the partial uncore cache (the socket here) holds a
		// free core of 3 CPUs; only an odd request is trimmed to fit, so the even one falls
		// through to the core with 2 free CPUs (4-5), not 0-1.
		{"uncore-even", Shape{Sockets: 1, NUMAPerSocket: 1, CoresPerSocket: 3, Threads: 3, Numbering: "sequential"},
			[]int{0, 1, 2, 4, 5}, 2, "uncore"},
		// Uncore caches of 3 cores on a 4-core socket: one of 3 CPUs, one of 1. CPUsPerUncore
		// is 2, so a single CPU never asks for a whole uncore cache (the lone CPU 3's).
		{"uncore-small", Shape{Sockets: 1, NUMAPerSocket: 2, CoresPerSocket: 4, Threads: 1, Numbering: "interleave", UncoreCores: 3},
			[]int{2, 3}, 1, "uncore"},
		// NUMA nodes made unequal by offline CPUs: 3 CPUs are on average more than a node
		// holds, so the fewest NUMA nodes is 2, though node 3 alone holds 3 free CPUs.
		{"numa-unequal", Shape{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 6, Threads: 1, Numbering: "interleave", Offline: []int{1, 2, 3, 5, 8}},
			[]int{4, 7, 9, 10, 11}, 3, "dan"},
		{"numa-unequal-groups", Shape{Sockets: 2, NUMAPerSocket: 4, CoresPerSocket: 12, Threads: 2, Numbering: "interleave",
			Offline: []int{1, 2, 6, 8, 11, 13, 14, 17, 20, 21, 22, 25, 30, 36, 38, 42, 47}},
			[]int{0, 3, 4, 5, 9, 10, 12, 15, 16, 18, 19, 23, 24, 26, 27, 28, 29, 31, 32, 33, 34, 35, 37, 39, 40, 41, 43, 44, 45, 46}, 10, "fpo+dan+abs"},
		// The same with whole cores offline, so groups of 2 (full-pcpus-only): only there does
		// a wrong count of the machine's CPU groups change the range.
		{"numa-unequal-cores", Shape{Sockets: 2, NUMAPerSocket: 2, CoresPerSocket: 6, Threads: 2, Numbering: "interleave",
			Offline: []int{1, 3, 4, 5, 7, 8, 13, 15, 16, 17, 19, 20}},
			[]int{2, 6, 9, 10, 11, 12, 14, 18, 21, 22, 23}, 6, "fpo+dan"},
		// 8 NUMA nodes, 1 CPU: the most balanced node left is chosen by standard deviation;
		// a mean scaled wrongly makes combinations tie after rounding, the first one kept.
		{"balance", Shape{Sockets: 2, NUMAPerSocket: 4, CoresPerSocket: 8, Threads: 2, Numbering: "interleave", UncoreCores: 1,
			Offline: []int{3, 6, 12, 15, 16, 19, 24, 27, 30}},
			[]int{0, 1, 2, 4, 5, 7, 8, 9, 10, 11, 13, 17, 18, 21, 22, 23, 25, 28, 31}, 1, "dan+abs"},
	}
}

// pickMutCases: pickm__<shape>__<what>__n<N>__<option>.
func pickMutCases() []*genCase {
	var out []*genCase
	for _, in := range pickMutInputs() {
		opts, ok := hangOptions[in.option] // fpo+dan is only there
		for _, o := range pickerOptions {
			if o.short == in.option {
				opts, ok = o.opts, true
			}
		}
		if ok {
			out = append(out, pickerCase("pickm", in.shape, in.name, in.avail, in.n, in.option, opts))
		}
	}
	return out
}
