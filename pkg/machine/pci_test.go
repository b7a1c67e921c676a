package machine

import (
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const pciDump = PCIHeader + `
0000:3b:00.0/numa_node:0
0000:af:00.1/numa_node:1
10000:01:00.0/numa_node:1
0000:00:1f.2/numa_node:-1
` + PCIEnd + "\n"

func TestParsePCINUMA(t *testing.T) {
	got, err := ParsePCINUMA([]byte(pciDump))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"0000:3b:00.0": 0, "0000:af:00.1": 1, "10000:01:00.0": 1, "0000:00:1f.2": NoNUMANode}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	empty, err := ParsePCINUMA([]byte(PCIHeader + "\n" + PCIEnd + "\n"))
	if err != nil || len(empty) != 0 {
		t.Errorf("a machine without PCI: %v, %v", empty, err)
	}
}

func TestParsePCINUMARefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no header":       "0000:3b:00.0/numa_node:0\n" + PCIEnd,
		"cut short":       PCIHeader + "\n0000:3b:00.0/numa_node:0\n",
		"not an address":  PCIHeader + "\n../../etc/numa_node:0\n" + PCIEnd,
		"uppercase hex":   PCIHeader + "\n0000:3B:00.0/numa_node:0\n" + PCIEnd,
		"node too large":  PCIHeader + "\n0000:3b:00.0/numa_node:1024\n" + PCIEnd,
		"node below -1":   PCIHeader + "\n0000:3b:00.0/numa_node:-2\n" + PCIEnd,
		"node not number": PCIHeader + "\n0000:3b:00.0/numa_node:x\n" + PCIEnd,
		"listed twice":    PCIHeader + "\n0000:3b:00.0/numa_node:0\n0000:3b:00.0/numa_node:1\n" + PCIEnd,
		"over the limit":  PCIHeader + "\n" + strings.Repeat("#", MaxPCIBytes) + "\n" + PCIEnd,
	} {
		if got, err := ParsePCINUMA([]byte(text)); err == nil {
			t.Errorf("%s: no error, got %v", name, got)
		}
	}
}

func TestIsPCIAddress(t *testing.T) {
	for id, want := range map[string]bool{
		"0000:3b:00.0": true, "10000:e1:1f.7": true, "0000:3b:00.8": false, "0000:3b:20.0": false,
		"GPU-8d2a4f31-0b3c-4a55-9e6f-6c1f5e0a7b11": false, "gpu-0": false, "": false, "0000:3b:00.0/..": false,
	} {
		if got := IsPCIAddress(id); got != want {
			t.Errorf("IsPCIAddress(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestPCIScriptHere runs the script on this machine's sysfs, the very one a debug pod sees, and
// checks every PCI device is read.
func TestPCIScriptHere(t *testing.T) {
	devices, err := filepath.Glob("/sys/bus/pci/devices/*/numa_node")
	if err != nil || len(devices) == 0 {
		t.Skip("no PCI devices in this machine's sysfs")
	}
	out, err := runShell(PCIScript)
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	got, err := ParsePCINUMA(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != len(devices) {
		t.Errorf("%d devices read, sysfs has %d", len(got), len(devices))
	}
	for _, path := range devices {
		addr := filepath.Base(filepath.Dir(path))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(b)); want != strconv.Itoa(got[addr]) {
			t.Errorf("%s: numa_node %s, read %d", addr, want, got[addr])
		}
	}
}

func FuzzParsePCINUMA(f *testing.F) {
	f.Add([]byte(pciDump))
	f.Add([]byte(PCIHeader + "\n" + PCIEnd))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParsePCINUMA(b)
		if err != nil {
			return
		}
		for addr, node := range got {
			if !IsPCIAddress(addr) || node < NoNUMANode || node >= maxNodeID {
				t.Fatalf("accepted %q -> %d", addr, node)
			}
		}
	})
}
