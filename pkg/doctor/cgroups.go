package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The checks of the checkpoints against the node's cgroups (Input.Cgroups). The kubelet gives a
// container, when it creates it, the cpuset GetCPUAffinity returns (its exclusive CPUs in
// cpu_manager_state, else the shared pool, defaultCpuSet) and the NUMA nodes of its blocks in
// memory_manager_state (cm/internal_container_lifecycle_linux.go PreCreateContainer). Later it
// rewrites a cpuset only when the state changes (reconcileState compares with its own last
// write), and never a container's cpuset.mems.
const (
	checkCPUSetDrift     = "cpuset-drift"
	checkSharedPoolDrift = "shared-pool-drift"
	checkOnExclusive     = "cpus-on-exclusive"
	checkHandedOutTwice  = "cpus-handed-out-twice"
	checkCPUsLeaked      = "cpus-leaked"
	checkMemsDrift       = "mems-drift"
)

// IsCgroupCheck reports whether a finding's check is one of the cgroup audit's.
func IsCgroupCheck(check string) bool {
	switch check {
	case checkCPUSetDrift, checkSharedPoolDrift, checkOnExclusive, checkHandedOutTwice, checkCPUsLeaked, checkMemsDrift:
		return true
	}
	return false
}

// cgroupContainer is a running container as its cgroup shows it.
type cgroupContainer struct {
	pod, ctr string
	runs     cpuset.CPUSet
	cg       *cgroup.ContainerCgroup
}

func (c cgroupContainer) name() string { return c.pod + "/" + c.ctr }

// cgroupFindings compares the CPU and memory managers' states with what the containers' cgroups
// show; skipped says which comparisons could not be made.
func cgroupFindings(in Input, cpuRep, memRep *decode.Report) (out []Finding, skipped []string) {
	node := in.Cgroups
	if node == nil {
		return nil, []string{"the checkpoints against the cgroups: the node's cgroups were not read"}
	}
	if node.Version == 0 {
		return nil, []string{"the checkpoints against the cgroups: the node showed no cpuset cgroup tree"}
	}
	if node.Cut {
		skipped = append(skipped, fmt.Sprintf("the cgroups past the first %d directories: not read, so no CPUs are called leaked", cgroup.MaxDirs))
	}
	if in.LivePods == nil && len(node.Containers) == 0 {
		skipped = append(skipped, "each container against its cgroup: the pods' container IDs are unknown (no API)")
	}
	for _, m := range node.Missing {
		skipped = append(skipped, fmt.Sprintf("container %s/%s (%s) against its cgroup: %s", m.Pod, m.Container, m.ID, m.Reason))
	}
	var running []cgroupContainer
	for _, pod := range slices.Sorted(maps.Keys(node.Containers)) {
		for _, ctr := range slices.Sorted(maps.Keys(node.Containers[pod])) {
			cg := node.Containers[pod][ctr]
			runs, ok := cg.Runs()
			if !ok {
				skipped = append(skipped, fmt.Sprintf("container %s/%s against its cgroup: its cpuset does not parse (%s)", pod, ctr, cg.CPUs.Raw))
				continue
			}
			running = append(running, cgroupContainer{pod, ctr, runs, cg})
		}
	}

	if cs, ok := decodedCPU(cpuRep); ok && cs != nil && cs.PolicyName == replay.CPUPolicyStatic {
		out = append(out, cpuCgroupFindings(in, cpuRep.File, cs, running)...)
	}
	if ms, ok := decodedMemory(memRep); ok && ms != nil && ms.PolicyName == replay.MemoryPolicyStatic {
		out = append(out, memCgroupFindings(memRep.File, ms, running)...)
	}
	return out, skipped
}

func cpuCgroupFindings(in Input, file string, cs *decode.CPUState, running []cgroupContainer) []Finding {
	var out []Finding
	shared, err := replay.ParseCPUSet(cs.DefaultCPUSet)
	if err != nil {
		return nil // cpuFindings reports it
	}
	type owner struct{ pod, ctr string }
	exclusive := map[owner]cpuset.CPUSet{}
	ownerOf := map[int]owner{}
	// In a fixed order: a CPU in two containers' exclusive sets (handed out twice) has one owner
	// here, the same on every run.
	for _, pod := range slices.Sorted(maps.Keys(cs.Entries)) {
		ctrs := cs.Entries[pod]
		for _, ctr := range slices.Sorted(maps.Keys(ctrs)) {
			text := ctrs[ctr]
			if set, err := replay.ParseCPUSet(text); err == nil {
				exclusive[owner{pod, ctr}] = set
				for _, cpu := range set.UnsortedList() {
					ownerOf[cpu] = owner{pod, ctr}
				}
			}
		}
	}
	reconcile := "the kubelet rewrites a container's cpuset only when its state for it changes (reconcileState compares with its own last write, kubernetes #138731)"

	for _, c := range running {
		want, isExclusive := exclusive[owner{c.pod, c.ctr}]
		if !isExclusive {
			want = shared
		}
		if !c.runs.Equals(want) {
			f := Finding{Severity: SeverityError, Check: checkCPUSetDrift, File: file, Entry: c.name(),
				Message: fmt.Sprintf("the CPU manager assigned CPUs %s exclusively to %s, but its cgroup %s has cpuset.cpus %q (runs on %s): %s, so it stays",
					want, c.name(), c.cg.Path, c.cg.CPUs.Raw, c.runs, reconcile),
				Fix: "find what rewrote the cpuset (another node agent, a manual write) and stop it; restarting the kubelet makes it write every container's cpuset again"}
			if !isExclusive {
				f.Severity, f.Check = SeverityWarning, checkSharedPoolDrift
				f.Message = fmt.Sprintf("%s runs in the shared pool, which is %s (defaultCpuSet), but its cgroup %s has cpuset.cpus %q (runs on %s)",
					c.name(), shared, c.cg.Path, c.cg.CPUs.Raw, c.runs)
				f.Fix = "if a pod was admitted or removed within the last cpuManagerReconcilePeriod (10s by default), the kubelet is still catching up; otherwise " + f.Fix
			}
			out = append(out, f)
		}
		// Another container's exclusive CPUs in this one's cgroup.
		taken := map[owner][]int{}
		for _, cpu := range c.runs.List() {
			// A pod's app containers reuse its init containers' CPUs: only other pods conflict.
			if o, ok := ownerOf[cpu]; ok && o.pod != c.pod {
				taken[o] = append(taken[o], cpu)
			}
		}
		for _, o := range slices.SortedFunc(maps.Keys(taken), func(a, b owner) int { return strings.Compare(a.pod+"/"+a.ctr, b.pod+"/"+b.ctr) }) {
			cpus := cpuset.New(taken[o]...)
			f := Finding{Severity: SeverityError, Check: checkOnExclusive, File: file, Entry: c.name(),
				Message: fmt.Sprintf("%s runs on CPUs %s, which the CPU manager assigned exclusively to %s: the exclusive container shares its CPUs", c.name(), cpus, entry(o.pod, o.ctr)),
				Fix:     "find what rewrote the cpuset and stop it; restarting the kubelet makes it write every container's cpuset again"}
			if isExclusive {
				f.Check = checkHandedOutTwice
				f.Message = fmt.Sprintf("CPUs %s are handed out twice: the CPU manager assigned them exclusively to %s, and they are in the cgroup of %s, which holds CPUs %s exclusively",
					cpus, entry(o.pod, o.ctr), c.name(), want)
			}
			out = append(out, f)
		}
	}

	// CPUs held for pods none of whose containers runs.
	live := func(pod string) bool { return in.LivePods != nil && in.LivePods[pod] }
	for _, pod := range sortedUnion(cs.Entries, cs.PodEntries) {
		if live(pod) {
			continue // the kubelet holds a live pod's CPUs across its containers' restarts
		}
		if pc := in.Cgroups.Pods[pod]; (pc != nil && pc.Children > 0) || in.Cgroups.Cut {
			continue
		}
		held := cpuset.New()
		for _, text := range cs.Entries[pod] {
			if set, err := replay.ParseCPUSet(text); err == nil {
				held = held.Union(set)
			}
		}
		if set, err := replay.ParseCPUSet(cs.PodEntries[pod]); err == nil {
			held = held.Union(set)
		}
		if held.IsEmpty() {
			continue // entries of no CPU (a pod-level "") hold nothing
		}
		where := "no cgroup"
		if pc := in.Cgroups.Pods[pod]; pc != nil {
			where = "an empty cgroup " + pc.Path
		}
		f := Finding{Severity: SeverityWarning, Check: checkCPUsLeaked, File: file, Entry: "pod " + pod,
			Message: fmt.Sprintf("CPUs %s are held for pod %s, but none of its containers runs on the node (%s): they are leaked, out of the shared pool and no pod's", held, pod, where)}
		if in.LivePods == nil {
			f.Fix = "if the pod is gone from the API server, the kubelet frees them at its first reconcile once it runs; if it still exists, the kubelet starts its containers on them again"
		} else {
			f.Fix = "the pod is gone from the API server: the kubelet frees them at its next reconcile (removeStaleState, every cpuManagerReconcilePeriod); if they stay, restart the kubelet"
		}
		out = append(out, f)
	}
	return out
}

func memCgroupFindings(file string, ms *decode.MemoryState, running []cgroupContainer) []Finding {
	var out []Finding
	for _, c := range running {
		blocks := ms.Entries[c.pod][c.ctr]
		if len(blocks) == 0 {
			continue // the memory manager sets no cpuset.mems for it
		}
		var ids []int
		for _, b := range blocks {
			ids = append(ids, b.NUMAAffinity...)
		}
		want := cpuset.New(ids...)
		mems := c.cg.Mems
		if mems.Present && mems.Err == "" && mems.Set.Equals(want) {
			continue
		}
		out = append(out, Finding{Severity: SeverityError, Check: checkMemsDrift, File: file, Entry: c.name(),
			Message: fmt.Sprintf("the memory manager pinned %s's memory to NUMA nodes %s, but its cgroup %s has cpuset.mems %q: the kubelet never rewrites cpuset.mems after the container starts",
				c.name(), want, c.cg.Path, mems.Raw),
			Fix: "find what rewrote cpuset.mems and stop it; restarting the container (delete the pod) gives it the memory manager's NUMA nodes again"})
	}
	return out
}
