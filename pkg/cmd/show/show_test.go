package show_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/internal/tabletest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

const repo = "../../.."

var (
	kubeletRoot = filepath.Join(repo, "examples/kubelet-root")
	brokenNode  = filepath.Join(repo, "examples/broken-node")
)

// run runs `kubectl nodestate ARGS` as main does; it returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) { return cmdtest.Run(t, args...) }

const (
	web   = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"
	db    = "0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
	pl    = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
	cart  = "3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c"
	shop  = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d"
	train = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
)

func TestShowExampleDir(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		header []string
		rows   [][]string
	}{
		{[]string{"cpus"}, []string{"POD", "CONTAINER", "CPUS"}, [][]string{
			{web, "app", "1-2"},
			{web, "sidecar", "3"},
			{pl, "app", "12-13"},
			{pl, "helper", "14"},
			{pl, "(pod-level)", "12-15"},
			{"(shared pool)", "-", "0,4-11"},
		}},
		{[]string{"memory"}, []string{"NUMA", "RESOURCE", "TOTAL", "RESERVED", "FREE"}, [][]string{
			{"0", "memory", "64Gi", "3Gi", "60Gi"},
			{"1", "hugepages-1Gi", "8Gi", "0", "8Gi"},
			{db, "db", "memory", "16Gi", "1"},
			{web, "app", "hugepages-1Gi", "2Gi", "0"},
		}},
		{[]string{"devices"}, []string{"POD", "CONTAINER", "RESOURCE", "NUMA", "DEVICES"}, [][]string{
			{db, "init-fw", "example.com/fpga", "none", "fpga-1"},
			{web, "trainer", "nvidia.com/gpu", "0", "GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f,GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a"},
		}},
		{[]string{"claims"}, []string{"CLAIM", "PODS", "DRIVER", "DEVICE", "REQUESTS", "HEALTH"}, [][]string{
			{"ml/gpu-and-nic", train, "gpu.example.com", "node-1/gpu-1", "gpus", "Unhealthy"},
			{"ml/gpu-and-nic", train, "gpu.example.com", "node-1/gpu-2", "gpus", "-"},
			{"ml/gpu-and-nic", train, "net.example.com", "node-1-nics/vf-3", "nic", "Unknown"},
		}},
		{[]string{"pods"}, []string{"POD", "CONTAINER", "SOURCE", "REQUESTS", "LIMITS"}, [][]string{
			{cart, "app", "allocated", "cpu=1,memory=1Gi", "cpu=2,memory=1Gi"},
			{cart, "app", "actuated", "cpu=500m,memory=128Mi", "memory=256Mi"},
			{cart, "sidecar", "actuated", "cpu=100m,memory=64Mi", "-"},
			{shop, "web", "allocated", "cpu=250m", "-"},
		}},
		// Offline without the node's cgroups: the CGROUP column is empty.
		{[]string{"cpus", "-o", "wide"}, []string{"POD", "CONTAINER", "CPUS", "CGROUP", "SCOPE", "BASELINE", "POD-UID/CONTAINER-ID", "POLICY"}, [][]string{
			{pl, "(pod-level)", "12-15", "-", "pod", "-", pl, "static"},
			{"(shared pool)", "-", "0,4-11", "-", "shared", "-", "-", "static"},
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := run(t, append(tc.args, "--from-dir", kubeletRoot)...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
			}
			rs := tabletest.Rows(out)
			if strings.Join(rs[0], "|") != strings.Join(tc.header, "|") {
				t.Errorf("header %q, want %q", rs[0], tc.header)
			}
			for _, want := range tc.rows {
				if !tabletest.HasRow(rs, want...) {
					t.Errorf("missing row %q in:\n%s", want, out)
				}
			}
		})
	}
}

func TestShowCountsRows(t *testing.T) {
	// Every row of a view, no more: the table has exactly the rows the files hold.
	for view, n := range map[string]int{"cpus": 6, "devices": 5, "claims": 3, "pods": 4} {
		out, _, _ := run(t, view, "--from-dir", kubeletRoot, "--no-headers")
		if got := strings.Count(out, "\n"); got != n {
			t.Errorf("%s: %d rows, want %d:\n%s", view, got, n, out)
		}
	}
}

func TestShowStructured(t *testing.T) {
	for view, kind := range map[string]string{
		"cpus": "CPUAssignmentList", "memory": "MemoryStateList", "devices": "DeviceAssignmentList",
		"claims": "ResourceClaimList", "pods": "PodResourceList",
	} {
		for _, format := range []string{"json", "yaml"} {
			out, errOut, code := run(t, view, "--from-dir", kubeletRoot, "-o", format)
			if code != 0 || errOut != "" {
				t.Errorf("%s -o %s: exit %d, stderr %q", view, format, code, errOut)
			}
			var list struct {
				Kind  string `json:"kind"`
				Items []any  `json:"items"`
			}
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(out), &list)
			} else {
				err = yaml.Unmarshal([]byte(out), &list)
			}
			if err != nil || list.Kind != kind || len(list.Items) == 0 {
				t.Errorf("%s -o %s: kind %q, %d items, %v\n%s", view, format, list.Kind, len(list.Items), err, out)
			}
		}
	}
}

func TestShowCorruptFileWarns(t *testing.T) {
	out, errOut, code := run(t, "cpus", "--from-dir", brokenNode)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "warning: " + brokenNode + ": cpu_manager_state is corrupt (checkpoint is corrupted); showing what it holds, but the kubelet would not accept it\n"
	if errOut != want {
		t.Errorf("stderr:\n got %q\nwant %q", errOut, want)
	}
	// What the file says is still shown, on stdout only.
	if !tabletest.HasRow(tabletest.Rows(out), "9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d", "dpdk", "16-19,24-27") || strings.Contains(out, "warning") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestShowUnreadableFileWarns(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"cpu_manager_state": "not json", "memory_manager_state": `{"a":1}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for view, want := range map[string]string{
		"cpus":   "warning: " + dir + ": cpu_manager_state is unreadable (not JSON: invalid character 'o' in literal null (expecting 'u')); nothing to show\n",
		"memory": "warning: " + dir + ": memory_manager_state is unknown-format (JSON, but not a memory_manager_state checkpoint of any known kubelet version); nothing to show\n",
	} {
		out, errOut, code := run(t, view, "--from-dir", dir)
		if code != 1 || errOut != want {
			t.Errorf("%s: exit %d, stderr:\n got %q\nwant %q", view, code, errOut, want)
		}
		// Nothing decoded: headers only.
		for _, r := range tabletest.Rows(out) {
			if len(r) > 0 && r[0] != "POD" && r[0] != "NUMA" {
				t.Errorf("%s: row %q from an unreadable file", view, r)
			}
		}
	}
}

func TestShowOversizedFileWarns(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cpu_manager_state")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: one byte over the 64 MiB cap without writing 64 MiB.
	if err := f.Truncate(64<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, errOut, code := run(t, "cpus", "--from-dir", dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "warning: " + dir + ": cpu_manager_state is unreadable (" + nodestate.CauseOversized + "); nothing to show\n"
	if errOut != want {
		t.Errorf("stderr:\n got %q\nwant %q", errOut, want)
	}
	if out != "POD   CONTAINER   CPUS\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestShowMissingFile(t *testing.T) {
	out, errOut, code := run(t, "pods", "--from-dir", brokenNode)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if want := brokenNode + ": no [allocated_pods_state actuated_pods_state pod_status_manager_state] file\n"; errOut != want {
		t.Errorf("stderr:\n got %q\nwant %q", errOut, want)
	}
	if out != "POD   CONTAINER   SOURCE   REQUESTS   LIMITS\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestShowFromFile(t *testing.T) {
	vector := filepath.Join(repo, "testdata/kubelet/cpu_manager_state/v1.17.17/static-numa.json")
	out, errOut, code := run(t, "cpus", "--from-file", vector, "--kind", "cpu_manager_state")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// V1 files key CPUs by container ID; offline there are no names to resolve them with.
	if !tabletest.HasRow(tabletest.Rows(out), "container 716b0c3fd9566", "-", "16-19,24-27") {
		t.Errorf("stdout:\n%s", out)
	}
	_, errOut, code = run(t, "cpus", "--from-file", vector, "--kind", "memory_manager_state")
	if code != 3 || errOut != "error: cpus shows [cpu_manager_state], not memory_manager_state\n" {
		t.Errorf("wrong kind: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "claims", "--from-file", filepath.Join(kubeletRoot, "dra_health_state"))
	if code != 0 || errOut != "" {
		t.Errorf("claims of a health file alone: exit %d, stderr %q", code, errOut)
	}
}

func TestShowUsageErrors(t *testing.T) {
	for _, view := range []string{"cpus", "memory", "devices", "claims", "pods"} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, "error: you must name a node"},
			{[]string{"--from-dir", kubeletRoot, "--from-file", "x"}, "error: --from-dir and --from-file cannot be used together"},
			{[]string{"--from-dir", kubeletRoot, "--kind", "cpu_manager_state"}, "error: --kind only applies to --from-file"},
			{[]string{"--from-dir", kubeletRoot, "--feature-gates", "A=true"}, "error: --feature-gates needs --kubelet-version"},
			{[]string{"--from-dir", kubeletRoot, "-o", "name"}, `error: unable to match a printer suitable for the output format "name"`},
			{[]string{"--from-dir", kubeletRoot, "--kubelet-version", "latest"}, `error: invalid kubelet version "latest"`},
		} {
			out, errOut, code := run(t, append([]string{view}, tc.args...)...)
			if code != 3 || out != "" || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want %q", view, tc.args, code, out, errOut, tc.want)
			}
		}
	}
}

func TestShowLiveWithoutCluster(t *testing.T) {
	done := make(chan struct{})
	var errOut string
	var code int
	start := time.Now()
	go func() {
		defer close(done)
		_, errOut, code = run(t, "cpus", "somenode", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify",
			"--request-timeout", "2s", "--pod-running-timeout", "5s")
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("cpus on an unreachable cluster is still running after 30s")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if (code != 1 && code != 2) || !strings.Contains(errOut, "error: ") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
