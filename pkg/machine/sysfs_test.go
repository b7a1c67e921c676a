package machine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDump(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sysfs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFromSysfs(t *testing.T) {
	l3 := func(i int) *int { return &i }
	cases := []struct {
		file string
		want Machine
	}{{
		file: "kvm-2cpu.txt",
		want: Machine{Schema: Schema,
			Shape: &Shape{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 1, NUMANodes: 1, Online: "0-1"},
			CPUs:  []CPU{{ID: 0, Core: 0}, {ID: 1, Core: 1}},
			NUMA:  []NUMANode{{ID: 0, Memory: 17131296 * 1024, HugePages: []HugePage{{PageSizeKiB: 2048}}}},
		},
	}, {
		// CPU 6 offline: absent from the machine, as cadvisor leaves it out.
		file: "s2c2t2n2-offline.txt",
		want: Machine{Schema: Schema,
			Shape: &Shape{Sockets: 2, CoresPerSocket: 2, ThreadsPerCore: 2, NUMANodes: 2, Online: "0-5,7", Offline: "6"},
			CPUs: []CPU{
				{ID: 0, Core: 0, Socket: 0, NUMA: 0, UncoreCache: l3(0)},
				{ID: 1, Core: 1, Socket: 0, NUMA: 0, UncoreCache: l3(0)},
				{ID: 2, Core: 0, Socket: 1, NUMA: 1, UncoreCache: l3(1)},
				{ID: 3, Core: 1, Socket: 1, NUMA: 1, UncoreCache: l3(1)},
				{ID: 4, Core: 0, Socket: 0, NUMA: 0, UncoreCache: l3(0)},
				{ID: 5, Core: 1, Socket: 0, NUMA: 0, UncoreCache: l3(0)},
				{ID: 7, Core: 1, Socket: 1, NUMA: 1, UncoreCache: l3(1)},
			},
			NUMA: []NUMANode{
				{ID: 0, Memory: 16384000 * 1024, HugePages: []HugePage{{PageSizeKiB: 2048, NumPages: 512}, {PageSizeKiB: 1048576, NumPages: 1}}, Distances: []uint64{10, 21}},
				{ID: 1, Memory: 16384000 * 1024, HugePages: []HugePage{{PageSizeKiB: 2048}, {PageSizeKiB: 1048576}}, Distances: []uint64{21, 10}},
			},
		},
	}, {
		// No NUMA directories: one node 0 with the machine's memory and hugepages.
		file: "no-numa.txt",
		want: Machine{Schema: Schema,
			Shape: &Shape{Sockets: 1, CoresPerSocket: 2, ThreadsPerCore: 2, NUMANodes: 1, Online: "0-3"},
			CPUs:  []CPU{{ID: 0}, {ID: 1}, {ID: 2, Core: 1}, {ID: 3, Core: 1}},
			NUMA:  []NUMANode{{ID: 0, Memory: 8000000 * 1024, HugePages: []HugePage{{PageSizeKiB: 2048, NumPages: 64}}}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			m, err := FromSysfs(readDump(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(m)
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			// What collect writes must parse back as a machine.json.
			if _, err := Parse(got); err != nil {
				t.Errorf("machine.json does not parse back: %v", err)
			}
		})
	}
}

func TestFromSysfsRefuses(t *testing.T) {
	good := string(readDump(t, "s2c2t2n2-offline.txt"))
	cases := map[string]struct{ text, want string }{
		"no header":        {strings.Replace(good, SysfsHeader, "", 1), "no \"@@nodestate-sysfs v1\" header"},
		"cut short":        {strings.Replace(good, SysfsEnd, "", 1), "cut short"},
		"no online list":   {strings.Replace(good, "cpu/online:0-5,7\n", "", 1), "no online CPU list"},
		"no topology":      {strings.Replace(good, "cpu/cpu7/topology/core_id:1\n", "", 1), "CPU 7 is online but has no topology"},
		"cpu on no node":   {strings.Replace(good, "2-3,7", "2-3", 1), "CPU 7 is online but on no NUMA node"},
		"cpu on two nodes": {strings.Replace(good, "2-3,7", "2-3,5,7", 1), "CPU 5 is on NUMA nodes 0 and 1"},
		"node no memory":   {strings.Replace(good, "node/node1/meminfo:Node 1 MemTotal:       16384000 kB\n", "", 1), "no MemTotal for NUMA node 1"},
		"huge range":       {strings.Replace(good, "cpu/online:0-5,7", "cpu/online:0-4000000000", 1), "bad CPU list"},
		"twice":            {strings.Replace(good, "cpu/cpu0/cache/index3/id:0\n", "cpu/cpu0/cache/index3/id:0\ncpu/cpu0/cache/index3/id:0\n", 1), "listed twice"},
		"stranger":         {strings.Replace(good, "@@end", "cpu/cpu0/foo:1\n@@end", 1), "unexpected"},
		"node mismatch":    {strings.Replace(good, "Node 1 MemTotal", "Node 0 MemTotal", 1), "unexpected"},
		"bad distance":     {strings.Replace(good, "distance:10 21", "distance:10 x", 1), "distance \"x\""},
		"too big":          {good + strings.Repeat(" ", MaxSysfsBytes), "over the"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromSysfs([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The script's output on this very machine parses (sysfs is readable wherever tests run).
func TestSysfsScriptHere(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skip("no sysfs here")
	}
	out, err := runShell(SysfsScript)
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	m, err := FromSysfs(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(m.CPUs) == 0 || m.MemoryCapacity() == 0 {
		t.Errorf("empty machine from\n%s", out)
	}
}

func FuzzFromSysfs(f *testing.F) {
	for _, n := range []string{"kvm-2cpu.txt", "s2c2t2n2-offline.txt", "no-numa.txt"} {
		f.Add(readDump(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := FromSysfs(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("FromSysfs returned an invalid machine: %v", err)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("machine.json does not parse back: %v", err)
		}
	})
}
