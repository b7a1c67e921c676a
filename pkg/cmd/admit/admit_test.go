package admit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
)

const example = "../../../examples/admit-node"

func offline(args ...string) []string {
	return append([]string{"admit", "--from-dir", example, "--machine", filepath.Join(example, "machine.json"),
		"--kubelet-config", filepath.Join(example, "kubelet-config.yaml"), "--kubelet-version", "v1.37.1"}, args...)
}

// A kubelet build no vector was made by is replayed with the newest rules, and the answer says
// so (a release day's nodes, until a plugin release names their build).
func TestAdmitUncheckedKubelet(t *testing.T) {
	cmdtest.Isolate(t)
	args := append(offline("-f", filepath.Join(example, "pod-db.yaml")), "--kubelet-version", "v1.99.0")
	out, stderr, code := cmdtest.Run(t, args...)
	want := "warning: " + example + ": kubelet v1.99.0 is newer than every build this plugin was checked against: judged by the rules of the newest, v1."
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(out, "yes") {
		t.Fatalf("exit %d, stderr %q, want %q\n%s", code, stderr, want, out)
	}
	if _, stderr, _ := cmdtest.Run(t, offline("-f", filepath.Join(example, "pod-db.yaml"))...); strings.Contains(stderr, "warning") {
		t.Errorf("v1.37.1 is checked: %q", stderr)
	}
	// -o json says it too, for the build checked not at all.
	for version, want := range map[string]string{"v1.99.0": "kubelet v1.99.0 is newer than every build", "v1.37.1": ""} {
		out, _, _ := cmdtest.Run(t, append(offline("-f", filepath.Join(example, "pod-db.yaml"), "-o", "json"), "--kubelet-version", version)...)
		var got struct {
			KubeletUnchecked *string `json:"kubeletUnchecked"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || (want == "") != (got.KubeletUnchecked == nil) || want != "" && !strings.HasPrefix(*got.KubeletUnchecked, want) {
			t.Errorf("%s -o json: %v, kubeletUnchecked %v, want %q", version, err, got.KubeletUnchecked, want)
		}
	}
}

// The JSON contract: "admissions" in -f order, each with pod, admitted, reason, message and
// containers {name, cpus, exclusive, memoryNUMANodes}; exit 1 when one is refused.
func TestAdmitJSONContract(t *testing.T) {
	cmdtest.Isolate(t)
	out, stderr, code := cmdtest.Run(t, offline("-o", "json",
		"-f", filepath.Join(example, "pod-db.yaml"), "-f", filepath.Join(example, "pod-wide.yaml"))...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a pod refused); stderr %s", code, stderr)
	}
	var got struct {
		KubeletStart struct {
			Starts *bool `json:"starts"`
		} `json:"kubeletStart"`
		Admissions []map[string]json.RawMessage `json:"admissions"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.KubeletStart.Starts == nil || !*got.KubeletStart.Starts || len(got.Admissions) != 2 {
		t.Fatalf("got %s", out)
	}
	for _, key := range []string{"pod", "admitted", "reason", "message", "containers"} {
		for i, a := range got.Admissions {
			if _, ok := a[key]; !ok {
				t.Errorf("admission %d lacks %q", i, key)
			}
		}
	}
	var db struct {
		Pod        string `json:"pod"`
		Admitted   bool   `json:"admitted"`
		Containers []struct {
			Name            string `json:"name"`
			CPUs            string `json:"cpus"`
			Exclusive       bool   `json:"exclusive"`
			MemoryNUMANodes []int  `json:"memoryNUMANodes"`
		} `json:"containers"`
	}
	raw, _ := json.Marshal(got.Admissions[0])
	if err := json.Unmarshal(raw, &db); err != nil {
		t.Fatal(err)
	}
	if db.Pod != "db" || !db.Admitted || len(db.Containers) != 1 || db.Containers[0].CPUs != "2-4,18-20" ||
		!db.Containers[0].Exclusive || len(db.Containers[0].MemoryNUMANodes) != 1 || db.Containers[0].MemoryNUMANodes[0] != 0 {
		t.Errorf("db: %s", raw)
	}
	// The real kubelet v1.37.1 refused this pod on this state with these words.
	var wide struct {
		Admitted bool   `json:"admitted"`
		Reason   string `json:"reason"`
		Message  string `json:"message"`
	}
	raw, _ = json.Marshal(got.Admissions[1])
	if err := json.Unmarshal(raw, &wide); err != nil || wide.Admitted || wide.Reason != "TopologyAffinityError" ||
		wide.Message != "Resources cannot be allocated with Topology locality" {
		t.Errorf("wide: %s", raw)
	}
}

func TestAdmitExitCodes(t *testing.T) {
	cmdtest.Isolate(t)
	if out, stderr, code := cmdtest.Run(t, offline("-f", filepath.Join(example, "pod-db.yaml"))...); code != 0 ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "default/db yes app 2-4,18-20 0") {
		t.Errorf("admitted pod: exit %d:\n%s%s", code, out, stderr)
	}
	// A refusal says which option forbade it, with the free CPUs.
	out, _, code := cmdtest.Run(t, offline("-f", filepath.Join(example, "pod-odd.yaml"))...)
	if code != 1 || !strings.Contains(out, "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2") ||
		!strings.Contains(out, "default/odd-3: cpuManagerPolicyOptions full-pcpus-only") || !strings.Contains(out, "free whole cores: 14") {
		t.Errorf("refused pod: exit %d:\n%s", code, out)
	}
	if _, _, code := cmdtest.Run(t, offline()...); code != 3 {
		t.Errorf("no pod: exit %d, want 3", code)
	}
	bad := filepath.Join(t.TempDir(), "svc.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cmdtest.Run(t, offline("-f", bad)...); code != 3 || !strings.Contains(stderr, `kind "Service": want Pod`) {
		t.Errorf("a Service: exit %d: %s", code, stderr)
	}
	// A kubelet that would not start admits nothing: "starts": false, exit 1.
	out, _, code = cmdtest.Run(t, append(offline("-f", filepath.Join(example, "pod-db.yaml"), "-o", "json"), "--kubelet-version", "v1.31.14")...)
	if code != 1 || !strings.Contains(out, `"starts": false`) || !strings.Contains(out, `"admissions": []`) {
		t.Errorf("no start: exit %d\n%s", code, out)
	}
}

// deviceCase writes a case of the real v1.37.1's device set as a kubelet root dir, and returns
// admit's arguments for it, without --devices, and the dir (its devices.json is the plugins').
func deviceCase(t *testing.T, name string) ([]string, string) {
	t.Helper()
	set, err := vectorpack.ReadFile("../../../testdata/admission/v1.37.1-devices" + vectorpack.Ext)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := set.Case(name)
	if !ok {
		t.Fatalf("no case %s in %s", name, set.Name)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := c.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kubelet map[string]any `json:"kubelet"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	m.Kubelet["apiVersion"], m.Kubelet["kind"] = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"
	config := filepath.Join(t.TempDir(), "config.json")
	b, _ = json.Marshal(m.Kubelet)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"admit", "--from-dir", dir, "--machine", filepath.Join(dir, "machine.json"), "--kubelet-config", config,
		"--kubelet-version", "v1.37.1", "-f", filepath.Join(dir, "pod.json")}, dir
}

// The third answer offline: a device checkpoint registers nvidia.com/gpu and no --devices says
// its plugin's devices, so the GPU pod is not judged (exit 4, never "yes"), and the JSON carries
// no "admitted": true. An empty --devices file is "no plugin registered yet": judged, as the
// kubelet refuses it then. With the plugin's devices it is the real kubelet's refusal.
func TestAdmitNotJudgedOffline(t *testing.T) {
	cmdtest.Isolate(t)
	args, dir := deviceCase(t, "s1n2c4t2__mismatch-layout__cpu-static-fpo__tm-restricted-pod__mem-None")
	out, stderr, code := cmdtest.Run(t, args...)
	flat := strings.Join(strings.Fields(out), " ")
	if code != 4 || !strings.Contains(flat, "default/p not judged -") ||
		!strings.Contains(out, "default/p: not judged: devices: device plugin resource nvidia.com/gpu: the device checkpoint registers nvidia.com/gpu, whose plugins and devices are not known offline: give --devices FILE") ||
		!strings.Contains(out, "default/p: replayed without its devices: ") || strings.Contains(flat, "default/p yes") {
		t.Errorf("no --devices: exit %d, want 4:\n%s%s", code, out, stderr)
	}
	out, _, code = cmdtest.Run(t, append(args, "-o", "json")...)
	var got struct {
		Admissions []struct {
			Verdict   string   `json:"verdict"`
			Admitted  bool     `json:"admitted"`
			NotJudged []string `json:"notJudged"`
		} `json:"admissions"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 4 || len(got.Admissions) != 1 ||
		got.Admissions[0].Verdict != "notJudged" || got.Admissions[0].Admitted || len(got.Admissions[0].NotJudged) != 1 {
		t.Errorf("json: exit %d, %v: %+v\n%s", code, err, got, out)
	}
	empty := filepath.Join(t.TempDir(), "none.json")
	if err := os.WriteFile(empty, []byte(`{"resources": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = cmdtest.Run(t, append(args, "--devices", empty)...)
	if code != 1 || strings.Contains(out, "not judged") || !strings.Contains(strings.Join(strings.Fields(out), " "), "default/p no") {
		t.Errorf("empty --devices: exit %d, want 1 (judged: refused):\n%s%s", code, out, stderr)
	}
	out, _, code = cmdtest.Run(t, append(args, "--devices", filepath.Join(dir, "devices.json"))...)
	if code != 1 || !strings.Contains(out, "TopologyAffinityError") || strings.Contains(out, "not judged") {
		t.Errorf("with the plugin's devices: exit %d, want 1:\n%s", code, out)
	}
}

// A pod whose exclusive CPUs send the kubelet's NUMA-distributed picker into its endless loop
// (examples/admit-hang, from the real-kubelet vector hang__s2n4c8t2__rsc0_4_8_12__n22__fpo+dan):
// admit answers at once that the kubelet never will, and that the pod after it waits.
func TestAdmitHang(t *testing.T) {
	cmdtest.Isolate(t)
	const hang = "../../../examples/admit-hang"
	args := []string{"admit", "--from-dir", hang, "--machine", filepath.Join(hang, "machine.json"),
		"--kubelet-config", filepath.Join(hang, "kubelet-config.yaml"), "--kubelet-version", "v1.37.1",
		"-f", filepath.Join(hang, "pod-wide.yaml"), "-f", filepath.Join(hang, "pod-small.yaml")}
	out, stderr, code := cmdtest.Run(t, args...)
	flat := strings.Join(strings.Fields(out), " ")
	if code != 1 || !strings.Contains(flat, "default/wide hangs - - - KubeletHangs the kubelet never returns") ||
		!strings.Contains(flat, "default/small waits - - - - not reached: the kubelet's admission is stuck on pod wide") ||
		!strings.Contains(out, "kubernetes/kubernetes#140730") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr)
	}
	out, _, code = cmdtest.Run(t, append(args, "-o", "json")...)
	var got struct {
		Admissions []struct {
			Pod                         string
			Admitted, Hangs, NotReached bool
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || len(got.Admissions) != 2 ||
		!got.Admissions[0].Hangs || got.Admissions[0].Admitted || !got.Admissions[1].NotReached || got.Admissions[1].Hangs {
		t.Errorf("json: exit %d, %v: %+v\n%s", code, err, got, out)
	}
}

// --devices replays the device manager on the node's device checkpoint (--from-dir): the
// contract's "devices" per container and the providers replayed, devices first; a plugin only
// the checkpoint knows is the kubelet's own refusal. Cases of the real v1.37.1's device set.
func TestAdmitDevices(t *testing.T) {
	cmdtest.Isolate(t)
	run := func(name string, extra ...string) (string, string, int) {
		args, dir := deviceCase(t, name)
		return cmdtest.Run(t, append(append(args, "--devices", filepath.Join(dir, "devices.json")), extra...)...)
	}
	out, stderr, code := run("s1n2c4t2__init-sidecar__gpu1pn__cpu-none__tm-best-effort-container__mem-None", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	var got struct {
		Replayed   []string `json:"hintProvidersReplayed"`
		Admissions []struct {
			Containers []struct {
				Name        string              `json:"name"`
				Devices     map[string][]string `json:"devices"`
				DevicesPick map[string]string   `json:"devicesPick"`
			} `json:"containers"`
		} `json:"admissions"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Join(got.Replayed, ",") != "devices,cpu,memory" || len(got.Admissions) != 1 || len(got.Admissions[0].Containers) != 3 {
		t.Fatalf("got %s", out)
	}
	// The init container's GPU goes on to the sidecar (reuse); the app needs the other one.
	byName := map[string][]string{}
	for _, c := range got.Admissions[0].Containers {
		byName[c.Name] = c.Devices["nvidia.com/gpu"]
		if c.DevicesPick["nvidia.com/gpu"] == "" {
			t.Errorf("container %s: no devicesPick", c.Name)
		}
	}
	if len(byName["init"]) != 1 || !slices.Equal(byName["init"], byName["sc"]) || len(byName["app"]) != 1 || byName["app"][0] == byName["sc"][0] {
		t.Errorf("devices %v", byName)
	}
	// The classic mismatch: GPUs free on NUMA node 1 only, exclusive CPUs on node 0 only. Refused
	// under single-numa-node, with what was free where; admitted apart under best-effort.
	out, _, code = run("s1n2c4t2__mismatch-layout__cpu-static__tm-single-numa-node-container__mem-None")
	if code != 1 || !strings.Contains(out, "the device, CPU and memory managers' NUMA hints merge to no affinity") ||
		!strings.Contains(out, "by NUMA node: 0: 1-3,8-11 [7], 1: none [0]") || !strings.Contains(out, "free nvidia.com/gpu devices: 2; NUMA 1: gpu-0,gpu-1 [2]") {
		t.Errorf("mismatch, single-numa-node: exit %d\n%s", code, out)
	}
	out, _, code = run("s1n2c4t2__mismatch-layout__cpu-static__tm-best-effort-container__mem-None", "-o", "wide")
	if code != 0 || !strings.Contains(out, "CPU-NUMA") || !strings.Contains(out, "nvidia.com/gpu gpu-0 NUMA 1*") ||
		!strings.Contains(out, "its CPUs are on NUMA 0, its nvidia.com/gpu devices on none of them") {
		t.Errorf("mismatch, best-effort: exit %d\n%s", code, out)
	}
	out, _, code = run("s2n2c4t2__plugin-gone__cpu-static__tm-best-effort-pod__mem-None")
	if code != 1 || !strings.Contains(out, "no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu") {
		t.Errorf("exit %d, want 1 and the device manager's refusal:\n%s", code, out)
	}
}

// Manifests carry no UID, and the managers key their state by it: each pod read gets its own,
// so two identical pods stack (the second on other CPUs), not one pod admitted twice.
func TestAdmitPodsWithoutUIDsStack(t *testing.T) {
	cmdtest.Isolate(t)
	pods := filepath.Join(t.TempDir(), "two.yaml")
	db, err := os.ReadFile(filepath.Join(example, "pod-db.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(string(db), "name: db", "name: db-2", 1)
	if err := os.WriteFile(pods, []byte(string(db)+"---\n"+second), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cmdtest.Run(t, offline("-o", "json", "-f", pods)...)
	var got struct {
		Admissions []struct {
			Pod        string `json:"pod"`
			Admitted   bool   `json:"admitted"`
			Containers []struct {
				CPUs string `json:"cpus"`
			} `json:"containers"`
		} `json:"admissions"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || len(got.Admissions) != 2 {
		t.Fatalf("exit %d, %v, stderr %s\n%s", code, err, stderr, out)
	}
	first, next := got.Admissions[0], got.Admissions[1]
	if !first.Admitted || !next.Admitted || len(first.Containers) != 1 || len(next.Containers) != 1 ||
		first.Containers[0].CPUs != "2-4,18-20" || next.Containers[0].CPUs == first.Containers[0].CPUs {
		t.Errorf("db then db-2: %s", out)
	}
}

// pod/NAME replays a pod of the API on its own node: a node or a file beside it is refused.
func TestAdmitPodRefTakesNoNodeOrFile(t *testing.T) {
	cmdtest.Isolate(t)
	for _, args := range [][]string{
		{"admit", "pod/web", "worker-1"},
		{"admit", "pod/web", "-f", filepath.Join(example, "pod-db.yaml")},
	} {
		_, stderr, code := cmdtest.Run(t, args...)
		if code == 0 || !strings.Contains(stderr, "pod/NAME takes no node and no -f") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}
