package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// ctrCgroup is one running container of a test node: its pod, ID and cpuset files.
type ctrCgroup struct {
	pod, ctr, id, cpus, mems string
}

// cgroupNode is what cgroup.Resolve makes of a cgroup v1, cgroupfs, containerd node running
// ctrs (each pod also has its sandbox), plus empty pod directories for emptyPods.
func cgroupNode(t *testing.T, ctrs []ctrCgroup, emptyPods ...string) *cgroup.Node {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n@hierarchy 1\n=./kubepods\n", cgroup.Header)
	pods := map[string][]cgroup.ContainerRef{}
	for _, p := range emptyPods {
		fmt.Fprintf(&b, "=./kubepods/pod%s\n", p)
	}
	for _, c := range ctrs {
		if _, ok := pods[c.pod]; !ok {
			fmt.Fprintf(&b, "=./kubepods/pod%s\n=./kubepods/pod%s/sandbox-%s\n", c.pod, c.pod, c.pod)
		}
		dir := "./kubepods/pod" + c.pod + "/" + c.id
		fmt.Fprintf(&b, "=%s\n%s/cpuset.cpus:%s\n%s/cpuset.effective_cpus:%s\n%s/cpuset.mems:%s\n", dir, dir, c.cpus, dir, c.cpus, dir, c.mems)
		pods[c.pod] = append(pods[c.pod], cgroup.ContainerRef{Name: c.ctr, ID: "containerd://" + c.id, Running: true})
	}
	b.WriteString(cgroup.End + "\n")
	d, err := cgroup.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var refs []cgroup.PodRef
	for _, uid := range slices.Sorted(maps.Keys(pods)) {
		refs = append(refs, cgroup.PodRef{UID: uid, Containers: pods[uid]})
	}
	return cgroup.Resolve(d, refs)
}

func cpuReport(def string, entries map[string]map[string]string) *decode.Report {
	return &decode.Report{File: "cpu_manager_state", Kind: decode.KindCPU, Verdict: decode.Valid,
		Decoded: decode.Model{CPU: &decode.CPUState{PolicyName: "static", DefaultCPUSet: def, Entries: entries}}}
}

func memReport(entries map[string]map[string][]decode.MemoryBlock) *decode.Report {
	return &decode.Report{File: "memory_manager_state", Kind: decode.KindMemory, Verdict: decode.Valid,
		Decoded: decode.Model{Memory: &decode.MemoryState{PolicyName: "Static", Entries: entries}}}
}

// TestCgroupFindings: a node of 4 CPUs, CPU 0-1 the shared pool, pod g's app holding 2-3 and
// NUMA node 0, pod b's web in the shared pool; one fault planted per case.
func TestCgroupFindings(t *testing.T) {
	healthy := []ctrCgroup{{"g", "app", "a1", "2-3", "0"}, {"b", "web", "w1", "0-1", "0"}}
	with := func(i int, cpus, mems string) []ctrCgroup {
		out := slices.Clone(healthy)
		out[i].cpus, out[i].mems = cpus, mems
		return out
	}
	state := map[string]map[string]string{"g": {"app": "2-3"}}
	blocks := map[string]map[string][]decode.MemoryBlock{"g": {"app": {{NUMAAffinity: []int{0}, Type: "memory", Size: 1 << 30}}}}
	type want struct {
		check, entry string
		severity     Severity
		text         string
	}
	for _, tc := range []struct {
		name    string
		def     string // defaultCpuSet; "" is 0-1
		ctrs    []ctrCgroup
		empty   []string
		entries map[string]map[string]string
		live    map[string]bool
		want    []want
	}{
		{name: "healthy", ctrs: healthy, entries: state, live: map[string]bool{"g": true, "b": true}},
		{name: "exclusive cpuset rewritten", ctrs: with(0, "1-3", "0"), entries: state,
			want: []want{{checkCPUSetDrift, "g/app", SeverityError, `assigned CPUs 2-3 exclusively to g/app, but its cgroup kubepods/podg/a1 has cpuset.cpus "1-3"`}}},
		// A cpuset shrunk to part of its CPUs (a subset, not a superset or a disjoint set) is
		// drift too: the container lost CPUs the kubelet gave it.
		{name: "exclusive cpuset shrunk", ctrs: with(0, "3", "0"), entries: state,
			want: []want{{checkCPUSetDrift, "g/app", SeverityError, `assigned CPUs 2-3 exclusively to g/app, but its cgroup kubepods/podg/a1 has cpuset.cpus "3"`}}},
		{name: "shared cpuset shrunk", ctrs: with(1, "1", "0"), entries: state,
			want: []want{{checkSharedPoolDrift, "b/web", SeverityWarning, `the shared pool, which is 0-1 (defaultCpuSet), but its cgroup kubepods/podb/w1 has cpuset.cpus "1"`}}},
		{name: "shared container on exclusive CPUs", ctrs: with(1, "0-2", "0"), entries: state,
			want: []want{
				{checkOnExclusive, "b/web", SeverityError, "b/web runs on CPUs 2, which the CPU manager assigned exclusively to g/app"},
				{checkSharedPoolDrift, "b/web", SeverityWarning, "the shared pool, which is 0-1 (defaultCpuSet)"},
			}},
		{name: "handed out twice", ctrs: with(1, "3", "0"), entries: map[string]map[string]string{"g": {"app": "2"}, "b": {"web": "3"}},
			want: []want{
				{checkCPUSetDrift, "g/app", SeverityError, "assigned CPUs 2 exclusively to g/app"},
				{checkHandedOutTwice, "g/app", SeverityError, "CPUs 3 are handed out twice: the CPU manager assigned them exclusively to b/web, and they are in the cgroup of g/app"},
			}},
		{name: "leaked, live pods unknown", def: "0", ctrs: with(1, "0", "0"), empty: []string{"gone"}, entries: map[string]map[string]string{"g": {"app": "2-3"}, "gone": {"x": "1"}},
			want: []want{{checkCPUsLeaked, "pod gone", SeverityWarning, "CPUs 1 are held for pod gone, but none of its containers runs on the node (an empty cgroup kubepods/podgone)"}}},
		{name: "leaked, gone from the API", def: "0", ctrs: with(1, "0", "0"), entries: map[string]map[string]string{"g": {"app": "2-3"}, "gone": {"x": "1"}},
			live: map[string]bool{"g": true, "b": true},
			want: []want{
				{"stale-pod", "pod gone", SeverityWarning, "gone from the API server"},
				{checkCPUsLeaked, "pod gone", SeverityWarning, "(no cgroup)"},
			}},
		// The kubelet keeps a live pod's CPUs while its containers are down (they restart on them).
		{name: "live pod not running", def: "0", ctrs: with(1, "0", "0"), entries: map[string]map[string]string{"g": {"app": "2-3"}, "p": {"x": "1"}},
			live: map[string]bool{"g": true, "b": true, "p": true}},
		{name: "mems rewritten", ctrs: with(0, "2-3", "1"), entries: state,
			want: []want{{checkMemsDrift, "g/app", SeverityError, `pinned g/app's memory to NUMA nodes 0, but its cgroup kubepods/podg/a1 has cpuset.mems "1"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.def == "" {
				tc.def = "0-1"
			}
			in := Input{Files: []*decode.Report{cpuReport(tc.def, tc.entries), memReport(blocks)}, LivePods: tc.live,
				Cgroups: cgroupNode(t, tc.ctrs, tc.empty...)}
			res := Diagnose(in)
			var got []want
			for _, f := range res.Findings {
				got = append(got, want{f.Check, f.Entry, f.Severity, f.Message})
			}
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				w := tc.want[i]
				ok = got[i].check == w.check && got[i].entry == w.entry && got[i].severity == w.severity && strings.Contains(got[i].text, w.text)
			}
			if !ok {
				b, _ := json.MarshalIndent(res.Findings, "", " ")
				t.Errorf("findings:\n%s\nwant %+v", b, tc.want)
			}
			for _, s := range res.Skipped {
				if strings.Contains(s, "cgroup") {
					t.Errorf("skipped %q", s)
				}
			}
		})
	}
}

// A container the API says runs but whose cgroup the node lacks is named, not judged.
func TestCgroupMissingIsSkipped(t *testing.T) {
	node := cgroupNode(t, []ctrCgroup{{"g", "app", "a1", "2-3", "0"}})
	node.Missing = append(node.Missing, cgroup.Missing{Pod: "b", Container: "web", ID: "cri-o://w1", Reason: "no cgroup for the pod"})
	res := Diagnose(Input{Files: []*decode.Report{cpuReport("0-1", map[string]map[string]string{"g": {"app": "2-3"}})}, Cgroups: node})
	if len(res.Findings) != 0 || !slices.ContainsFunc(res.Skipped, func(s string) bool {
		return strings.Contains(s, "b/web (cri-o://w1) against its cgroup: no cgroup for the pod")
	}) {
		t.Errorf("findings %+v, skipped %q", res.Findings, res.Skipped)
	}
}

// Offline (a bundle): no container IDs, so only the pods' directories count; a cut dump calls
// nothing leaked.
func TestCgroupOffline(t *testing.T) {
	d, err := cgroup.Parse([]byte(cgroup.Header + "\n@hierarchy 2\n=./kubepods\n=./kubepods/podg\n=./kubepods/podg/a1\n" + cgroup.End + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	node := cgroup.Resolve(d, nil)
	entries := map[string]map[string]string{"g": {"app": "2-3"}, "gone": {"x": "1"}}
	res := Diagnose(Input{Files: []*decode.Report{cpuReport("0", entries)}, Cgroups: node})
	if len(res.Findings) != 1 || res.Findings[0].Check != checkCPUsLeaked || res.Findings[0].Entry != "pod gone" ||
		!slices.ContainsFunc(res.Skipped, func(s string) bool { return strings.Contains(s, "container IDs are unknown") }) {
		t.Errorf("findings %+v, skipped %q", res.Findings, res.Skipped)
	}
	node.Cut = true
	if res := Diagnose(Input{Files: []*decode.Report{cpuReport("0", entries)}, Cgroups: node}); len(res.Findings) != 0 {
		t.Errorf("a cut dump: %+v", res.Findings)
	}
}
