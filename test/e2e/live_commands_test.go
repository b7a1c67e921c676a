//go:build e2e

package e2e

// Every live command through the real kubectl's plugin discovery (`kubectl nodestate ...`), on
// simulated nodes of different kubelet versions whose kubelet dirs hold kubelet-written files.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// liveNode is a simulated node for TestLiveCommands.
type liveNode struct {
	name, version string
	// vectors are testdata/kubelet files on the node, judged with testdata/kubelet/expected's reads for
	// the node's version.
	vectors []string
	// examples: examples/kubelet-root is on the node too (vectors win).
	examples bool

	files map[string]string // what the kubelet dir holds
	dir   string
}

func TestLiveCommands(t *testing.T) {
	ns := NewNamespace(t, nil)
	nodes := []*liveNode{
		// A 1.17 node: CPU manager state V1 (keyed by container ID), device checkpoint V1.
		{name: "live-v117", version: "v1.17.17", vectors: []string{
			"cpu_manager_state/v1.17.17/static-numa.json",
			"kubelet_internal_checkpoint/v1.17.17/multi-resource.json",
		}},
		// A 1.30 node: DRA v1c and pod_status_manager_state, plus an allocated_pods_state
		// (written by 1.33) that 1.30 never reads.
		{name: "live-v130", version: "v1.30.14", vectors: []string{
			"cpu_manager_state/v1.30.14/static-numa.json",
			"memory_manager_state/v1.30.14/static-2numa-pods.json",
			"kubelet_internal_checkpoint/v1.30.14/multi-resource.json",
			"dra_manager_state/v1.30.14/multi-driver.json",
			"pod_status_manager_state/v1.30.14/two-containers.json",
			"allocated_pods_state/v1.33.13/one-pod-two-containers.json",
		}},
		// A healthy 1.37 node with every file kind.
		{name: "live-v137", version: decode.HomeKubelet, examples: true},
		// A 1.37 node still holding a device checkpoint V1, which 1.37 cannot read.
		{name: "live-v137-olddevices", version: decode.HomeKubelet, examples: true, vectors: []string{
			"kubelet_internal_checkpoint/v1.17.17/multi-resource.json",
		}},
	}
	byName := map[string]*liveNode{}
	for _, n := range nodes {
		n.files = vectorFiles(t, n.vectors...)
		if n.examples {
			n.files = merge(repoDirFiles(t, "examples/kubelet-root"), n.files)
		}
		n.dir = KubeletDir(t, n.files)
		CreateNode(t, n.name, n.version, nil, n.dir)
		byName[n.name] = n
	}
	old, mid, cur, mixed := nodes[0], nodes[1], nodes[2], nodes[3]
	expectNoLeftovers(t)

	// run runs `kubectl nodestate ARGS` and checks no debug pod outlived the command.
	run := func(t *testing.T, args ...string) Result {
		t.Helper()
		r := nodestate(t, nil, args...)
		if r.ExitCode < 0 {
			t.Fatalf("kubectl nodestate %s did not exit: %s", strings.Join(args, " "), r)
		}
		if n := CountManagedPods(t, ""); n != 0 {
			t.Errorf("kubectl nodestate %s: %d debug pod(s) left after it exited", strings.Join(args, " "), n)
		}
		return r
	}
	// offline runs the same files through --from-dir, the reference for live output.
	offline := func(t *testing.T, n *liveNode, args ...string) Result {
		t.Helper()
		return RunPlugin(t, append(args, "--from-dir", n.dir, "--kubelet-version", n.version)...)
	}

	t.Run("verify per node version", func(t *testing.T) {
		r := run(t, "verify", old.name, mid.name, cur.name, "-n", ns, "-o", "json")
		if r.ExitCode != 0 || r.Stderr != "" {
			t.Fatalf("want exit 0 (every file valid or not read by its node's kubelet) and no stderr: %s", r)
		}
		got := byNode(parseVerify(t, r.Stdout))
		for _, n := range []*liveNode{old, mid, cur} {
			rows := got[n.name]
			if len(rows) != len(n.files) {
				t.Errorf("%s: %d rows, want one per file (%d)", n.name, len(rows), len(n.files))
			}
			for path := range n.files {
				row, ok := rows[path]
				if !ok {
					t.Errorf("%s: no row for %s", n.name, path)
					continue
				}
				if row.Reader != n.version {
					t.Errorf("%s %s: judged for %q, want the node's kubelet %s", n.name, path, row.Reader, n.version)
				}
			}
			for _, v := range n.vectors {
				checkVectorRow(t, n.name, rows[vectorFile{v}.NodePath()], v, n.version)
			}
			if n.examples {
				for path := range n.files {
					if rows[path].Verdict != "valid" {
						t.Errorf("%s %s: verdict %q, want valid", n.name, path, rows[path].Verdict)
					}
				}
			}
			// The live rows are the offline rows of the same files, plus the node.
			ref := offline(t, n, "verify", "-o", "json")
			_, want := jsonItems(t, ref.Stdout)
			_, have := jsonItems(t, nodeJSON(t, r.Stdout, n.name))
			if ref.ExitCode != 0 || !sameItems(have, want) {
				t.Errorf("%s: live verify differs from --from-dir of the same files (exit %d)\nlive:\n%s\noffline:\n%s", n.name, ref.ExitCode, nodeJSON(t, r.Stdout, n.name), ref.Stdout)
			}
		}
	})

	t.Run("verify an unreadable file", func(t *testing.T) {
		// No -n: the kubeconfig's namespace (default).
		r := run(t, "verify", mixed.name)
		if r.ExitCode != 1 {
			t.Fatalf("want exit 1 (a file is not valid): %s", r)
		}
		rows := tableRows(r.Stdout)
		if len(rows) == 0 || strings.Join(rows[0][:4], " ") != "NODE FILE FORMAT VERDICT" {
			t.Fatalf("header: %q", rows)
		}
		verdicts := map[string]string{}
		for _, row := range rows[1:] {
			if row[0] != mixed.name || len(row) < 4 {
				t.Errorf("row %q", row)
				continue
			}
			verdicts[row[1]] = row[3]
		}
		want := vectorRead(t, mixed.vectors[0], mixed.version).Verdict
		if want != "unreadable" {
			t.Fatalf("expectations: %s read by %s is %q; this test expects unreadable", mixed.vectors[0], mixed.version, want)
		}
		for path := range mixed.files {
			w := "valid"
			if path == "device-plugins/kubelet_internal_checkpoint" {
				w = want
			}
			if verdicts[path] != w {
				t.Errorf("%s: verdict %q, want %q\n%s", path, verdicts[path], w, r.Stdout)
			}
		}
		if r.Stderr != "" {
			t.Errorf("stderr: %q", r.Stderr)
		}
		// -o json gives the kubelet's own error, word for word.
		r = run(t, "verify", mixed.name, "-n", ns, "-o", "json")
		if r.ExitCode != 1 {
			t.Fatalf("-o json: want exit 1: %s", r)
		}
		checkVectorRow(t, mixed.name, byNode(parseVerify(t, r.Stdout))[mixed.name]["device-plugins/kubelet_internal_checkpoint"], mixed.vectors[0], mixed.version)
	})

	t.Run("verify --kubelet-version -o yaml", func(t *testing.T) {
		// The 1.17 node's files, as a 1.37.1 kubelet would read them after an upgrade.
		r := run(t, "verify", old.name, "-n", ns, "--kubelet-version", decode.HomeKubelet, "-o", "yaml")
		if r.ExitCode != 1 {
			t.Fatalf("want exit 1: %s", r)
		}
		j, err := yaml.YAMLToJSON([]byte(r.Stdout))
		if err != nil {
			t.Fatalf("not YAML: %v\n%s", err, r.Stdout)
		}
		rows := byNode(parseVerify(t, string(j)))[old.name]
		for _, v := range old.vectors {
			checkVectorRow(t, old.name, rows[vectorFile{v}.NodePath()], v, decode.HomeKubelet)
		}
	})

	t.Run("verify -o wide", func(t *testing.T) {
		r := run(t, "verify", cur.name, "-n", ns, "-o", "wide")
		rows := tableRows(r.Stdout)
		if r.ExitCode != 0 || len(rows) != 1+len(cur.files) {
			t.Fatalf("want exit 0 and %d rows: %s", len(cur.files), r)
		}
		if !strings.Contains(strings.Join(rows[0], " "), "KUBELET RULE DETAIL") {
			t.Errorf("wide header %q", rows[0])
		}
		for _, row := range rows[1:] {
			if !strings.Contains(strings.Join(row, " "), decode.HomeKubelet) {
				t.Errorf("wide row without the node's kubelet version: %q", row)
			}
		}
	})

	t.Run("verify a missing node", func(t *testing.T) {
		r := run(t, "verify", cur.name, "no-such-node", "-n", ns, "-o", "json")
		if r.ExitCode != 2 {
			t.Fatalf("want exit 2 (a node could not be read): %s", r)
		}
		got := byNode(parseVerify(t, r.Stdout))
		if len(got[cur.name]) != len(cur.files) {
			t.Errorf("the readable node lost rows: %v", got[cur.name])
		}
		row, ok := got["no-such-node"]["-"]
		if !ok || row.Verdict != "unreadable" || row.Cause != "node not found" || !strings.Contains(row.Error, "no such node") {
			t.Errorf("missing node's row: %+v (present %v)", row, ok)
		}
		if lines := nonEmptyLines(r.Stderr); len(lines) != 1 || lines[0] != "error: node no-such-node: no such node" {
			t.Errorf("stderr: %q", r.Stderr)
		}
	})

	t.Run("show commands", func(t *testing.T) {
		for _, tc := range []struct {
			node *liveNode
			cmds []string
		}{
			{old, []string{"cpus", "devices"}},
			{mid, []string{"cpus", "memory", "devices", "claims", "pods"}},
			{cur, []string{"cpus", "memory", "devices", "claims", "pods"}},
		} {
			for _, cmd := range tc.cmds {
				r := run(t, cmd, tc.node.name, "-n", ns, "-o", "json")
				ref := offline(t, tc.node, cmd, "-o", "json")
				kind, have := jsonItems(t, r.Stdout)
				refKind, want := jsonItems(t, ref.Stdout)
				// Same exit code and warnings as offline (a node's "where" is its name, a
				// dir's its path). The 1.30 node's allocated_pods_state, which 1.30 never
				// reads, makes `pods` warn and exit 1 both ways.
				where := strings.NewReplacer("node "+tc.node.name+":", "WHERE:", tc.node.dir+":", "WHERE:")
				switch {
				case r.ExitCode != ref.ExitCode || where.Replace(r.Stderr) != where.Replace(ref.Stderr):
					t.Errorf("%s %s: exit/stderr differ from --from-dir of the same files: %s\noffline: %s", cmd, tc.node.name, r, ref)
				case tc.node != mid && (r.ExitCode != 0 || r.Stderr != ""):
					t.Errorf("%s %s: want exit 0 and no stderr: %s", cmd, tc.node.name, r)
				case len(have) == 0:
					t.Errorf("%s %s: no items: %s", cmd, tc.node.name, r)
				case kind != refKind || !sameItems(have, want):
					t.Errorf("%s %s: live output differs from --from-dir of the same files:\n%s\nwant (offline):\n%s", cmd, tc.node.name, r.Stdout, ref.Stdout)
				}
				for _, l := range nodeValues(t, r.Stdout) {
					if l != tc.node.name {
						t.Errorf("%s %s: item of node %q", cmd, tc.node.name, l)
					}
				}
			}
		}

		// Tables: a NODE column first, the offline rows after it.
		for _, cmd := range []string{"cpus", "memory", "devices", "claims", "pods"} {
			r := run(t, cmd, cur.name, "-n", ns)
			ref := offline(t, cur, cmd)
			rows, want := tableRows(r.Stdout), tableRows(ref.Stdout)
			if r.ExitCode != 0 || len(rows) != len(want) || len(rows) < 2 {
				t.Errorf("%s: exit %d, %d rows, want 0 and %d rows:\n%s\noffline:\n%s", cmd, r.ExitCode, len(rows), len(want), r.Stdout, ref.Stdout)
				continue
			}
			if rows[0][0] != "NODE" || strings.Join(rows[0][1:], " ") != strings.Join(want[0], " ") {
				t.Errorf("%s header %q, want NODE + %q", cmd, rows[0], want[0])
			}
			for i, row := range rows[1:] {
				if row[0] == "NODE" { // memory prints two tables
					if strings.Join(row[1:], " ") != strings.Join(want[i+1], " ") {
						t.Errorf("%s header %d: %q, want NODE + %q", cmd, i, row, want[i+1])
					}
					continue
				}
				if row[0] != cur.name || strings.Join(row[1:], " ") != strings.Join(want[i+1], " ") {
					t.Errorf("%s row %d: %q, want %s + %q", cmd, i, row, cur.name, want[i+1])
				}
			}
		}

		// A file the node's kubelet cannot read: a warning, what it holds anyway, exit 1.
		r := run(t, "devices", mixed.name, "-n", ns)
		if r.ExitCode != 1 || !strings.Contains(r.Stderr, "device-plugins/kubelet_internal_checkpoint is unreadable") {
			t.Errorf("devices of a V1 file on a 1.37 node: want exit 1 and an unreadable warning: %s", r)
		}

		// Several nodes in one command.
		r = run(t, "cpus", old.name, mid.name, cur.name, "-n", ns, "-o", "json")
		seen := map[string]bool{}
		for _, n := range nodeValues(t, r.Stdout) {
			seen[n] = true
		}
		if r.ExitCode != 0 || len(seen) != 3 {
			t.Errorf("cpus of 3 nodes: want exit 0 and rows of 3 nodes, got %v: %s", seen, r)
		}
	})

	t.Run("collect", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "bundle")
		r := run(t, "collect", old.name, mid.name, cur.name, "-n", ns, "-d", dir)
		if r.ExitCode != 0 {
			t.Fatalf("want exit 0: %s", r)
		}
		if !strings.Contains(r.Stderr, "wrote 3 node(s) to "+dir) {
			t.Errorf("stderr: %q", r.Stderr)
		}
		for _, n := range []*liveNode{old, mid, cur} {
			for path, content := range n.files {
				b, err := os.ReadFile(filepath.Join(dir, n.name, filepath.FromSlash(path)))
				if err != nil {
					t.Errorf("%s: %v", n.name, err)
					continue
				}
				if string(b) != content {
					t.Errorf("%s %s: collected %d bytes differ from the node's %d bytes", n.name, path, len(b), len(content))
				}
			}
			var results []map[string]any
			b, err := os.ReadFile(filepath.Join(dir, n.name, "verify.json"))
			if err == nil {
				err = json.Unmarshal(b, &results)
			}
			if err != nil || len(results) != len(n.files) {
				t.Errorf("%s/verify.json: %v, %d results, want %d", n.name, err, len(results), len(n.files))
			}
			// The copy reads offline like the node.
			if r := RunPlugin(t, "verify", "--from-dir", filepath.Join(dir, n.name), "--kubelet-version", n.version); r.ExitCode != 0 {
				t.Errorf("verify --from-dir of the collected %s: %s", n.name, r)
			}
			// Without the flag, the kubelet version collect recorded judges the copy.
			if r := RunPlugin(t, "verify", "--from-dir", filepath.Join(dir, n.name)); !strings.Contains(r.Stderr, "recorded by collect in node.json") {
				t.Errorf("verify --from-dir of the collected %s is not judged by the recorded version: %s", n.name, r)
			}
		}
		var summary []struct {
			Node  string            `json:"node"`
			Error string            `json:"error"`
			Files []json.RawMessage `json:"files"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &summary)
		}
		if err != nil || len(summary) != 3 {
			t.Fatalf("summary.json: %v, %d nodes\n%s", err, len(summary), b)
		}
		for _, s := range summary {
			n := byName[s.Node]
			if n == nil || s.Error != "" || len(s.Files) != len(n.files) {
				t.Errorf("summary of %q: error %q, %d files", s.Node, s.Error, len(s.Files))
			}
		}
	})

	t.Run("cleanup", func(t *testing.T) {
		// A debug pod left behind (say its client was SIGKILLed).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		left := DebugPod(ns, "nodestate-left-behind", cur.name)
		if _, err := Client().CoreV1().Pods(ns).Create(ctx, left, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		WaitPodRunning(t, ns, left.Name, 30*time.Second)

		r := nodestate(t, nil, "cleanup", "-n", ns, "--older-than", "1h")
		if r.ExitCode != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "No leftover debug pods found.") {
			t.Errorf("cleanup --older-than 1h must spare a young pod: %s", r)
		}
		if n := CountManagedPods(t, ns); n != 1 {
			t.Fatalf("%d managed pods, want the leftover", n)
		}
		r = nodestate(t, nil, "cleanup", "-n", ns)
		if r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "pod "+ns+"/"+left.Name+" deleted" {
			t.Errorf("cleanup: %s", r)
		}
		WaitPodGone(t, ns, left.Name, 10*time.Second)
		r = run(t, "cleanup", "-A")
		if r.ExitCode != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "No leftover debug pods found.") {
			t.Errorf("second cleanup: %s", r)
		}
	})
}

// checkVectorRow checks a verify row of a vector against how the real kubelet of version read
// it (testdata/kubelet/expected): the same verdict, and the same error word for word.
func checkVectorRow(t *testing.T, node string, row verifyItem, vector, version string) {
	t.Helper()
	want := vectorRead(t, vector, version)
	if row.Verdict != want.Verdict {
		t.Errorf("%s %s (%s): verdict %q, want %q (kubelet %s)", node, row.File, vector, row.Verdict, want.Verdict, version)
	}
	if want.Error != nil && row.Error != *want.Error {
		t.Errorf("%s %s (%s): error\n got %q\nwant %q (kubelet %s)", node, row.File, vector, row.Error, *want.Error, version)
	}
	if want.Error == nil && row.Error != "" {
		t.Errorf("%s %s (%s): error %q, want none", node, row.File, vector, row.Error)
	}
}

// nodeJSON keeps the items of one node in a `-o json` list.
func nodeJSON(t *testing.T, out, node string) string {
	t.Helper()
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var items []map[string]any
	for _, it := range list.Items {
		if it["node"] == node {
			items = append(items, it)
		}
	}
	list.Items = items
	b, _ := json.Marshal(list)
	return string(b)
}

// nodeValues returns the "node" of every item of a `-o json` list.
func nodeValues(t *testing.T, out string) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Node string `json:"node"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var nodes []string
	for _, it := range list.Items {
		nodes = append(nodes, it.Node)
	}
	return nodes
}
