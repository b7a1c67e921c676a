package gen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Entry is one PodDevicesEntry as the release modules write it (V2: device IDs per NUMA node).
type Entry struct {
	PodUID        string             `json:"podUID"`
	ContainerName string             `json:"containerName"`
	ResourceName  string             `json:"resourceName"`
	DeviceIDs     map[int64][]string `json:"deviceIDs"`
	AllocResp     []byte             `json:"allocResp"`
}

// FlatDeviceIDs is the V1 layout's list (1.11-1.19): every NUMA node's IDs, nodes in order.
func (e Entry) FlatDeviceIDs() []string {
	nodes := make([]int64, 0, len(e.DeviceIDs))
	for n := range e.DeviceIDs {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var ids []string
	for _, n := range nodes {
		ids = append(ids, e.DeviceIDs[n]...)
	}
	return ids
}

// Case is one checkpoint file.
type Case struct {
	Name        string
	Description string
	Entries     []Entry
	Registered  map[string][]string
}

// Protobuf wire helpers: the cases spell their bytes out with these, so a case says exactly
// which rule it exercises.
func varint(v uint64) []byte         { return binary.AppendUvarint(nil, v) }
func tag(num uint64, wt byte) []byte { return varint(num<<3 | uint64(wt)) }
func bytesField(num uint64, v []byte) []byte {
	return cat(tag(num, 2), varint(uint64(len(v))), v)
}
func str(num uint64, s string) []byte { return bytesField(num, []byte(s)) }
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A ContainerAllocateResponse: envs (1), mounts (2), devices (3), annotations (4), cdi_devices (5).
func envEntry(k, v string) []byte { return bytesField(1, cat(str(1, k), str(2, v))) }
func mount(c, h string, ro bool) []byte {
	m := cat(str(1, c), str(2, h))
	if ro {
		m = cat(m, tag(3, 0), []byte{1})
	}
	return bytesField(2, m)
}
func deviceSpec(c, h, p string) []byte { return bytesField(3, cat(str(1, c), str(2, h), str(3, p))) }
func annotation(k, v string) []byte    { return bytesField(4, cat(str(1, k), str(2, v))) }
func cdiDevice(name string) []byte     { return bytesField(5, str(1, name)) }

// good is a response a real GPU plugin returns (env, mount, device node, annotation).
var good = cat(envEntry("NVIDIA_VISIBLE_DEVICES", "GPU-2d3e4f5a"), mount("/usr/local/nvidia", "/opt/nvidia", true),
	deviceSpec("/dev/nvidia0", "/dev/nvidia0", "rw"), annotation("example.com/gpu", "0"))

const (
	pod1 = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"
	pod2 = "0b5e8c1d-7a2f-4e3b-8c9d-1f2e3a4b5c6d"
	gpu  = "nvidia.com/gpu"
)

func entry(pod, container string, dev string, resp []byte) Entry {
	return Entry{PodUID: pod, ContainerName: container, ResourceName: gpu, DeviceIDs: map[int64][]string{0: {dev}}, AllocResp: resp}
}

// single is a file with one container holding one GPU whose response is resp.
func single(name, desc string, resp []byte) Case {
	return Case{Name: name, Description: desc, Entries: []Entry{entry(pod1, "cuda", "GPU-2d3e4f5a", resp)},
		Registered: map[string][]string{gpu: {"GPU-2d3e4f5a", "GPU-7e8f9a0b"}}}
}

// Cases are the conformance vectors: one rule each, where the eras differ.
func Cases() []Case {
	return []Case{
		single("restore-allocresp-good", "a response with an env, a mount, a device node and an annotation", good),
		single("restore-allocresp-cdi", "a response with a CDI device (cdi_devices, 1.28+)", cat(good, cdiDevice("nvidia.com/gpu=0"))),
		single("restore-allocresp-empty", "no response at all (AllocResp absent)", nil),
		single("restore-allocresp-truncated", "the response cut in the middle of a mount", good[:30]),
		single("restore-allocresp-env-varint", "envs (1) as a varint: gogo refuses the wire type, google.golang.org/protobuf keeps it as unknown", cat(tag(1, 0), varint(7), good)),
		single("restore-allocresp-cdi-varint", "cdi_devices (5) as a varint: unknown before 1.28, a wrong wire type in 1.28-1.33, unknown again in 1.34+", cat(good, tag(5, 0), varint(1))),
		single("restore-allocresp-utf8", "a mount's host path that is not UTF-8: only google.golang.org/protobuf (1.34+) checks", cat(mount("/data", "/mnt/\xff\xfe", false), good)),
		single("restore-allocresp-map-utf8", "an env value that is not UTF-8", cat(envEntry("LANG", "caf\xe9"), good)),
		single("restore-allocresp-map-end-group", "a lone end-group tag inside an env entry: 1.17 skips it, 1.18-1.33 and 1.34+ refuse it", cat(bytesField(1, cat(str(1, "A"), tag(3, 4), str(2, "B"))), good)),
		single("restore-allocresp-big-field-number", "an unknown field numbered 2^29 (above protobuf's maximum): gogo skips it, 1.34+ refuse it", cat(good, tag(1<<29, 0), varint(1))),
		single("restore-allocresp-bool-overflow", "read_only as a ten-byte varint over 64 bits: gogo drops the high bits, 1.34+ refuse it", cat(bytesField(2, cat(str(1, "/a"), tag(3, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})), good)),
		single("restore-allocresp-group", "an unknown group field (wire type 3) around a varint: every era skips it", cat(good, tag(9, 3), tag(1, 0), varint(5), tag(9, 4))),
		single("restore-allocresp-group-mismatch", "an unknown group whose end tag has another field number: gogo skips it, 1.34+ refuse it", cat(good, tag(9, 3), tag(1, 0), varint(5), tag(8, 4))),
		{Name: "restore-allocresp-duplicate", Description: "two entries for one container and resource (the later one is kept), then two more whose later one is truncated (the earlier one is kept)",
			Entries: []Entry{entry(pod1, "cuda", "GPU-2d3e4f5a", good), entry(pod1, "cuda", "GPU-7e8f9a0b", good),
				entry(pod2, "train", "GPU-4a5b6c7d", good), entry(pod2, "train", "GPU-8c1f3b2e", good[:12])},
			Registered: map[string][]string{gpu: {"GPU-2d3e4f5a", "GPU-7e8f9a0b", "GPU-4a5b6c7d", "GPU-8c1f3b2e"}}},
		{Name: "restore-allocresp-mixed", Description: "three containers, the second's response truncated: only it is dropped",
			Entries: []Entry{entry(pod1, "cuda", "GPU-2d3e4f5a", good), entry(pod1, "sidecar", "GPU-7e8f9a0b", good[:12]),
				entry(pod2, "train", "GPU-4a5b6c7d", cat(good, cdiDevice("nvidia.com/gpu=2")))},
			Registered: map[string][]string{gpu: {"GPU-2d3e4f5a", "GPU-7e8f9a0b", "GPU-4a5b6c7d"}}},
		Corpus(),
	}
}

// Corpus is one file of many entries, one response each: the rules' edge cases and seeded
// random mutations of valid responses, so that each release's real restore judges every one
// (which survive, and the error of each dropped one) in a single start.
func Corpus() Case {
	var resps [][]byte
	// Edge cases: every wire type on every field number of every message, lone group tags,
	// varints of every length up to eleven bytes, lengths past the end and near 2^63.
	for _, num := range []uint64{0, 1, 2, 3, 5, 9} {
		for wt := byte(0); wt <= 7; wt++ {
			for _, body := range [][]byte{{0x01, 0, 0, 0, 0, 0, 0, 0}, {0x02, 'a', 'b'}, cat(tag(1, 0), varint(1), tag(num, 4))} {
				f := cat(tag(num, wt), body)
				resps = append(resps, f, bytesField(2, f), bytesField(5, f), bytesField(1, f))
			}
		}
	}
	for n := 1; n <= 11; n++ {
		v := make([]byte, n)
		for i := range v {
			v[i] = 0xff
		}
		v[n-1] = 0x01
		resps = append(resps, cat(tag(2, 2), v), bytesField(2, cat(tag(3, 0), v)), cat(tag(7, 0), v), bytesField(1, cat(tag(1, 2), v)))
		v[n-1] = 0x7f
		resps = append(resps, bytesField(2, cat(tag(3, 0), v)), cat(tag(7, 0), v))
	}
	for _, l := range []uint64{1 << 62, 1<<63 - 1, 1 << 63, 1<<64 - 1, 1<<63 - 20} {
		resps = append(resps, cat(tag(2, 2), varint(l)), cat(tag(9, 2), varint(l)), bytesField(1, cat(tag(1, 2), varint(l))),
			bytesField(1, cat(tag(3, 2), varint(l))))
	}
	for _, num := range []uint64{1<<29 - 1, 1 << 29, 1<<31 - 1, 1 << 31, 1 << 32, 1<<61 - 1} {
		resps = append(resps, cat(tag(num, 0), varint(1)), bytesField(1, cat(tag(num, 0), varint(1))), cat(tag(num, 3), tag(num, 4)))
	}
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok", "\u00e9"} {
		resps = append(resps, str(5, s), bytesField(5, str(1, s)), envEntry(s, "v"), envEntry("k", s), annotation(s, s),
			deviceSpec(s, "/dev/x", "rw"), mount("/a", s, false))
	}
	// Nested groups: balanced, unbalanced, a lone start, a lone end.
	resps = append(resps, cat(tag(9, 3), tag(10, 3), tag(10, 4), tag(9, 4)), cat(tag(9, 3), tag(10, 3), tag(9, 4), tag(10, 4)),
		cat(tag(9, 3)), cat(good, tag(9, 4)), bytesField(4, cat(tag(9, 3), tag(9, 4), str(1, "k"))), bytesField(4, tag(0, 0)),
		bytesField(4, cat(tag(0, 2), varint(0))), bytesField(1, cat(str(1, "k"), tag(2, 0), varint(3))))
	// Random mutations of valid responses (a fixed seed: the corpus is the same on every run).
	rng := rand.New(rand.NewPCG(20261123, 9))
	seeds := [][]byte{good, cat(good, cdiDevice("x.com/y=z")), envEntry("A", "B"), mount("/a", "/b", true)}
	for i := 0; i < 300; i++ {
		b := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
		for m := 0; m <= rng.IntN(3); m++ {
			switch op := rng.IntN(4); {
			case op == 0 && len(b) > 0:
				b[rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
			case op == 1 && len(b) > 0:
				b[rng.IntN(len(b))] = byte(rng.IntN(256))
			case op == 2 && len(b) > 0:
				b = b[:rng.IntN(len(b))]
			default:
				at := rng.IntN(len(b) + 1)
				b = append(b[:at], append([]byte{byte(rng.IntN(256))}, b[at:]...)...)
			}
		}
		resps = append(resps, b)
	}
	c := Case{Name: "restore-allocresp-corpus", Description: fmt.Sprintf("%d responses, one per container: edge cases of every rule and seeded mutations", len(resps)),
		Registered: map[string][]string{gpu: {"GPU-0"}}}
	for i, r := range resps {
		c.Entries = append(c.Entries, Entry{PodUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ContainerName: "c",
			ResourceName: gpu, DeviceIDs: map[int64][]string{0: {fmt.Sprintf("GPU-%d", i)}}, AllocResp: r})
	}
	return c
}
