package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/kubectl-nodestate/kubectl-nodestate/internal/golden"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// go test ./pkg/render -update rewrites testdata/golden from the current printers.

// repo is the repository root, seen from this package's directory.
const repo = "../.."

// fakeNames resolves a fixed set of pod UIDs and container IDs, as a live node's pod index would.
type fakeNames struct {
	pods       map[string][2]string // uid -> namespace, name
	containers map[string][3]string // container ID -> namespace, pod, container
}

func (f fakeNames) Pod(uid string) (string, string, bool) {
	p, ok := f.pods[uid]
	return p[0], p[1], ok
}

func (f fakeNames) Container(id string) (string, string, string, bool) {
	c, ok := f.containers[id]
	return c[0], c[1], c[2], ok
}

// names knows some, not all, of the IDs in the fixtures: unknown IDs must stay raw.
var names = fakeNames{
	pods: map[string][2]string{
		"6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f": {"default", "web-7f9c"},
		"0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b": {"ml", "inference-0"},
		"3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c": {"shop", "cart-5d8"},
		"c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f": {"ml", "trainer-0"},
	},
	containers: map[string][3]string{
		"716b0c3fd95664d7a5e9ccdea4b02048bb673f952c110095a9daf28bd823548b": {"net", "dpdk-0", "dpdk"},
		"a76af7f95dd3da93b78078c0bf3e1f12b5e2771bd2f7da6fc5e4ef95dfb6653a": {"batch", "compute-1", "compute"},
	},
}

// decodeFile decodes one file of the repository with the default reader (the last kubelet
// writing its format), as an offline verify does.
func decodeFile(t testing.TB, kind decode.Kind, rel string) *decode.Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	rep := decode.Decode(kind, raw, decode.Options{})
	if rep.Decoded.IsZero() && rep.Verdict == decode.Valid {
		t.Fatalf("%s: valid but nothing decoded", rel)
	}
	return rep
}

func model[T any](t testing.TB, kind decode.Kind, rel string) T {
	t.Helper()
	rep := decodeFile(t, kind, rel)
	m, ok := rep.Decoded.Any().(T)
	if !ok {
		t.Fatalf("%s: decoded %T (verdict %s: %s)", rel, rep.Decoded.Any(), rep.Verdict, rep.Error)
	}
	return m
}

// The two nodes of the fixtures: worker-1 is examples/kubelet-root (every file kind, current
// formats), worker-2 holds older formats (V1 CPU and device files, DRA 1.28, pod status 1.28).
const (
	root1 = "examples/kubelet-root/"
	v2cpu = "testdata/kubelet/cpu_manager_state/v1.17.17/static-numa.json"
	v2mem = "testdata/kubelet/memory_manager_state/v1.36.4+PodLevelResourceManagers/static-podlevel.json"
	v2dev = "testdata/kubelet/kubelet_internal_checkpoint/v1.17.17/multi-resource.json"
	v2dra = "testdata/kubelet/dra_manager_state/v1.28.15/multi-namespace.json"
	v2pod = "testdata/kubelet/pod_status_manager_state/v1.28.15/two-containers.json"
)

// src returns the Source of a node: offline (one directory) it has no name and no nodestate.PodNames.
func src(node string, multi bool) Source {
	if !multi {
		return Source{}
	}
	return Source{Node: node, Names: names}
}

// verifyResults is what verify prints: offline, examples/broken-node (with a leftover temp file
// and an oversized file as the nodestate library reports them); with nodes, worker-1 all valid, worker-2 the
// broken node and worker-3 a node that could not be read.
func verifyResults(t testing.TB, multi bool) []nodestate.FileRow {
	broken := func(node string) []nodestate.FileRow {
		return append(judgedTogether(t, "examples/broken-node", node),
			nodestate.OversizedRow(node, "pod_status_manager_state", decode.KindPodStatus),
			nodestate.TempFileRow(node, ".482910377"))
	}
	if !multi {
		return broken("")
	}
	out := append(judgedTogether(t, root1, "worker-1"), broken("worker-2")...)
	return append(out, nodestate.NodeFailedRow("worker-3", false, "API error",
		`Get "https://10.0.0.1:6443/api/v1/nodes/worker-3": dial tcp 10.0.0.1:6443: connect: connection refused`))
}

// judgedTogether is a kubelet dir's files as the nodestate library judges them offline.
func judgedTogether(t testing.TB, dir, node string) []nodestate.FileRow {
	files := map[string][]byte{}
	for _, f := range decode.Files {
		if raw, err := os.ReadFile(filepath.Join(repo, dir, f.Path)); err == nil {
			files[f.Path] = raw
		}
	}
	kindOf := func(p string) decode.Kind { k, _ := decode.ParseKind(p); return k }
	rows, j := nodestate.JudgeFiles(&fetch.Snapshot{Node: node, Files: files}, kindOf, nil, "")
	if j.Kubelet == nil {
		t.Fatalf("%s: no judge", dir)
	}
	return rows
}

func cpuInput(t testing.TB, multi bool) []CPUs {
	in := []CPUs{{Source: src("worker-1", multi), State: model[*decode.CPUState](t, decode.KindCPU, root1+"cpu_manager_state")}}
	if multi {
		in = append(in, CPUs{Source: src("worker-2", multi), State: model[*decode.CPUState](t, decode.KindCPU, v2cpu)})
	}
	return in
}

func memoryInput(t testing.TB, multi bool) []Memory {
	in := []Memory{{Source: src("worker-1", multi), State: model[*decode.MemoryState](t, decode.KindMemory, root1+"memory_manager_state")}}
	if multi {
		in = append(in, Memory{Source: src("worker-2", multi), State: model[*decode.MemoryState](t, decode.KindMemory, v2mem)})
	}
	return in
}

func deviceInput(t testing.TB, multi bool) []Devices {
	in := []Devices{{Source: src("worker-1", multi), State: model[*decode.DeviceState](t, decode.KindDevices, root1+"device-plugins/kubelet_internal_checkpoint")}}
	if multi {
		in = append(in, Devices{Source: src("worker-2", multi), State: model[*decode.DeviceState](t, decode.KindDevices, v2dev)})
	}
	return in
}

func claimInput(t testing.TB, multi bool) []Claims {
	in := []Claims{{Source: src("worker-1", multi),
		State:  model[*decode.DRAState](t, decode.KindDRA, root1+"dra_manager_state"),
		Health: model[*decode.DRAHealthState](t, decode.KindDRAHealth, root1+"dra_health_state")}}
	if multi {
		in = append(in, Claims{Source: src("worker-2", multi), State: model[*decode.DRAState](t, decode.KindDRA, v2dra)})
	}
	return in
}

func podInput(t testing.TB, multi bool) []PodAllocations {
	in := []PodAllocations{
		{Source: src("worker-1", multi), File: decode.KindAllocated, State: model[*decode.PodAllocationState](t, decode.KindAllocated, root1+"allocated_pods_state")},
		{Source: src("worker-1", multi), File: decode.KindActuated, State: model[*decode.PodAllocationState](t, decode.KindActuated, root1+"actuated_pods_state")},
	}
	if multi {
		in = append(in, PodAllocations{Source: src("worker-2", multi), File: decode.KindPodStatus,
			State: model[*decode.PodAllocationState](t, decode.KindPodStatus, v2pod)})
	}
	return in
}

// printers are the printers under test, each fed its fixtures.
var printers = []struct {
	name  string
	print func(t testing.TB, b *bytes.Buffer, o Options) error
}{
	{"verify", func(t testing.TB, b *bytes.Buffer, o Options) error {
		return Verify(b, o, verifyResults(t, o.ShowNode))
	}},
	{"cpus", func(t testing.TB, b *bytes.Buffer, o Options) error { return PrintCPUs(b, o, cpuInput(t, o.ShowNode)) }},
	{"memory", func(t testing.TB, b *bytes.Buffer, o Options) error {
		return PrintMemory(b, o, memoryInput(t, o.ShowNode))
	}},
	{"devices", func(t testing.TB, b *bytes.Buffer, o Options) error {
		return PrintDevices(b, o, deviceInput(t, o.ShowNode))
	}},
	{"claims", func(t testing.TB, b *bytes.Buffer, o Options) error {
		return PrintClaims(b, o, claimInput(t, o.ShowNode))
	}},
	{"pods", func(t testing.TB, b *bytes.Buffer, o Options) error { return PrintPods(b, o, podInput(t, o.ShowNode)) }},
}

var formats = []struct {
	name   string
	format Format
}{{"table", Table}, {"wide", Wide}, {"json", JSON}, {"yaml", YAML}}

// golden compares got with testdata/golden/<name>.golden (or rewrites it with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name+".golden"), got)
}

func TestGolden(t *testing.T) {
	for _, p := range printers {
		for _, f := range formats {
			for _, multi := range []bool{false, true} {
				name := p.name + "-" + f.name
				if multi {
					name += "-nodes"
				}
				t.Run(name, func(t *testing.T) {
					var b bytes.Buffer
					if err := p.print(t, &b, Options{Format: f.format, ShowNode: multi}); err != nil {
						t.Fatal(err)
					}
					golden(t, name, b.Bytes())
					checkOutput(t, f.format, b.Bytes())
				})
			}
		}
	}
}

// TestGoldenStream prints verify as it streams live nodes: one block per node, the header
// only on the first, fixed column widths so the blocks line up.
func TestGoldenStream(t *testing.T) {
	for _, f := range []Format{Table, Wide} {
		name := "verify-" + formatName(f) + "-stream"
		t.Run(name, func(t *testing.T) {
			rows := verifyResults(t, true)
			o := Options{Format: f, ShowNode: true, Stream: true, NodeWidth: len("worker-1")}
			var b bytes.Buffer
			for _, node := range []string{"worker-1", "worker-2", "worker-3"} {
				var block []nodestate.FileRow
				for _, r := range rows {
					if r.Node == node {
						block = append(block, r)
					}
				}
				if err := Verify(&b, o, block); err != nil {
					t.Fatal(err)
				}
				o.NoHeader = true
			}
			golden(t, name, b.Bytes())
			checkOutput(t, f, b.Bytes())
			if strings.Count(b.String(), "VERDICT") != 1 {
				t.Errorf("want one header line across the blocks, got:\n%s", &b)
			}
			if f == Table {
				checkAligned(t, b.String())
			}
		})
	}
}

func formatName(f Format) string {
	if f == Table {
		return "table"
	}
	return string(f)
}

// checkOutput checks what every output must satisfy: tables have no trailing whitespace and no
// empty cells (shown as "-"); json and yaml parse.
func checkOutput(t *testing.T, f Format, out []byte) {
	t.Helper()
	if len(out) == 0 {
		t.Fatal("no output")
	}
	switch f {
	case JSON, YAML:
		checkStructured(t, f, out)
		return
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line != strings.TrimRight(line, " \t") {
			t.Errorf("line %d has trailing whitespace: %q", i+1, line)
		}
		if strings.Contains(line, "\t") {
			t.Errorf("line %d has a tab: %q", i+1, line)
		}
	}
	if !bytes.HasSuffix(out, []byte("\n")) {
		t.Errorf("output does not end in a newline: %q", out)
	}
}

// checkAligned checks that every row starts each column where the header does.
func checkAligned(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var starts []int
	for i, c := range lines[0] {
		if c != ' ' && (i == 0 || lines[0][i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, l := range lines[1:] {
		for _, s := range starts[1:] {
			if len(l) <= s || l[s] == ' ' || l[s-1] != ' ' || l[s-2] != ' ' {
				t.Errorf("row not aligned with the header at column %d:\n%s\n%s", s, lines[0], l)
				break
			}
		}
	}
}
