package verify_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/internal/tabletest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

const repo = "../../.."

var (
	kubeletRoot = filepath.Join(repo, "examples/kubelet-root")
	brokenNode  = filepath.Join(repo, "examples/broken-node")
	// static-numa.json is a kubelet 1.18 cpu_manager_state under a vector's name.
	vector118 = filepath.Join(repo, "testdata/kubelet/cpu_manager_state/v1.18.0/static-numa.json")
)

// run runs `kubectl nodestate ARGS` as main does; it returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) { return cmdtest.Run(t, args...) }

func table(out string) [][]string { return tabletest.Rows(out) }

// TestVerifyUncheckedKubelet: a build no vector was made by (a release day's, until a plugin
// release names it) is judged by the newest rules, and says so.
func TestVerifyUncheckedKubelet(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-dir", kubeletRoot, "--kubelet-version", "v1.99.0")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 0 || len(lines) != 2 || lines[1] != "Judged by kubelet v1.99.0: --kubelet-version." ||
		!strings.HasPrefix(lines[0], "warning: kubelet v1.99.0 is newer than every build this plugin was checked against: judged by the rules of the newest, v1.") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
}

func TestVerifyExampleDirAllValid(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-dir", kubeletRoot)
	// One kubelet judges the node's files, said on stderr (stdout stays the table).
	if code != 0 || errOut != "Judged by kubelet "+decode.HomeKubelet+": the newest release that writes all these files in their formats.\n" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	rows := table(out)
	if got := strings.Join(rows[0], " "); got != "FILE FORMAT VERDICT MEANING" {
		t.Errorf("header %q (offline: no NODE column)", got)
	}
	wantFiles := []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint",
		"dra_manager_state", "dra_health_state", "allocated_pods_state", "actuated_pods_state"}
	if len(rows) != len(wantFiles)+1 {
		t.Fatalf("want %d rows:\n%s", len(wantFiles), out)
	}
	for i, r := range rows[1:] {
		if r[0] != wantFiles[i] || r[2] != "valid" || !strings.Contains(r[3], "kubelet "+decode.HomeKubelet+" ") || strings.Contains(r[3], "not match") {
			t.Errorf("row %d: %q", i, r)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if l != strings.TrimRight(l, " ") {
			t.Errorf("trailing spaces: %q", l)
		}
	}
}

func TestVerifyBrokenNode(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-dir", brokenNode)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	rows := table(out)
	verdicts := map[string]string{}
	for _, r := range rows[1:] {
		verdicts[r[0]] = r[2]
	}
	for file, want := range map[string]string{
		"cpu_manager_state":    "corrupt",
		"memory_manager_state": "valid", // its dataChecksum, the one 1.37 checks, matches
		".482910377":           "not-read",
	} {
		if verdicts[file] != want {
			t.Errorf("%s: verdict %q, want %q\n%s", file, verdicts[file], want, out)
		}
	}
	for _, want := range []string{
		"dataChecksum does not match: kubelet " + decode.HomeKubelet + " refuses it (checkpoint is corrupted)",
		"dataChecksum matches: kubelet " + decode.HomeKubelet + " restores it; checksum does not match: a downgrade to 1.36 or older would refuse it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	// Judged by one kubelet, the 1.19 device file and the 1.30 DRA file beside 1.37 files are
	// findings.
	if !strings.HasPrefix(errOut, "Judged by kubelet "+decode.HomeKubelet+": the newest release that writes cpu_manager_state and memory_manager_state") ||
		strings.Count(errOut, "Finding: ") != 2 ||
		!strings.Contains(errOut, "Finding: device-plugins/kubelet_internal_checkpoint (dev-v1) is written only by kubelet 1.11-1.19") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

// A bundle written by collect records the node's kubelet version: it judges the copy.
func TestVerifyCollectedBundle(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		b, err := os.ReadFile(filepath.Join(kubeletRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	info := `{"schema": "kubectl-nodestate/node/v1", "node": "worker-9", "kubeletVersion": "v1.36.4"}`
	if err := os.WriteFile(filepath.Join(dir, nodestate.NodeInfoFile), []byte(info), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "verify", "--from-dir", dir, "-o", "json")
	want := "Judged by kubelet v1.36.4: node worker-9's version, recorded by collect in node.json.\n"
	if code != 0 || errOut != want {
		t.Fatalf("exit %d, stderr %q, want %q\n%s", code, errOut, want, out)
	}
	var list struct{ Items []item }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, it := range list.Items {
		if it.Reader != "v1.36.4" {
			t.Errorf("%s judged by %s", it.File, it.Reader)
		}
	}
	// --kubelet-version still asks what another kubelet would make of the copy.
	_, errOut, _ = run(t, "verify", "--from-dir", dir, "--kubelet-version", decode.HomeKubelet)
	if errOut != "Judged by kubelet "+decode.HomeKubelet+": --kubelet-version.\n" {
		t.Errorf("stderr %q", errOut)
	}
	// A node file collect did not write (not JSON, or another schema such as a Node object
	// saved by kubectl) is said, and the files are judged without it.
	for _, other := range []string{"not json", `{"kind": "Node", "status": {"nodeInfo": {"kubeletVersion": "v1.36.4"}}}`} {
		if err := os.WriteFile(filepath.Join(dir, nodestate.NodeInfoFile), []byte(other), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, _ = run(t, "verify", "--from-dir", dir)
		if !strings.HasPrefix(errOut, "warning: node.json is not what collect writes") ||
			!strings.Contains(errOut, "Judged by kubelet "+decode.HomeKubelet+": the newest release") {
			t.Errorf("%s: stderr %q", other, errOut)
		}
	}
}

type item struct {
	File      string            `json:"file"`
	Format    string            `json:"format"`
	Verdict   string            `json:"verdict"`
	Reader    string            `json:"reader"`
	Node      string            `json:"node"`
	Checksums []json.RawMessage `json:"checksums"`
}

func TestVerifyJSONWithKubeletVersion(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-dir", kubeletRoot, "--kubelet-version", decode.HomeKubelet, "-o", "json")
	if code != 0 || errOut != "Judged by kubelet "+decode.HomeKubelet+": --kubelet-version.\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not json: %v\n%s", err, out)
	}
	if list.Kind != "CheckpointVerificationList" || len(list.Items) != 7 {
		t.Fatalf("kind %q, %d items", list.Kind, len(list.Items))
	}
	for _, it := range list.Items {
		for _, k := range []string{"file", "format", "verdict", "reader"} {
			if s, _ := it[k].(string); s == "" {
				t.Errorf("item %v: no %s", it["file"], k)
			}
		}
		if it["verdict"] != "valid" || it["reader"] != decode.HomeKubelet {
			t.Errorf("%v: verdict %v reader %v", it["file"], it["verdict"], it["reader"])
		}
		if _, ok := it["node"]; ok {
			t.Errorf("%v: offline items have no node", it["file"])
		}
		cs, _ := it["checksums"].([]any)
		if it["format"] == "dra-health-v1" { // the one format without a checksum
			if len(cs) != 0 {
				t.Errorf("dra_health_state has checksums %v", cs)
			}
			continue
		}
		if len(cs) == 0 {
			t.Errorf("%v: no checksums", it["file"])
		}
		for _, c := range cs {
			c := c.(map[string]any)
			if c["match"] != true || c["field"] == "" || c["stored"] != c["computed"] {
				t.Errorf("%v: checksum %v", it["file"], c)
			}
		}
	}
}

func TestVerifyYAMLBrokenNodeWithKubeletVersion(t *testing.T) {
	out, _, code := run(t, "verify", "--from-dir", brokenNode, "--kubelet-version", decode.HomeKubelet, "-o", "yaml")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var list struct {
		Items []item `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not yaml: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, it := range list.Items {
		got[it.File] = it.Verdict
	}
	// A 1.37 kubelet refuses the 1.19 device file and the 1.30 DRA file.
	for file, want := range map[string]string{
		"cpu_manager_state":                          "corrupt",
		"device-plugins/kubelet_internal_checkpoint": "unreadable",
		"dra_manager_state":                          "corrupt",
		".482910377":                                 "not-read",
	} {
		if got[file] != want {
			t.Errorf("%s: %q, want %q", file, got[file], want)
		}
	}
}

func TestVerifyFromFile(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-file", vector118, "--kind", "cpu_manager_state")
	if code != 0 || errOut != "Judged by kubelet v1.36.4: the newest release that writes this file in its format.\n" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	rows := table(out)
	if len(rows) != 2 || rows[1][0] != vector118 || rows[1][1] != "cpu-v2" || rows[1][2] != "valid" {
		t.Errorf("rows %q", rows)
	}
}

func TestVerifyFromFileUnknownName(t *testing.T) {
	out, errOut, code := run(t, "verify", "--from-file", vector118)
	if code == 0 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	want := "error: cannot tell which checkpoint " + vector118 + " is: give the file its name on the node (e.g. cpu_manager_state) or pass --kind\n"
	if errOut != want {
		t.Errorf("stderr:\n got %q\nwant %q", errOut, want)
	}
}

func TestVerifyFromFileMissing(t *testing.T) {
	_, errOut, code := run(t, "verify", "--from-file", filepath.Join(t.TempDir(), "cpu_manager_state"))
	if code != 2 || !strings.HasPrefix(errOut, "error: ") || !strings.Contains(errOut, "no such file") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// tarGz archives dir with every path under prefix, as `tar czf` of a node's root dir would.
func tarGz(t *testing.T, dir, prefix string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = prefix + filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "worker-1.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerifyFromTarGz(t *testing.T) {
	for _, tc := range []struct{ dir, prefix string }{
		{kubeletRoot, "var/lib/kubelet/"},
		{brokenNode, "./"},
	} {
		archive := tarGz(t, tc.dir, tc.prefix)
		wantOut, wantErr, wantCode := run(t, "verify", "--from-dir", tc.dir, "-o", "wide")
		out, errOut, code := run(t, "verify", "--from-dir", archive, "-o", "wide")
		if out != wantOut || errOut != wantErr || code != wantCode {
			t.Errorf("%s as tar.gz differs from the dir:\n%s%s(exit %d)\nwant\n%s%s(exit %d)", tc.dir, out, errOut, code, wantOut, wantErr, wantCode)
		}
	}
}

func TestVerifyNoHeaders(t *testing.T) {
	out, _, code := run(t, "verify", "--from-dir", kubeletRoot, "--no-headers")
	if code != 0 || strings.Contains(out, "VERDICT") || strings.Count(out, "\n") != 7 {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to read", nil, "error: you must name a node (or use --all-nodes), or read copied files with --from-dir or --from-file"},
		{"both sources", []string{"--from-dir", kubeletRoot, "--from-file", vector118}, "error: --from-dir and --from-file cannot be used together"},
		{"node and dir", []string{"worker-1", "--from-dir", kubeletRoot}, "error: node names and --all-nodes read live nodes; they cannot be combined with --from-dir or --from-file"},
		{"kind without file", []string{"--from-dir", kubeletRoot, "--kind", "cpu_manager_state"}, "error: --kind only applies to --from-file"},
		{"unknown kind", []string{"--from-file", vector118, "--kind", "cpu"}, `error: unknown --kind "cpu": want one of cpu_manager_state,`},
		{"gates without version", []string{"--from-dir", kubeletRoot, "--feature-gates", "PodLevelResourceManagers=true"}, "error: --feature-gates needs --kubelet-version"},
		{"bad gates", []string{"--from-dir", kubeletRoot, "--kubelet-version", "v1.36.4", "--feature-gates", "PodLevelResourceManagers"}, `error: invalid --feature-gates entry "PodLevelResourceManagers": want Name=true|false`},
		{"bad output", []string{"--from-dir", kubeletRoot, "-o", "jsonpath={.items}"}, `error: unable to match a printer suitable for the output format "jsonpath={.items}", allowed formats are: wide,json,yaml`},
		{"bad version", []string{"--from-dir", kubeletRoot, "--kubelet-version", "one.two"}, `error: invalid kubelet version "one.two"`},
		{"selector without all-nodes", []string{"-l", "a=b", "worker-1"}, "error: -l/--selector selects nodes for --all-nodes; add --all-nodes"},
		{"nodes and all-nodes", []string{"--all-nodes", "worker-1"}, "error: name nodes or use --all-nodes, not both"},
		{"bad concurrency", []string{"worker-1", "--concurrency", "0"}, "error: --concurrency must be at least 1"},
		{"unknown flag", []string{"--from-dirr", kubeletRoot}, "error: unknown flag: --from-dirr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"verify"}, tc.args...)...)
			if code != 3 {
				t.Errorf("exit %d, want 3 (usage error)", code)
			}
			if !strings.HasPrefix(errOut, tc.want) {
				t.Errorf("stderr:\n got %q\nwant %q...", errOut, tc.want)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Errorf("want one line on stderr (no usage dump, no stack), got:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig whose API server refuses connections.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: nobody
  user:
    token: not-a-token
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody, namespace: default}
current-context: nowhere
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runBounded runs a command that must not hang on an unreachable cluster.
func runBounded(t *testing.T, limit time.Duration, args ...string) (string, string, int) {
	t.Helper()
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, errOut, code := run(t, args...)
		done <- result{out, errOut, code}
	}()
	select {
	case r := <-done:
		if d := time.Since(start); d > limit {
			t.Errorf("took %v, want under %v", d, limit)
		}
		return r.out, r.errOut, r.code
	case <-time.After(3 * limit):
		t.Fatalf("%q still running after %v", args, 3*limit)
	}
	return "", "", 0
}

func TestVerifyLiveWithoutCluster(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	for name, args := range map[string][]string{
		"kubeconfig": {"verify", "somenode", "--kubeconfig", kubeconfig, "--request-timeout", "2s", "--pod-running-timeout", "5s"},
		"server":     {"verify", "somenode", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify", "--request-timeout", "2s", "--pod-running-timeout", "5s"},
		"all nodes":  {"verify", "--all-nodes", "--kubeconfig", kubeconfig, "--request-timeout", "2s", "--pod-running-timeout", "5s", "-o", "json"},
	} {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := runBounded(t, 8*time.Second, args...)
			if code != 1 && code != 2 {
				t.Errorf("exit %d, want 1 or 2", code)
			}
			if !strings.HasPrefix(errOut, "error: ") || !strings.Contains(errOut, "127.0.0.1:1") {
				t.Errorf("stderr does not say which server failed: %q", errOut)
			}
		})
	}
}
