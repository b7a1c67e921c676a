package doctor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/internal/golden"
	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The kubelet-start vectors (testdata/kubelet-start/README.md): each case is written to a
// directory, as a node's files, for the command to read.
const vectors = "../../../testdata/kubelet-start/start" + vectorpack.Ext

type startResult struct {
	Starts bool   `json:"starts"`
	Error  string `json:"error"`
	Phase  string `json:"phase"`
}

func loadVectors(t *testing.T) (*vectorpack.Set, []string) {
	t.Helper()
	set, err := vectorpack.ReadFile(vectors)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	if err := json.Unmarshal(set.Meta["versions"], &versions); err != nil {
		t.Fatal(err)
	}
	return set, versions
}

// caseDir writes the vector case of that name (its machine.json and checkpoints) to a directory.
func caseDir(t *testing.T, set *vectorpack.Set, name string) string {
	t.Helper()
	c, ok := set.Case(name)
	if !ok {
		t.Fatalf("kubelet-start vector %s missing", name)
	}
	c.Expected = nil // the files only, as on a node
	dir := t.TempDir()
	if err := c.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubeletConfig writes a case's `kubelet` section as a KubeletConfiguration file.
func kubeletConfig(t *testing.T, caseDir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(caseDir, "machine.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kubelet map[string]any `json:"kubelet"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Kubelet["apiVersion"] = "kubelet.config.k8s.io/v1beta1"
	m.Kubelet["kind"] = "KubeletConfiguration"
	b, _ := json.Marshal(m.Kubelet)
	p := filepath.Join(t.TempDir(), "kubelet-config.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContract runs the offline contract over every case and every version of the manifest
// (1,548 command runs, under 2 s):
// `doctor --from-dir D --machine M --kubelet-config C --kubelet-version V -o json` prints an
// object whose kubeletStart has the kubelet's starts and exact error; exit 1 when it fails.
func TestContract(t *testing.T) {
	set, versions := loadVectors(t)
	runs, matched := 0, 0
	for _, c := range set.Cases {
		name := c.Name
		var results map[string]startResult
		if err := json.Unmarshal(c.Expected, &results); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dir := caseDir(t, set, name)
		cfg := kubeletConfig(t, dir)
		for _, v := range versions {
			want, ok := results[v]
			if !ok {
				t.Errorf("%s @ %s: no result in the manifest", name, v)
				continue
			}
			runs++
			out, errOut, code := cmdtest.Run(t, "doctor", "--from-dir", dir, "--machine", filepath.Join(dir, "machine.json"),
				"--kubelet-config", cfg, "--kubelet-version", v, "-o", "json")
			var got struct {
				KubeletStart struct {
					Starts *bool   `json:"starts"`
					Error  *string `json:"error"`
					Phase  string  `json:"phase"`
				} `json:"kubeletStart"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || got.KubeletStart.Starts == nil || got.KubeletStart.Error == nil {
				t.Fatalf("%s @ %s: not the contract's object (%v): %s\n%s", name, v, err, out, errOut)
			}
			if *got.KubeletStart.Starts != want.Starts || *got.KubeletStart.Error != want.Error || got.KubeletStart.Phase != want.Phase {
				t.Errorf("%s @ %s: got %v %s %q, want %v %s %q", name, v, *got.KubeletStart.Starts, got.KubeletStart.Phase,
					*got.KubeletStart.Error, want.Starts, want.Phase, want.Error)
				continue
			}
			if !want.Starts && code != 1 {
				t.Errorf("%s @ %s: a failed start exits %d, want 1", name, v, code)
				continue
			}
			matched++
		}
	}
	t.Logf("%d of %d command runs matched the vectors", matched, runs)
	if want := len(set.Cases) * len(versions); runs != want || matched != runs || runs == 0 {
		t.Fatalf("%d of %d command runs matched; the manifest holds %d", matched, runs, want)
	}
}

// TestGolden: the default blocks (wrapped to 80 columns) and the -o wide table for a few
// nodes, compared with testdata/*.golden.
func TestGolden(t *testing.T) {
	set, _ := loadVectors(t)
	for _, tc := range []struct {
		golden, caseName, version string
		args                      []string
	}{
		{"reserved-onto-assigned", "cpu-s2c8t2n2-kubereserved-up-onto-assigned__w1.37.1", decode.HomeKubelet, nil},
		{"reserved-onto-assigned-wide", "cpu-s2c8t2n2-kubereserved-up-onto-assigned__w1.37.1", decode.HomeKubelet, []string{"-o", "wide"}},
		{"memory-drift", "mem-n1-drift-node0-minus-1MiB-assigned__w1.37.1", "v1.34.10", nil},
		{"two-pods-same-cpus", "cpu-s2c8t2n2-two-pods-same-cpus__w1.25.16", "v1.31.14", nil},
		{"healthy", "cpu-s2c8t2n2-healthy-assigned__w1.37.1", decode.HomeKubelet, nil},
	} {
		dir := caseDir(t, set, tc.caseName)
		args := append([]string{"doctor", "--from-dir", dir, "--kubelet-config", kubeletConfig(t, dir), "--kubelet-version", tc.version}, tc.args...)
		out, errOut, code := cmdtest.Run(t, args...)
		// Paths of temp files vary; the golden keeps the command's stable text.
		errOut = strings.ReplaceAll(errOut, dir, "CASE")
		var lines []string
		for _, l := range strings.Split(errOut, "\n") {
			if !strings.HasPrefix(l, "using kubelet config:") {
				lines = append(lines, l)
			}
		}
		got := "exit: " + string(rune('0'+code)) + "\n--- stdout\n" + out + "--- stderr\n" + strings.Join(lines, "\n")
		golden.Check(t, filepath.Join("testdata", tc.golden+".golden"), []byte(got))
	}
}

// TestNoInputs: without machine, config or version doctor still checks the files, and says
// which checks it skipped.
func TestNoInputs(t *testing.T) {
	set, _ := loadVectors(t)
	dir := caseDir(t, set, "cpu-s2c8t2n2-two-pods-same-cpus__w1.37.1")
	tmp := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(dir, "cpu_manager_state"))
	if err := os.WriteFile(filepath.Join(tmp, "cpu_manager_state"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cmdtest.Run(t, "doctor", "--from-dir", tmp, "-o", "json")
	if code != 1 || !strings.Contains(errOut, "skipped start prediction: needs the machine (--machine), the kubelet config (--kubelet-config) and the kubelet version (--kubelet-version)") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, `"check": "cpu-overlap"`) || !strings.Contains(out, `"phase": "not-predicted"`) {
		t.Errorf("stdout %s", out)
	}
}

// A collect bundle records the node's kubelet version: without --kubelet-version doctor predicts
// the start for it (the library's choice, as verify judges by it), and says so.
func TestRecordedKubeletVersion(t *testing.T) {
	src := filepath.Join("..", "..", "..", "examples", "doctor-node")
	tmp := t.TempDir()
	for _, f := range []string{"cpu_manager_state", "memory_manager_state", "machine.json", "kubelet-config.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "node.json"), []byte(`{"schema":"kubectl-nodestate/node/v1","node":"worker-1","kubeletVersion":"v1.34.10"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cmdtest.Run(t, "doctor", "--from-dir", tmp, "-o", "json")
	if code != 0 || !strings.Contains(errOut, "using kubelet v1.34.10: node worker-1's version, recorded by collect in node.json\n") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var res struct {
		KubeletStart struct {
			Kubelet   string `json:"kubelet"`
			Starts    bool   `json:"starts"`
			Unchecked string `json:"unchecked"`
		} `json:"kubeletStart"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.KubeletStart.Kubelet != "v1.34.10" || !res.KubeletStart.Starts || res.KubeletStart.Unchecked != "" {
		t.Errorf("%v: %s", err, out)
	}
	// A recorded build no vector was made by is predicted for by the newest rules, and says so.
	if err := os.WriteFile(filepath.Join(tmp, "node.json"), []byte(`{"schema":"kubectl-nodestate/node/v1","node":"worker-1","kubeletVersion":"v1.99.0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ = cmdtest.Run(t, "doctor", "--from-dir", tmp, "-o", "json")
	const unchecked = "kubelet v1.99.0 is newer than every build this plugin was checked against"
	res.KubeletStart.Unchecked = ""
	if err := json.Unmarshal([]byte(out), &res); err != nil || !strings.HasPrefix(res.KubeletStart.Unchecked, unchecked) || !strings.Contains(errOut, "warning: "+tmp+": "+unchecked) {
		t.Errorf("v1.99.0: %v: stderr %q\n%s", err, errOut, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "node.json"), []byte(`{"schema":"kubectl-nodestate/node/v1","node":"worker-1","kubeletVersion":"v1.34.10"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// --kubelet-version still asks about another release, and no record is claimed.
	out, errOut, _ = cmdtest.Run(t, "doctor", "--from-dir", tmp, "--kubelet-version", decode.HomeKubelet, "-o", "json")
	if strings.Contains(errOut, "recorded by collect") || !strings.Contains(out, `"kubelet": "`+decode.HomeKubelet+`"`) {
		t.Errorf("stderr %q\n%s", errOut, out)
	}
}

// TestBundle: a collect bundle is a complete input: machine.json, kubelet-config.yaml and
// node.json's kubelet version are the defaults, and a flag still wins.
func TestBundle(t *testing.T) {
	set, _ := loadVectors(t)
	dir := caseDir(t, set, "cpu-s2c8t2n2-healthy-assigned__w1.37.1")
	tmp := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join(dir, "cpu_manager_state"), "cpu_manager_state")
	copyFile(filepath.Join(dir, "machine.json"), "machine.json")
	copyFile(kubeletConfig(t, dir), "kubelet-config.yaml")
	if err := os.WriteFile(filepath.Join(tmp, "node.json"), []byte(`{"schema":"kubectl-nodestate/node/v1","node":"w1","kubeletVersion":"v1.34.10"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "v1.34.10"},
		{[]string{"--kubelet-version", "v1.31.14"}, "v1.31.14"},
	} {
		out, errOut, code := cmdtest.Run(t, append([]string{"doctor", "--from-dir", tmp, "-o", "json"}, tc.args...)...)
		var got struct {
			KubeletStart struct {
				Starts  bool   `json:"starts"`
				Kubelet string `json:"kubelet"`
			} `json:"kubeletStart"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !got.KubeletStart.Starts || got.KubeletStart.Kubelet != tc.want {
			t.Errorf("%q: exit %d, %+v, want kubelet %s (%v)\n%s\n%s", tc.args, code, got, tc.want, err, out, errOut)
		}
	}
}
