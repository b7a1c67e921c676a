// Package publishedtest makes published node states (nodestate.PublishedState) for the
// consumers' tests (the scheduler plugin's units, the live scheduler test) from a real
// kubelet's files: examples/admit-node, written by kubelet v1.37.1 (2 sockets, 2 NUMA nodes of
// 8 cores x 2 threads, static CPU policy with full-pcpus-only and strict-cpu-reservation, CPUs
// 0 and 16 reserved, memory manager Static, one pod holding CPUs 1,17 on NUMA node 0).
package publishedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// SysfsSection is the sysfs section a node reader prints for m.
func SysfsSection(m *machine.Machine) []byte {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("%s", machine.SysfsHeader)
	line("cpu/online:%s", m.Online().String())
	for _, c := range m.CPUs {
		line("cpu/cpu%d/topology/core_id:%d", c.ID, c.Core)
		line("cpu/cpu%d/topology/physical_package_id:%d", c.ID, c.Socket)
	}
	var total uint64
	for _, n := range m.NUMA {
		var cpus, distances []string
		for _, c := range m.CPUs {
			if c.NUMA == n.ID {
				cpus = append(cpus, fmt.Sprint(c.ID))
			}
		}
		for _, v := range n.Distances {
			distances = append(distances, fmt.Sprint(v))
		}
		line("node/node%d/cpulist:%s", n.ID, strings.Join(cpus, ","))
		line("node/node%d/distance:%s", n.ID, strings.Join(distances, " "))
		for _, h := range n.HugePages {
			line("node/node%d/hugepages/hugepages-%dkB/nr_hugepages:%d", n.ID, h.PageSizeKiB, h.NumPages)
		}
		line("node/node%d/meminfo:Node %d MemTotal:       %d kB", n.ID, n.ID, n.Memory/1024)
		total += n.Memory
	}
	line("/proc/meminfo:MemTotal:       %d kB", total/1024)
	line("%s", machine.SysfsEnd)
	return []byte(b.String())
}

// Example is examples/admit-node, from dir (the repository's root).
type Example struct{ Root string }

func (e Example) read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.Root, "examples", "admit-node", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sysfs is the example's machine as its sysfs section, checked to read back as that machine.
func (e Example) Sysfs(t testing.TB) []byte {
	t.Helper()
	m, err := machine.Parse(e.read(t, "machine.json"))
	if err != nil {
		t.Fatal(err)
	}
	dump := SysfsSection(m)
	back, err := machine.FromSysfs(dump)
	if err != nil {
		t.Fatalf("the example's sysfs section: %v", err)
	}
	if !slices.Equal(back.CPUs, m.CPUs) || len(back.NUMA) != len(m.NUMA) || back.NUMA[0].Memory != m.NUMA[0].Memory {
		t.Fatalf("the example's sysfs section reads as another machine: %+v", back)
	}
	return dump
}

// State is node's published state: the example's machine, its kubelet config with the
// topology manager policy given, and its checkpoints when loaded (else none: a fresh node),
// read at readAt.
func (e Example) State(t testing.TB, node string, loaded bool, topologyPolicy string, readAt time.Time) *nodestate.PublishedState {
	t.Helper()
	config := strings.Replace(string(e.read(t, "kubelet-config.yaml")), "topologyManagerPolicy: restricted", "topologyManagerPolicy: "+topologyPolicy, 1)
	s := &nodestate.PublishedState{Format: nodestate.PublishedFormat, Node: node, ReadAt: readAt.UTC().Truncate(time.Second),
		KubeletVersion: "v1.37.1", KubeletVersionFrom: "test", KubeletRootDir: "/var/lib/kubelet",
		KubeletConfig: []byte(config), KubeletConfigFrom: "/var/lib/kubelet/config.yaml",
		Files: map[string][]byte{}, Sections: map[string][]byte{machine.SysfsHeader: e.Sysfs(t)}}
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		if loaded {
			s.Files[f] = e.read(t, f)
		} else {
			s.Missing = append(s.Missing, f)
		}
	}
	return s
}

// ConfigMap is s as the publisher writes it, in namespace.
func ConfigMap(t testing.TB, s *nodestate.PublishedState, namespace string) *corev1.ConfigMap {
	t.Helper()
	b, err := nodestate.EncodePublished(s)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Node, Namespace: namespace,
		Labels: map[string]string{nodestate.PublishedLabel: "true"},
		Annotations: map[string]string{nodestate.FingerprintAnnotation: s.Fingerprint(),
			nodestate.ReadAtAnnotation: s.ReadAt.Format(time.RFC3339)}},
		BinaryData: map[string][]byte{nodestate.PublishedDataKey: b}}
}

// ReportingPods is a PodResources section whose List names pods (namespace/name), with no device.
func ReportingPods(pods ...*corev1.Pod) []byte {
	var list []string
	for _, p := range pods {
		list = append(list, fmt.Sprintf(`{"namespace":%q,"name":%q,"containers":[{"name":"app"}]}`, p.Namespace, p.Name))
	}
	return []byte(machine.PodResourcesHeader + "\n" + `{"allocatable":[],"pods":[` + strings.Join(list, ",") + "]}\n" + machine.PodResourcesEnd)
}
