package machine

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The NVIDIA dump is what the NVIDIA driver says of each GPU it drives, from
// /proc/driver/nvidia/gpus/<address>/information: its UUID, PCI address and device minor, the
// three facts that map the NVIDIA device plugins' device IDs (GPU-<uuid>, <uuid>::<n>,
// nvidia<minor>) to the PCI address whose sysfs numa_node those plugins report. A container's
// /proc/driver is the host's (procfs's driver entries are not namespaced, and no runtime's
// defaults mask them), so the debug pod's shell prints it with NVIDIAScript:
//
//	@@nodestate-nvidia v1
//	0000:19:00.0/information:GPU UUID: 	 GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9
//	0000:19:00.0/information:Bus Location: 	 0000:19:00.0
//	0000:19:00.0/information:Device Minor: 	 0
//	@@end
//
// A node without the driver prints the header and the end only: no GPU.
const (
	NVIDIAHeader = "@@nodestate-nvidia v1"
	NVIDIAEnd    = SysfsEnd
	// NVIDIAGPUsDir is where the driver lists its GPUs, one directory per PCI address.
	NVIDIAGPUsDir = "/proc/driver/nvidia/gpus"
	// MaxNVIDIABytes bounds the dump: a GPU's three lines are under 200 bytes, and a node
	// drives at most a few dozen GPUs (64 KiB holds over 300).
	MaxNVIDIABytes = 1 << 16
)

// NVIDIAScript prints the dump: one grep over every GPU's file (-H names it, -s: no driver, no
// file, prints nothing), only the three lines read, so the rest of the file (IRQ, VBIOS) never
// leaves the node.
const NVIDIAScript = `echo "` + NVIDIAHeader + `"; (cd ` + NVIDIAGPUsDir + ` && grep -Hs -e '^GPU UUID:' -e '^Bus Location:' -e '^Device Minor:' */information); echo "` + NVIDIAEnd + `"`

// NVIDIAKeys are the lines NVIDIAScript keeps, as the file starts them.
var NVIDIAKeys = []string{"GPU UUID:", "Bus Location:", "Device Minor:"}

// NVIDIAGPU is one GPU the driver drives.
type NVIDIAGPU struct {
	// UUID is nvidia-smi's and NVML's, "GPU-" and 36 hex digits and dashes.
	UUID string
	// BusID is its PCI address as sysfs names it ("0000:19:00.0").
	BusID string
	// Minor is its device minor (/dev/nvidia<minor>).
	Minor int
}

// nvidiaUUIDRE is a GPU UUID as the driver prints it (lowercase hex, 8-4-4-4-12).
var nvidiaUUIDRE = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// IsNVIDIAGPUUUID says whether id is a whole GPU's UUID as the driver and NVML name it.
func IsNVIDIAGPUUUID(id string) bool { return nvidiaUUIDRE.MatchString(id) }

// maxNVIDIAMinor: minors 0-254 are GPUs; 255 is /dev/nvidiactl.
const maxNVIDIAMinor = 254

// ParseNVIDIAGPUs reads an NVIDIA dump: every GPU, sorted by address (empty, not nil, for a node
// without the driver). It is strict: each GPU's three lines exactly once, its Bus Location its
// directory's name, no UUID or minor twice, nothing else.
func ParseNVIDIAGPUs(text []byte) ([]NVIDIAGPU, error) {
	type partial struct {
		uuid, bus string
		minor     int
		seen      map[string]bool
	}
	gpus := map[string]*partial{}
	err := eachDumpLine("NVIDIA dump", text, MaxNVIDIABytes, NVIDIAHeader, NVIDIAEnd, func(line string) error {
		dir, rest, ok := strings.Cut(line, "/information:")
		if !ok || !IsPCIAddress(dir) {
			return fmt.Errorf("want <address>/information:<key>: <value>, got %q", clip(line))
		}
		key := ""
		for _, k := range NVIDIAKeys {
			if strings.HasPrefix(rest, k) {
				key = k
			}
		}
		if key == "" {
			return fmt.Errorf("%s: unexpected line %q", dir, clip(rest))
		}
		value := strings.TrimSpace(strings.TrimPrefix(rest, key))
		g := gpus[dir]
		if g == nil {
			g = &partial{seen: map[string]bool{}}
			gpus[dir] = g
		}
		if g.seen[key] {
			return fmt.Errorf("%s: %q listed twice", dir, key)
		}
		g.seen[key] = true
		switch key {
		case "GPU UUID:":
			if !IsNVIDIAGPUUUID(value) {
				return fmt.Errorf("%s: GPU UUID %q is not GPU-<uuid>", dir, clip(value))
			}
			g.uuid = value
		case "Bus Location:":
			if value != dir {
				return fmt.Errorf("%s: Bus Location %q is not its directory's", dir, clip(value))
			}
			g.bus = value
		default:
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > maxNVIDIAMinor || strconv.Itoa(n) != value {
				return fmt.Errorf("%s: Device Minor %q, want 0 to %d", dir, clip(value), maxNVIDIAMinor)
			}
			g.minor = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]NVIDIAGPU, 0, len(gpus))
	uuids, minors := map[string]bool{}, map[int]bool{}
	for _, dir := range slices.Sorted(maps.Keys(gpus)) {
		g := gpus[dir]
		for _, k := range NVIDIAKeys {
			if !g.seen[k] {
				return nil, fmt.Errorf("NVIDIA dump: %s: no %q line", dir, k)
			}
		}
		if uuids[g.uuid] || minors[g.minor] {
			return nil, fmt.Errorf("NVIDIA dump: %s: UUID %s or minor %d is another GPU's", dir, g.uuid, g.minor)
		}
		uuids[g.uuid], minors[g.minor] = true, true
		out = append(out, NVIDIAGPU{UUID: g.uuid, BusID: g.bus, Minor: g.minor})
	}
	return out, nil
}
