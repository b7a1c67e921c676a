package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// nodeCgroups: pod g's app runs on 1-3 (its state says 2-3), pod b's web in the shared pool on
// 0-1; pod gone has nothing running.
func nodeCgroups(t *testing.T) *cgroup.Node {
	t.Helper()
	d, err := cgroup.Parse([]byte(cgroup.Header + "\n@hierarchy 2\n=./kubepods\n=./kubepods/podg\n=./kubepods/podg/a1\n" +
		"./kubepods/podg/a1/cpuset.cpus:1-3\n./kubepods/podg/a1/cpuset.mems:1\n" +
		"=./kubepods/burstable/podb\n=./kubepods/burstable/podb/w1\n./kubepods/burstable/podb/w1/cpuset.cpus:0-1\n" + cgroup.End + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cgroup.Resolve(d, []cgroup.PodRef{
		{UID: "g", Containers: []cgroup.ContainerRef{{Name: "app", ID: "containerd://a1", Running: true}}},
		{UID: "b", Containers: []cgroup.ContainerRef{{Name: "web", ID: "containerd://w1", Running: true}}},
	})
}

// -o wide shows each container's cgroup value beside the file's.
func TestWideShowsCgroups(t *testing.T) {
	n := nodeCgroups(t)
	var b bytes.Buffer
	cs := &decode.CPUState{PolicyName: "static", DefaultCPUSet: "0-1", Entries: map[string]map[string]string{"g": {"app": "2-3"}, "gone": {"x": "1"}}}
	if err := PrintCPUs(&b, Options{Format: Wide}, []CPUs{{Source: Source{Cgroups: n}, State: cs}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"g      app         2-3    1-3             container", "gone   x           1      (not running)   container",
		"(shared pool)   -   0-1    0-1             shared"} {
		if !strings.Contains(squeeze(b.String()), squeeze(want)) {
			t.Errorf("cpus -o wide lacks %q:\n%s", want, b.String())
		}
	}
	rows := CPURows([]CPUs{{State: cs}})
	for _, r := range rows {
		if r.Cgroup != "" {
			t.Errorf("without cgroups read, row %+v has a cgroup value", r)
		}
	}

	b.Reset()
	ms := &decode.MemoryState{PolicyName: "Static", Entries: map[string]map[string][]decode.MemoryBlock{"g": {"app": {{NUMAAffinity: []int{0}, Type: "memory", Size: 1 << 30}}}}}
	if err := PrintMemory(&b, Options{Format: Wide}, []Memory{{Source: Source{Cgroups: n}, State: ms}}); err != nil {
		t.Fatal(err)
	}
	if want := "g app memory 1Gi 0 1 g"; !strings.Contains(squeeze(b.String()), want) {
		t.Errorf("memory -o wide lacks %q:\n%s", want, b.String())
	}
}

// squeeze folds runs of spaces, so a check does not depend on column widths.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
