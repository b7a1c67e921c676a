// Package machine is a node's hardware as the kubelet's resource managers see it (cadvisor's
// MachineInfo): online CPUs with their core, socket and NUMA node, and each NUMA node's memory
// and hugepages. Its file form is machine.json, schema "statevec/machine/v1", which `collect`
// writes from sysfs and the kubelet-start vectors carry. A pure package: bytes in, model out.
package machine

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"
)

// Schema is the machine.json schema written; SchemaAdmission (the admission vectors') is a
// superset that is read too.
const (
	Schema          = "statevec/machine/v1"
	SchemaAdmission = "admitvec/machine/v1"
)

// Machine is one node's hardware.
type Machine struct {
	Schema string `json:"schema"`
	// Shape is an informational summary; the checks use CPUs and NUMA.
	Shape *Shape `json:"shape,omitempty"`
	// CPUs are the ONLINE logical CPUs only (cadvisor does not report offline ones).
	CPUs []CPU `json:"cpus"`
	// NUMA lists every NUMA node, memory-only ones included.
	NUMA []NUMANode `json:"numa"`
	// Kubelet is the kubelet config the vectors carry beside the machine; doctor takes its
	// config from a KubeletConfiguration instead, so this is kept raw.
	Kubelet json.RawMessage `json:"kubelet,omitempty"`
}

// Shape summarises a machine for people.
type Shape struct {
	Sockets        int    `json:"sockets,omitempty"`
	CoresPerSocket int    `json:"coresPerSocket,omitempty"`
	ThreadsPerCore int    `json:"threadsPerCore,omitempty"`
	NUMANodes      int    `json:"numaNodes,omitempty"`
	Online         string `json:"online"`
	Offline        string `json:"offline"`
}

// CPU is one online logical CPU.
type CPU struct {
	ID int `json:"id"`
	// Core is the physical core id within the socket (threads of one core share numa, socket
	// and core).
	Core   int `json:"core"`
	Socket int `json:"socket"`
	NUMA   int `json:"numa"`
	// UncoreCache is the L3 (uncore) cache id, when known.
	UncoreCache *int `json:"uncoreCache,omitempty"`
}

// NUMANode is one NUMA node's memory.
type NUMANode struct {
	ID int `json:"id"`
	// Memory is MemTotal in bytes.
	Memory    uint64     `json:"memory"`
	HugePages []HugePage `json:"hugepages,omitempty"`
	// Distances are the node's distances to every node, by node id (cadvisor Node.Distances,
	// sysfs node*/distance); nil when unknown.
	Distances []uint64 `json:"distances,omitempty"`
}

// HugePage is the pool of one page size on one node (a size with 0 pages still counts).
type HugePage struct {
	PageSizeKiB uint64 `json:"pageSizeKiB"`
	NumPages    uint64 `json:"numPages"`
}

// Parse decodes and checks a machine.json.
func Parse(b []byte) (*Machine, error) {
	var m Machine
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("machine file: %w", err)
	}
	if m.Schema != Schema && m.Schema != SchemaAdmission {
		return nil, fmt.Errorf("machine file: schema %q, want %q", m.Schema, Schema)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("machine file: %w", err)
	}
	return &m, nil
}

// Validate rejects what no sysfs can show: a CPU listed twice, a NUMA node listed twice.
func (m *Machine) Validate() error {
	seen := map[int]bool{}
	for _, c := range m.CPUs {
		if c.ID < 0 || seen[c.ID] {
			return fmt.Errorf("cpu %d listed twice or negative", c.ID)
		}
		seen[c.ID] = true
	}
	nodes := map[int]bool{}
	for _, n := range m.NUMA {
		if nodes[n.ID] {
			return fmt.Errorf("NUMA node %d listed twice", n.ID)
		}
		nodes[n.ID] = true
	}
	return nil
}

// Online is the set of online CPUs.
func (m *Machine) Online() cpuset.CPUSet {
	ids := make([]int, len(m.CPUs))
	for i, c := range m.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

// Sockets is the number of distinct sockets (cadvisor's NumSockets).
func (m *Machine) Sockets() int {
	s := map[int]bool{}
	for _, c := range m.CPUs {
		s[c.Socket] = true
	}
	return len(s)
}

// MemoryCapacity is the sum of the NUMA nodes' memory (cadvisor's MemoryCapacity).
func (m *Machine) MemoryCapacity() uint64 {
	var t uint64
	for _, n := range m.NUMA {
		t += n.Memory
	}
	return t
}

// Node returns the NUMA node with that id.
func (m *Machine) Node(id int) (NUMANode, bool) {
	for _, n := range m.NUMA {
		if n.ID == id {
			return n, true
		}
	}
	return NUMANode{}, false
}

// NodeIDs lists the NUMA node ids, sorted; nodes that only CPUs name count too (cadvisor lists
// every node that has CPUs or memory).
func (m *Machine) NodeIDs() []int {
	set := map[int]bool{}
	for _, n := range m.NUMA {
		set[n.ID] = true
	}
	for _, c := range m.CPUs {
		set[c.NUMA] = true
	}
	out := make([]int, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// Summary is a one-line description, e.g. "32 CPUs (0-31) on 2 sockets, 2 NUMA nodes".
func (m *Machine) Summary() string {
	return fmt.Sprintf("%s (%s) on %s, %s", plural(len(m.CPUs), "CPU"), m.Online(), plural(m.Sockets(), "socket"), plural(len(m.NodeIDs()), "NUMA node"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
