package machine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// The sysfs dump is what the debug pod's shell prints from /sys/devices/system (SysfsScript):
// grep's "path:content" lines, between a header and an end marker so that a cut dump is told
// from a small machine. Sysfs files are not tarred (they all claim 4096 bytes) nor read with the
// shell's read (some, like nodeN/cpulist, answer a 1-byte read with nothing); grep reads them
// whole. Paths are relative to /sys/devices/system, except the two machine-wide fallbacks:
//
//	@@nodestate-sysfs v1
//	cpu/online:0-7
//	cpu/offline:8-15                                   (absent when empty)
//	cpu/cpu3/topology/core_id:3
//	cpu/cpu3/topology/physical_package_id:0
//	cpu/cpu3/cache/index3/id:0                         (absent on some machines)
//	node/node0/cpulist:0-7                             (absent for a memory-only node)
//	node/node0/meminfo:Node 0 MemTotal:  16318396 kB
//	node/node0/distance:10 21                           (cadvisor's Node.Distances)
//	node/node0/hugepages/hugepages-2048kB/nr_hugepages:0
//	/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages:0   (machine-wide)
//	/proc/meminfo:MemTotal:  16318396 kB                       (machine-wide)
//	@@end
const (
	SysfsHeader = "@@nodestate-sysfs v1"
	SysfsEnd    = "@@end"
)

// Bounds of what FromSysfs accepts: the dump comes from a node we do not trust to be healthy.
const (
	MaxSysfsBytes = 1 << 20
	maxCPUID      = 1 << 14 // the kernel's NR_CPUS tops out at 8192
	maxNodeID     = 1 << 10 // MAX_NUMNODES is 1024
)

// SysfsScript prints the dump on its standard output with one grep (-s: a glob that matched
// nothing is no error worth a line): the sysfs values are one line without a colon each (any
// non-empty line is kept), the meminfo files give their MemTotal line only. One process and no
// subshell: the script runs once per node of a fan-out, and on kwok, where every node's exec
// runs on the control plane's host, each process forked costs the whole fleet's time. It
// returns to the caller's working directory. Paths are absolute: sysfs is the host's in any
// container.
const SysfsScript = `echo "` + SysfsHeader + `"; nodestate_pwd=$PWD; if cd /sys/devices/system 2>/dev/null; then ` +
	`grep -Hs -e MemTotal -e '^[^:][^:]*$' cpu/online cpu/offline cpu/cpu[0-9]*/topology/core_id cpu/cpu[0-9]*/topology/physical_package_id ` +
	`cpu/cpu[0-9]*/cache/index3/id node/node[0-9]*/cpulist node/node[0-9]*/distance node/node[0-9]*/hugepages/hugepages-*kB/nr_hugepages ` +
	`/sys/kernel/mm/hugepages/hugepages-*kB/nr_hugepages node/node[0-9]*/meminfo /proc/meminfo; cd "$nodestate_pwd" || exit 1; fi; ` +
	`echo "` + SysfsEnd + `"`

// FromSysfs builds the machine from a sysfs dump, as cadvisor's MachineInfo would: the online
// CPUs with their core, socket, NUMA node and L3 id; each NUMA node's MemTotal and hugepages;
// without NUMA directories, one node 0 with the whole machine's memory and hugepages.
func FromSysfs(text []byte) (*Machine, error) {
	d := sysfsDump{cpus: map[int]*cpuDump{}, nodes: map[int]*nodeDump{}}
	if err := eachDumpLine("sysfs dump", text, MaxSysfsBytes, SysfsHeader, SysfsEnd, d.line); err != nil {
		return nil, err
	}
	return d.machine()
}

type cpuDump struct {
	core, socket, l3 *int
}

type nodeDump struct {
	cpus      cpuset.CPUSet
	memKiB    *uint64
	hugePage  map[uint64]uint64
	distances []uint64
}

type sysfsDump struct {
	online, offline *cpuset.CPUSet
	cpus            map[int]*cpuDump
	nodes           map[int]*nodeDump
	globalHuge      map[uint64]uint64
	memKiB          *uint64
}

func (d *sysfsDump) node(id int) *nodeDump {
	n, ok := d.nodes[id]
	if !ok {
		n = &nodeDump{hugePage: map[uint64]uint64{}}
		d.nodes[id] = n
	}
	return n
}

// line takes one "path:content" line.
func (d *sysfsDump) line(line string) error {
	path, value, ok := strings.Cut(line, ":")
	if !ok {
		return fmt.Errorf("unexpected %q", truncate(line))
	}
	value = strings.TrimSpace(value)
	elems := strings.Split(path, "/")
	switch {
	case path == "cpu/online" || path == "cpu/offline":
		set, err := parseList(value, maxCPUID)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if path == "cpu/online" {
			d.online = &set
		} else {
			d.offline = &set
		}
	case len(elems) >= 4 && elems[0] == "cpu" && strings.HasPrefix(elems[1], "cpu"):
		id, err := number(strings.TrimPrefix(elems[1], "cpu"), 0, maxCPUID)
		if err != nil {
			return fmt.Errorf("%s: %w", truncate(path), err)
		}
		// core_id and physical_package_id are -1 on some arm machines.
		v, err := number(value, -1, maxCPUID)
		if err != nil {
			return fmt.Errorf("%s: %w", truncate(path), err)
		}
		c := d.cpus[id]
		if c == nil {
			c = &cpuDump{}
			d.cpus[id] = c
		}
		var field **int
		switch strings.Join(elems[2:], "/") {
		case "topology/core_id":
			field = &c.core
		case "topology/physical_package_id":
			field = &c.socket
		case "cache/index3/id":
			field = &c.l3
		default:
			return fmt.Errorf("unexpected %q", truncate(path))
		}
		if *field != nil {
			return fmt.Errorf("%s listed twice", truncate(path))
		}
		*field = &v
	case len(elems) >= 3 && elems[0] == "node" && strings.HasPrefix(elems[1], "node"):
		id, err := number(strings.TrimPrefix(elems[1], "node"), 0, maxNodeID)
		if err != nil {
			return fmt.Errorf("%s: %w", truncate(path), err)
		}
		n := d.node(id)
		switch {
		case len(elems) == 3 && elems[2] == "cpulist":
			if n.cpus, err = parseList(value, maxCPUID); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		case len(elems) == 3 && elems[2] == "meminfo":
			// "Node 0 MemTotal:       16318396 kB"
			f := strings.Fields(value)
			if len(f) != 5 || f[0] != "Node" || f[1] != strconv.Itoa(id) || f[2] != "MemTotal:" || f[4] != "kB" {
				return fmt.Errorf("%s: unexpected %q", path, truncate(value))
			}
			if n.memKiB != nil {
				return fmt.Errorf("%s listed twice", path)
			}
			if n.memKiB, err = kib(f[3]); err != nil {
				return err
			}
		case len(elems) == 3 && elems[2] == "distance":
			if n.distances != nil {
				return fmt.Errorf("%s listed twice", path)
			}
			f := strings.Fields(value)
			if len(f) > maxNodeID {
				return fmt.Errorf("%s: over %d distances", path, maxNodeID)
			}
			n.distances = make([]uint64, 0, len(f))
			for _, v := range f {
				d, err := strconv.ParseUint(v, 10, 32)
				if err != nil {
					return fmt.Errorf("%s: distance %q", path, truncate(v))
				}
				n.distances = append(n.distances, d)
			}
		case len(elems) == 5 && elems[2] == "hugepages" && elems[4] == "nr_hugepages":
			return hugePages(n.hugePage, elems[3], value)
		default:
			return fmt.Errorf("unexpected %q", truncate(path))
		}
	case strings.HasPrefix(path, "/sys/kernel/mm/hugepages/") && len(elems) == 7 && elems[6] == "nr_hugepages":
		if d.globalHuge == nil {
			d.globalHuge = map[uint64]uint64{}
		}
		return hugePages(d.globalHuge, elems[5], value)
	case path == "/proc/meminfo":
		f := strings.Fields(value)
		if len(f) != 3 || f[0] != "MemTotal:" || f[2] != "kB" {
			return fmt.Errorf("%s: unexpected %q", path, truncate(value))
		}
		if d.memKiB != nil {
			return fmt.Errorf("%s listed twice", path)
		}
		var err error
		if d.memKiB, err = kib(f[1]); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unexpected %q", truncate(path))
	}
	return nil
}

// hugePages records "hugepages-2048kB" -> count in pool.
func hugePages(pool map[uint64]uint64, dir, value string) error {
	size, hasPrefix := strings.CutPrefix(dir, "hugepages-")
	size, hasSuffix := strings.CutSuffix(size, "kB")
	if !hasPrefix || !hasSuffix {
		return fmt.Errorf("hugepage size %q", truncate(dir))
	}
	kb, err := kib(size)
	if err != nil || *kb == 0 {
		return fmt.Errorf("hugepage size %q", truncate(dir))
	}
	count, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		return fmt.Errorf("hugepage count %q", truncate(value))
	}
	if _, dup := pool[*kb]; dup {
		return fmt.Errorf("hugepages %s listed twice", truncate(dir))
	}
	pool[*kb] = count
	return nil
}

func (d *sysfsDump) machine() (*Machine, error) {
	if d.online == nil {
		return nil, fmt.Errorf("sysfs dump: no online CPU list")
	}
	m := &Machine{Schema: Schema, CPUs: []CPU{}, NUMA: []NUMANode{}}
	numaOf := map[int]int{}
	nodeIDs := make([]int, 0, len(d.nodes))
	for id := range d.nodes {
		nodeIDs = append(nodeIDs, id)
	}
	sort.Ints(nodeIDs)
	for _, id := range nodeIDs {
		n := d.nodes[id]
		for _, c := range n.cpus.List() {
			if other, dup := numaOf[c]; dup {
				return nil, fmt.Errorf("sysfs dump: CPU %d is on NUMA nodes %d and %d", c, other, id)
			}
			numaOf[c] = id
		}
		if n.memKiB == nil {
			return nil, fmt.Errorf("sysfs dump: no MemTotal for NUMA node %d", id)
		}
		m.NUMA = append(m.NUMA, NUMANode{ID: id, Memory: *n.memKiB * 1024, HugePages: pages(n.hugePage), Distances: n.distances})
	}
	if len(d.nodes) == 0 {
		// No NUMA directories (a kernel without NUMA): cadvisor reports one node 0 holding
		// every CPU and the machine's memory.
		if d.memKiB == nil {
			return nil, fmt.Errorf("sysfs dump: no NUMA nodes and no MemTotal")
		}
		m.NUMA = append(m.NUMA, NUMANode{ID: 0, Memory: *d.memKiB * 1024, HugePages: pages(d.globalHuge)})
	}
	for _, id := range d.online.List() {
		cd, ok := d.cpus[id]
		if !ok || cd.core == nil || cd.socket == nil {
			return nil, fmt.Errorf("sysfs dump: CPU %d is online but has no topology", id)
		}
		c := CPU{ID: id, Core: *cd.core, Socket: *cd.socket, UncoreCache: cd.l3}
		if len(d.nodes) > 0 {
			n, ok := numaOf[id]
			if !ok {
				return nil, fmt.Errorf("sysfs dump: CPU %d is online but on no NUMA node", id)
			}
			c.NUMA = n
		}
		m.CPUs = append(m.CPUs, c)
	}
	if len(m.CPUs) == 0 {
		return nil, fmt.Errorf("sysfs dump: no online CPU")
	}
	m.Shape = shapeOf(m, d.offline)
	return m, m.Validate()
}

// shapeOf summarises the machine as the vectors' shape does.
func shapeOf(m *Machine, offline *cpuset.CPUSet) *Shape {
	type core struct{ socket, core int }
	threads := map[core]int{}
	for _, c := range m.CPUs {
		threads[core{c.Socket, c.Core}]++
	}
	perCore := 0
	for _, n := range threads {
		perCore = max(perCore, n)
	}
	s := &Shape{Sockets: m.Sockets(), ThreadsPerCore: perCore, NUMANodes: len(m.NodeIDs()), Online: m.Online().String()}
	if s.Sockets > 0 {
		s.CoresPerSocket = len(threads) / s.Sockets
	}
	if offline != nil {
		s.Offline = offline.String()
	}
	return s
}

func pages(pool map[uint64]uint64) []HugePage {
	if len(pool) == 0 {
		return nil
	}
	out := make([]HugePage, 0, len(pool))
	for size, n := range pool {
		out = append(out, HugePage{PageSizeKiB: size, NumPages: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PageSizeKiB < out[j].PageSizeKiB })
	return out
}

// ParseCPUList parses a CPU list ("0-3,8-11", or "" for none) as k8s.io/utils/cpuset does, with
// its errors, after checking every ID is one a machine can have (the kernel's NR_CPUS tops out
// at 8192), so a hostile "0-4000000000" cannot make cpuset allocate it.
func ParseCPUList(s string) (cpuset.CPUSet, error) {
	for _, part := range strings.Split(s, ",") {
		for _, num := range strings.SplitN(part, "-", 2) {
			if n, err := strconv.Atoi(num); err == nil && (n < 0 || n > maxCPUID) {
				return cpuset.New(), fmt.Errorf("CPU list %q names CPU %d, beyond any machine (at most %d CPUs)", truncate(s), n, maxCPUID)
			}
		}
	}
	return cpuset.Parse(s)
}

// parseList parses a kernel CPU list, bounded as ParseCPUList.
func parseList(s string, maxID int) (cpuset.CPUSet, error) {
	for _, part := range strings.Split(s, ",") {
		for _, num := range strings.SplitN(part, "-", 2) {
			if num == "" && s == "" {
				continue
			}
			if n, err := strconv.Atoi(num); err != nil || n < 0 || n > maxID {
				return cpuset.CPUSet{}, fmt.Errorf("bad CPU list %q", truncate(s))
			}
		}
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.CPUSet{}, fmt.Errorf("bad CPU list %q", truncate(s))
	}
	return set, nil
}

func number(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("bad number %q", truncate(s))
	}
	return n, nil
}

func kib(s string) (*uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > 1<<50 { // 1 EiB: beyond any machine, and *1024 cannot overflow
		return nil, fmt.Errorf("bad size %q", truncate(s))
	}
	return &n, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// eachDumpLine calls line for each non-empty line of a dump between its header and end lines,
// and fails on a dump over maxBytes, without its header, or cut short (no end line).
func eachDumpLine(what string, text []byte, maxBytes int, header, end string, line func(string) error) error {
	if len(text) > maxBytes {
		return fmt.Errorf("%s: %d bytes, over the %d-byte limit", what, len(text), maxBytes)
	}
	state := 0 // 0 before the header, 1 inside, 2 after the end
	for i, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case state == 0 && l == header:
			state = 1
		case state != 1, l == "":
		case l == end:
			state = 2
		default:
			if err := line(l); err != nil {
				return fmt.Errorf("%s line %d: %w", what, i+1, err)
			}
		}
	}
	switch state {
	case 0:
		return fmt.Errorf("%s: no %q header", what, header)
	case 1:
		return fmt.Errorf("%s: cut short (no %q)", what, end)
	}
	return nil
}
