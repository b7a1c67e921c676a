package render

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/tabletest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// checkStructured parses json/yaml output as the List envelope.
func checkStructured(t *testing.T, f Format, out []byte) map[string]any {
	t.Helper()
	var v map[string]any
	var err error
	if f == JSON {
		err = json.Unmarshal(out, &v)
	} else {
		err = yaml.Unmarshal(out, &v)
	}
	if err != nil {
		t.Fatalf("output does not parse as %s: %v\n%s", f, err, out)
	}
	if k, _ := v["kind"].(string); !strings.HasSuffix(k, "List") {
		t.Errorf("kind = %v, want a ...List", v["kind"])
	}
	if _, ok := v["items"].([]any); !ok {
		t.Errorf("items is %T, want a list", v["items"])
	}
	return v
}

func rows(out string) [][]string { return tabletest.Rows(out) }

func hasRow(rs [][]string, want ...string) bool { return tabletest.HasRow(rs, want...) }

func printed(t *testing.T, fn func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := fn(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPodNamesCPUByContainerID(t *testing.T) {
	// V1 CPU files (kubelet <= 1.17) key entries by container ID, not pod UID.
	state := model[*decode.CPUState](t, decode.KindCPU, v2cpu)
	if len(state.ContainerIDEntries) == 0 {
		t.Fatalf("fixture %s has no container-ID entries", v2cpu)
	}
	in := []CPUs{{Source: Source{Names: names}, State: state}}
	out := printed(t, func(b *bytes.Buffer) error { return PrintCPUs(b, Options{}, in) })
	rs := rows(out)
	for _, want := range [][]string{
		{"net/dpdk-0", "dpdk", "16-19,24-27"},
		{"batch/compute-1", "compute", "0-3,8-11"},
		{"container 76b01cca91c49", "-", "4-5"}, // unknown ID: shown shortened, unresolved
		{"(shared pool)", "-", "7,12-15,22-23,28-31"},
	} {
		if !hasRow(rs, want...) {
			t.Errorf("missing row %q in:\n%s", want, out)
		}
	}
	// Resolved pods sort before unresolved IDs; the shared pool is last.
	if rs[1][0] != "batch/compute-1" || rs[2][0] != "net/dpdk-0" || rs[len(rs)-1][0] != "(shared pool)" {
		t.Errorf("unexpected order:\n%s", out)
	}

	got := CPURows(in)
	for _, r := range got {
		if r.ContainerID == "716b0c3fd95664d7a5e9ccdea4b02048bb673f952c110095a9daf28bd823548b" {
			if r.Namespace != "net" || r.Pod != "dpdk-0" || r.Container != "dpdk" || r.Scope != "container" {
				t.Errorf("resolved row = %+v", r)
			}
		}
	}
}

// liar answers with names but says it does not know the ID: nothing may be resolved.
type liar struct{}

func (liar) Pod(string) (string, string, bool)               { return "ns", "pod", false }
func (liar) Container(string) (string, string, string, bool) { return "ns", "pod", "c", false }

func TestPodNamesUnknownAndNil(t *testing.T) {
	v1 := model[*decode.CPUState](t, decode.KindCPU, v2cpu)
	v4 := model[*decode.CPUState](t, decode.KindCPU, root1+"cpu_manager_state")
	for name, n := range map[string]nodestate.PodNames{"nil": nil, "liar": liar{}, "empty": fakeNames{}} {
		t.Run(name, func(t *testing.T) {
			for _, r := range CPURows([]CPUs{{Source: Source{Names: n}, State: v1}, {Source: Source{Names: n}, State: v4}}) {
				if r.Namespace != "" || r.Pod != "" || (r.ContainerID != "" && r.Container != "") {
					t.Errorf("row resolved by a nodestate.PodNames that knows nothing: %+v", r)
				}
			}
			for _, r := range DeviceRows(deviceInput(t, false)) {
				if r.Pod != "" {
					t.Errorf("device row resolved: %+v", r)
				}
			}
		})
	}
}

func TestPodNamesEveryView(t *testing.T) {
	withNames := func(s *Source) { s.Names = names }
	cpus := cpuInput(t, false)
	withNames(&cpus[0].Source)
	mem := memoryInput(t, false)
	withNames(&mem[0].Source)
	dev := deviceInput(t, false)
	withNames(&dev[0].Source)
	cl := claimInput(t, false)
	withNames(&cl[0].Source)
	pods := podInput(t, false)
	withNames(&pods[0].Source)
	withNames(&pods[1].Source)

	for _, tc := range []struct {
		name string
		out  string
		want [][]string
	}{
		{"cpus", printed(t, func(b *bytes.Buffer) error { return PrintCPUs(b, Options{}, cpus) }), [][]string{
			{"default/web-7f9c", "app", "1-2"},
			{"3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f", "(pod-level)", "12-15"}, // not known: raw UID
		}},
		{"memory", printed(t, func(b *bytes.Buffer) error { return PrintMemory(b, Options{}, mem) }), [][]string{
			{"ml/inference-0", "db", "memory", "16Gi", "1"},
			{"default/web-7f9c", "init-setup", "memory", "1Gi", "0"},
		}},
		{"devices", printed(t, func(b *bytes.Buffer) error { return PrintDevices(b, Options{}, dev) }), [][]string{
			{"ml/inference-0", "init-fw", "example.com/fpga", "none", "fpga-1"},
			{"default/web-7f9c", "trainer", "nvidia.com/gpu", "1", "GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b"},
		}},
		{"claims", printed(t, func(b *bytes.Buffer) error { return PrintClaims(b, Options{}, cl) }), [][]string{
			{"ml/gpu-and-nic", "ml/trainer-0", "gpu.example.com", "node-1/gpu-1", "gpus", "Unhealthy"},
			{"ml/gpu-and-nic", "ml/trainer-0", "net.example.com", "node-1-nics/vf-3", "nic", "Unknown"},
		}},
		{"pods", printed(t, func(b *bytes.Buffer) error { return PrintPods(b, Options{}, pods) }), [][]string{
			{"shop/cart-5d8", "app", "allocated", "cpu=1,memory=1Gi", "cpu=2,memory=1Gi"},
			{"shop/cart-5d8", "app", "actuated", "cpu=500m,memory=128Mi", "memory=256Mi"},
			{"9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d", "web", "allocated", "cpu=250m", "-"},
		}},
	} {
		rs := rows(tc.out)
		for _, w := range tc.want {
			if !hasRow(rs, w...) {
				t.Errorf("%s: missing row %q in:\n%s", tc.name, w, tc.out)
			}
		}
	}
}

func TestNoHeader(t *testing.T) {
	for _, p := range printers {
		for _, f := range []Format{Table, Wide} {
			t.Run(p.name+"-"+formatName(f), func(t *testing.T) {
				var with, without bytes.Buffer
				if err := p.print(t, &with, Options{Format: f, ShowNode: true}); err != nil {
					t.Fatal(err)
				}
				if err := p.print(t, &without, Options{Format: f, ShowNode: true, NoHeader: true}); err != nil {
					t.Fatal(err)
				}
				var headers []string
				for _, l := range strings.Split(with.String(), "\n") {
					if strings.HasPrefix(l, "NODE ") {
						headers = append(headers, l)
					}
				}
				if len(headers) == 0 {
					t.Fatalf("no header in:\n%s", &with)
				}
				if strings.Contains(without.String(), "NODE ") {
					t.Errorf("--no-headers output has a header:\n%s", &without)
				}
				// Same rows, only the header lines gone.
				wantLines := strings.Count(with.String(), "\n") - len(headers)
				if got := strings.Count(without.String(), "\n"); got != wantLines {
					t.Errorf("got %d lines without headers, want %d:\n%s", got, wantLines, &without)
				}
				checkOutput(t, f, without.Bytes())
			})
		}
	}
}

func TestEmptyInputs(t *testing.T) {
	empty := []struct {
		name, kind string
		print      func(b *bytes.Buffer, o Options) error
	}{
		{"verify", "CheckpointVerificationList", func(b *bytes.Buffer, o Options) error { return Verify(b, o, nil) }},
		{"cpus", "CPUAssignmentList", func(b *bytes.Buffer, o Options) error { return PrintCPUs(b, o, nil) }},
		{"memory", "MemoryStateList", func(b *bytes.Buffer, o Options) error { return PrintMemory(b, o, nil) }},
		{"devices", "DeviceAssignmentList", func(b *bytes.Buffer, o Options) error { return PrintDevices(b, o, nil) }},
		{"claims", "ResourceClaimList", func(b *bytes.Buffer, o Options) error { return PrintClaims(b, o, nil) }},
		{"pods", "PodResourceList", func(b *bytes.Buffer, o Options) error { return PrintPods(b, o, nil) }},
	}
	for _, e := range empty {
		t.Run(e.name, func(t *testing.T) {
			js := printed(t, func(b *bytes.Buffer) error { return e.print(b, Options{Format: JSON}) })
			if !strings.Contains(js, `"items": []`) || !strings.Contains(js, `"kind": "`+e.kind+`"`) {
				t.Errorf("json of nothing:\n%s", js)
			}
			checkStructured(t, JSON, []byte(js))
			ym := printed(t, func(b *bytes.Buffer) error { return e.print(b, Options{Format: YAML}) })
			if !strings.Contains(ym, "items: []\n") || !strings.Contains(ym, "kind: "+e.kind+"\n") {
				t.Errorf("yaml of nothing:\n%s", ym)
			}
			// A table of nothing is its header alone.
			tbl := printed(t, func(b *bytes.Buffer) error { return e.print(b, Options{}) })
			for _, l := range strings.Split(strings.TrimSuffix(tbl, "\n"), "\n") {
				if l != "" && l != strings.ToUpper(l) {
					t.Errorf("table of nothing has a row %q:\n%s", l, tbl)
				}
			}
			checkOutput(t, Table, []byte(tbl))
		})
	}
	// Inputs whose states are empty print no rows either (but cpus still shows the pool).
	out := printed(t, func(b *bytes.Buffer) error {
		return PrintCPUs(b, Options{}, []CPUs{{State: &decode.CPUState{PolicyName: "none"}}})
	})
	if want := "POD             CONTAINER   CPUS\n(shared pool)   -           -\n"; out != want {
		t.Errorf("empty none-policy state:\n got %q\nwant %q", out, want)
	}
}

func TestBytesQ(t *testing.T) {
	for _, tc := range []struct {
		in   uint64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1024, "1Ki"},
		{1536, "1536"},
		{2 << 20, "2Mi"},
		{3<<30 + 512<<20, "3584Mi"},
		{64 << 30, "64Gi"},
		{1 << 62, "4Ei"},
		{1<<62 + 1, "4611686018427387905"},
		{1 << 63, "9223372036854775808"}, // would overflow int64
		{math.MaxUint64, "18446744073709551615"},
	} {
		if got := bytesQ(tc.in); got != tc.want {
			t.Errorf("bytesQ(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResourceList(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		in   corev1.ResourceList
		want string
	}{
		{nil, ""},
		{corev1.ResourceList{}, ""},
		{corev1.ResourceList{"memory": q("128Mi"), "cpu": q("500m")}, "cpu=500m,memory=128Mi"},
		{corev1.ResourceList{"memory": q("1Gi"), "hugepages-2Mi": q("4Mi"), "cpu": q("1"), "ephemeral-storage": q("10G")},
			"cpu=1,ephemeral-storage=10G,hugepages-2Mi=4Mi,memory=1Gi"},
	} {
		if got := resourceList(tc.in); got != tc.want {
			t.Errorf("resourceList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": Table, "wide": Wide, "json": JSON, "yaml": YAML} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"JSON", "name", "jsonpath={.items}", "go-template", "table", " json", "yml"} {
		_, err := ParseFormat(in)
		if err == nil {
			t.Errorf("ParseFormat(%q): no error", in)
			continue
		}
		want := `unable to match a printer suitable for the output format "` + in + `", allowed formats are: wide,json,yaml`
		if err.Error() != want {
			t.Errorf("ParseFormat(%q) error:\n got %s\nwant %s", in, err, want)
		}
	}
}

func TestVerifyChecksumStates(t *testing.T) {
	zero := decodeFile(t, decode.KindCPU, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.checksum-zero.json")
	altered := decodeFile(t, decode.KindCPU, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.checksum-altered.json")
	out := printed(t, func(b *bytes.Buffer) error {
		return Verify(b, Options{Format: Wide}, []nodestate.FileRow{{Report: zero}, {Report: altered}})
	})
	rs := rows(out)
	if len(rs) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", out)
	}
	if rs[1][2] != "valid" || rs[1][5] != "checksum 0 (accepted)" {
		t.Errorf("zero checksum row: %q", rs[1])
	}
	c := altered.Checksums[0]
	if want := "checksum " + strconv.FormatUint(c.Stored, 10) + "/" + strconv.FormatUint(c.Computed, 10); rs[2][2] != "corrupt" || rs[2][5] != want {
		t.Errorf("altered checksum row: %q, want DETAIL %q", rs[2], want)
	}
	out = printed(t, func(b *bytes.Buffer) error {
		return Verify(b, Options{}, []nodestate.FileRow{{Report: zero}, {Report: altered}})
	})
	rs = rows(out)
	if want := "checksum is 0, which kubelet " + zero.Reader + " accepts unverified: it restores the file"; rs[1][3] != want {
		t.Errorf("zero checksum sentence %q, want %q", rs[1][3], want)
	}
	if want := "checksum does not match: kubelet " + altered.Reader + " refuses it (checkpoint is corrupted); the CPU manager fails, and the kubelet does not start"; rs[2][3] != want {
		t.Errorf("altered checksum sentence %q, want %q", rs[2][3], want)
	}
}

// -o wide of the bundled examples fits a 160-column terminal, and no row says a thing twice.
func TestVerifyWideFits(t *testing.T) {
	for _, multi := range []bool{false, true} {
		out := printed(t, func(b *bytes.Buffer) error {
			return Verify(b, Options{Format: Wide, ShowNode: multi}, verifyResults(t, multi))
		})
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if len(line) > 160 {
				t.Errorf("%d columns: %s", len(line), line)
			}
		}
		for _, r := range rows(out)[1:] {
			seen := map[string]bool{}
			for _, c := range r {
				if seen[c] && c != "-" {
					t.Errorf("cell %q repeated in %q", c, r)
				}
				seen[c] = true
			}
		}
	}
}

func TestTableCellsNeverEmpty(t *testing.T) {
	var b bytes.Buffer
	tb := newTable(&b, Options{ShowNode: true}, "A", "B", "C")
	tb.add("", "x", "", "")
	tb.render()
	if got, want := b.String(), "NODE   A   B   C\n-      x   -   -\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// debugNames is a nodestate.PodNames that also knows the plugin's own debug pods.
type debugNames struct {
	fakeNames
	debug map[string]bool
}

func (d debugNames) DebugPod(uid string) bool { return d.debug[uid] }

// The kubelet lists the plugin's own debug pod (BestEffort: a container with no resources) in
// its allocated/actuated files like any pod; the pods view must not pass it off as a workload,
// whether it is still named (live, labelled) or only a UID (deleted, still in 1.37's file).
func TestPodsMarkDebugPods(t *testing.T) {
	names := debugNames{
		fakeNames: fakeNames{pods: map[string][2]string{
			"uid-web":   {"default", "web"},
			"uid-debug": {"kube-system", "nodestate-n1-x7k2p"},
		}},
		debug: map[string]bool{"uid-debug": true, "uid-gone": true},
	}
	state := &decode.PodAllocationState{Pods: map[string]decode.PodResources{
		"uid-web":   {Containers: map[string]corev1.ResourceRequirements{"app": {Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
		"uid-debug": {Containers: map[string]corev1.ResourceRequirements{"nodestate": {}}},
		"uid-gone":  {Containers: map[string]corev1.ResourceRequirements{"nodestate": {}}},
	}}
	in := []PodAllocations{{Source: Source{Node: "n1", Names: names}, File: decode.KindActuated, State: state}}

	marked := map[string]bool{}
	for _, r := range PodRows(in) {
		marked[r.PodUID] = r.DebugPod
	}
	if want := map[string]bool{"uid-web": false, "uid-debug": true, "uid-gone": true}; !maps.Equal(marked, want) {
		t.Errorf("debugPod per UID %v, want %v", marked, want)
	}
	table := printed(t, func(b *bytes.Buffer) error { return PrintPods(b, Options{ShowNode: true}, in) })
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		debug := strings.Contains(line, "nodestate-n1-x7k2p") || strings.Contains(line, "uid-gone")
		if got := strings.Contains(line, DebugPodMark); got != debug {
			t.Errorf("line %q: marked %v, want %v", line, got, debug)
		}
	}
	js := printed(t, func(b *bytes.Buffer) error { return PrintPods(b, Options{Format: JSON}, in) })
	if n := strings.Count(js, `"debugPod": true`); n != 2 {
		t.Errorf("JSON marks %d rows as debugPod, want 2:\n%s", n, js)
	}
}

// Meaning words each verdict: what was checked, by which kubelet, what it means.
func TestMeaning(t *testing.T) {
	ok := func(field string) decode.ChecksumResult { return decode.ChecksumResult{Field: field, Match: true} }
	bad := func(field string) decode.ChecksumResult {
		return decode.ChecksumResult{Field: field, Stored: 1, Computed: 2}
	}
	for _, tc := range []struct {
		name string
		r    decode.Report
		want string
	}{
		{"valid, the device file's capitalised field in lower case",
			decode.Report{Reader: decode.HomeKubelet, Verdict: decode.Valid, Checksums: []decode.ChecksumResult{ok("Checksum")}},
			"checksum matches: kubelet " + decode.HomeKubelet + " restores it"},
		{"valid for the judge, refused by newer kubelets",
			decode.Report{Reader: "v1.36.4", Verdict: decode.Valid, Checksums: []decode.ChecksumResult{bad("dataChecksum"), ok("checksum")},
				Breaks: &decode.Breaks{Newer: "1.37"}},
			"checksum matches: kubelet v1.36.4 restores it; dataChecksum does not match: an upgrade to 1.37 or newer would refuse it"},
		{"valid, refused both ways",
			decode.Report{Reader: "v1.30.14", Verdict: decode.Valid, Checksums: []decode.ChecksumResult{ok("a"), bad("b")},
				Breaks: &decode.Breaks{Older: "1.29", Newer: "1.31"}},
			"a matches: kubelet v1.30.14 restores it; b does not match: a downgrade to 1.29 or older would refuse it, and an upgrade to 1.31 or newer would refuse it"},
		{"valid, with device entries the restore skips",
			decode.Report{Reader: decode.HomeKubelet, Verdict: decode.Valid, Checksums: []decode.ChecksumResult{ok("Checksum")},
				Dropped: []decode.DroppedEntry{{Index: 1, PodUID: "p1", ContainerName: "c1", ResourceName: "nvidia.com/gpu", Error: "unexpected EOF"},
					{Index: 3, PodUID: "p2", ContainerName: "c2", ResourceName: "nvidia.com/gpu", Error: "unexpected EOF"}}},
			"checksum matches: kubelet " + decode.HomeKubelet + " restores it, but skips 2 device entries (pod p1 container c1 nvidia.com/gpu: unexpected EOF; and 1 more): their devices count as free"},
		{"not read by the judge",
			decode.Report{Reader: "v1.33.13", Verdict: decode.NotRead, WrittenBy: "1.34+"},
			"kubelet v1.33.13 does not read this file (written by kubelet 1.34+)"},
		{"unreadable, no checksum to blame",
			decode.Report{Reader: decode.HomeKubelet, Verdict: decode.Unreadable, Cause: "unexpected end of JSON input"},
			"kubelet " + decode.HomeKubelet + " cannot decode it: unexpected end of JSON input"},
		{"unknown format: no kubelet judged it",
			decode.Report{Verdict: decode.UnknownFormat, Error: "JSON, but not a cpu_manager_state checkpoint of any known kubelet version"},
			"JSON, but not a cpu_manager_state checkpoint of any known kubelet version"},
		{"apart from the node's other files",
			decode.Report{Reader: decode.HomeKubelet, Verdict: decode.Valid, Checksums: []decode.ChecksumResult{ok("checksum")}, WrittenBy: "1.31-1.34", Apart: true},
			"checksum matches: kubelet " + decode.HomeKubelet + " restores it; left by kubelet 1.31-1.34, never rewritten since"},
	} {
		if got := Meaning(&tc.r); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// A fleet read's rows say how old each answer is and where it came from, before the sentence;
// streamed rows line up with the header.
func TestVerifySources(t *testing.T) {
	zero := decodeFile(t, decode.KindCPU, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.checksum-zero.json")
	from := &nodestate.Provenance{From: nodestate.FromConditions, AgeSeconds: 200}
	rowsIn := []nodestate.FileRow{
		{Node: "a", Source: from, Monitor: &nodestate.MonitorAnswer{Condition: "KubeletCheckpointsCorrupt", Status: corev1.ConditionFalse, Message: "7 checkpoint files valid"}},
		{Node: "b", Source: &nodestate.Provenance{From: nodestate.FromDebugPod}, Report: zero},
	}
	for _, o := range []Options{{ShowNode: true, Sources: true}, {ShowNode: true, Sources: true, Stream: true, NodeWidth: 4}, {Format: Wide, ShowNode: true, Sources: true}} {
		out := printed(t, func(b *bytes.Buffer) error { return Verify(b, o, rowsIn) })
		rs := rows(out)
		last := len(rs[0]) - 1
		if rs[0][last-2] != "AGE" || rs[0][last-1] != "FROM" || rs[0][1] != "FILE" {
			t.Fatalf("%+v: header %q", o, rs[0])
		}
		if a := rs[1]; a[1] != "-" || a[3] != "valid" || a[last-2] != "3m20s" || a[last-1] != "conditions" || a[last] != "7 checkpoint files valid" {
			t.Errorf("%+v: condition row %q", o, a)
		}
		if b := rs[2]; b[1] != "cpu_manager_state" || b[last-2] != "0s" || b[last-1] != "debug-pod" {
			t.Errorf("%+v: debug pod row %q", o, b)
		}
		if o.Stream {
			lines := strings.Split(out, "\n")
			if strings.Index(lines[0], "AGE") != strings.Index(lines[1], "3m20s") || strings.Index(lines[0], "FROM") != strings.Index(lines[2], "debug-pod") {
				t.Errorf("streamed columns do not line up:\n%s", out)
			}
		}
	}
}

// debugNamedNames also tells an earlier debug pod by the namespace and name a V2 file gives it.
type debugNamedNames struct {
	debugNames
	namespace string
}

func (d debugNamedNames) DebugPodNamed(namespace, name string) bool {
	return namespace == d.namespace && strings.HasPrefix(name, "nodestate-")
}

// 1.38's V2 files name their pods (podList), those gone from the API server too: the kubelet
// keeps the earlier debug pods in actuated_pods_state until its container GC (found by
// NODESTATE_E2E_NODE_KUBE=v1.38.0-beta.0 make e2e-node, TestFullNode). They are marked as the
// plugin's own; a workload the file names, or a nodestate- pod in another namespace, is not.
func TestPodsMarkEarlierDebugPodsNamedByV2File(t *testing.T) {
	names := debugNamedNames{debugNames: debugNames{fakeNames: fakeNames{pods: map[string][2]string{}}, debug: map[string]bool{}},
		namespace: "kubectl-nodestate"}
	none := map[string]corev1.ResourceRequirements{"nodestate": {}}
	state := &decode.PodAllocationState{Pods: map[string]decode.PodResources{
		"uid-old-debug": {Namespace: "kubectl-nodestate", Name: "nodestate-n1-95ll2", Containers: none},
		"uid-web":       {Namespace: "default", Name: "web", Containers: none},
		"uid-other-ns":  {Namespace: "default", Name: "nodestate-n1-abcde", Containers: none},
	}}
	in := []PodAllocations{{Source: Source{Node: "n1", Names: names}, File: decode.KindActuated, State: state}}
	marked := map[string]bool{}
	for _, r := range PodRows(in) {
		marked[r.PodUID] = r.DebugPod
	}
	if want := map[string]bool{"uid-old-debug": true, "uid-web": false, "uid-other-ns": false}; !maps.Equal(marked, want) {
		t.Errorf("debugPod per UID %v, want %v", marked, want)
	}
}
