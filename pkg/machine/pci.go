package machine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The PCI dump is each PCI device's NUMA node as sysfs gives it (/sys/bus/pci/devices/<address>/
// numa_node), which the debug pod's shell prints with PCIScript: the NUMA node a device plugin
// reports for a PCI-addressed device (SR-IOV VFs, most NICs and accelerators whose plugin names
// devices by address) is that file's. -1 is the kernel's "no NUMA node".
//
//	@@nodestate-pci v1
//	0000:3b:00.0/numa_node:0
//	0000:af:00.1/numa_node:1
//	0000:00:1f.2/numa_node:-1
//	@@end
const (
	PCIHeader = "@@nodestate-pci v1"
	PCIEnd    = SysfsEnd
	// MaxPCIBytes bounds the dump: a line is under 40 bytes, a large server has a few thousand
	// PCI functions (SR-IOV VFs included).
	MaxPCIBytes = 1 << 19
)

// PCIScript prints the dump (grep -H names each file; -s: a machine without PCI prints nothing).
const PCIScript = `echo "` + PCIHeader + `"; (cd /sys/bus/pci/devices && grep -Hs . */numa_node); echo "` + PCIEnd + `"`

// pciAddressRE is a PCI function address as sysfs names it: domain (4 hex digits, more on
// machines with VMD or many segments), bus, device, function.
var pciAddressRE = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$`)

// IsPCIAddress says whether id names a PCI function the way sysfs does ("0000:3b:00.0").
func IsPCIAddress(id string) bool { return pciAddressRE.MatchString(id) }

// NoNUMANode is a PCI device's numa_node when the kernel knows none.
const NoNUMANode = -1

// ParsePCINUMA reads a PCI dump: each device's NUMA node by address (NoNUMANode for none).
func ParsePCINUMA(text []byte) (map[string]int, error) {
	out := map[string]int{}
	err := eachDumpLine("PCI dump", text, MaxPCIBytes, PCIHeader, PCIEnd, func(line string) error {
		addr, value, ok := strings.Cut(line, "/numa_node:")
		if !ok || !IsPCIAddress(addr) {
			return fmt.Errorf("want <address>/numa_node:<node>, got %q", clip(line))
		}
		node, err := strconv.Atoi(value)
		if err != nil || node < NoNUMANode || node >= maxNodeID {
			return fmt.Errorf("numa_node of %s is %q, want -1 to %d", addr, clip(value), maxNodeID-1)
		}
		if _, dup := out[addr]; dup {
			return fmt.Errorf("%s listed twice", addr)
		}
		out[addr] = node
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// clip keeps an error message about hostile input short.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
