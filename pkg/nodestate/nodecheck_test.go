package nodestate

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/davecgh/go-spew/spew"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// cpuCheckpoint writes a cpu_manager_state in the layout kubelets 1.18-1.35 write (V2: pod UID
// -> container -> CPUs), its checksum by the kubelet's own algorithm (dump.ForHash's spew text
// of the V2 struct named CPUManagerCheckpoint, fnv32a).
func cpuCheckpoint(t testing.TB, defaultSet string, entries map[string]map[string]string) []byte {
	t.Helper()
	type CPUManagerCheckpoint struct {
		PolicyName    string
		DefaultCPUSet string
		Entries       map[string]map[string]string
		Checksum      uint64
	}
	cp := CPUManagerCheckpoint{PolicyName: "static", DefaultCPUSet: defaultSet, Entries: entries}
	forHash := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true, DisablePointerAddresses: true, DisableCapacities: true}
	text := strings.Replace(forHash.Sprintf("%#v", &cp), "nodestate.CPUManagerCheckpoint", "state.CPUManagerCheckpoint", 1)
	text = strings.Replace(text, "Checksum:(uint64)", "Checksum:(checksum.Checksum)", 1)
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", text)
	raw, err := json.Marshal(map[string]any{"policyName": cp.PolicyName, "defaultCpuSet": cp.DefaultCPUSet, "entries": cp.Entries, "checksum": h.Sum32()})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// testContainer is one container of a generated node: its pod, name, containerd ID, the CPUs
// the checkpoint assigns it exclusively ("" for the shared pool) and its cgroup's cpuset.cpus.
type testContainer struct {
	pod, name, id, assigned, cgroup string
}

// generatedNode writes a node of the given CPUs' shared pool and containers: a kubelet root
// dir with cpu_manager_state, a cgroup v2 mount (cgroupfs driver, containerd: kubepods/pod<uid>
// /<id>, each pod with its sandbox) and containerd's bundles; it returns the checks' config. A
// container whose cgroup is "-" is not running (its pod's sandbox is), "gone" has no pod cgroup.
func generatedNode(t testing.TB, shared string, ctrs []testContainer) LocalConfig {
	t.Helper()
	return writeNode(t, t.TempDir(), shared, ctrs)
}

// writeNode is generatedNode in dir.
func writeNode(t testing.TB, dir, shared string, ctrs []testContainer) LocalConfig {
	t.Helper()
	lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: "v1.35.0"}
	lc.RootDir, lc.CgroupRoot = filepath.Join(dir, "kubelet"), filepath.Join(dir, "cgroup")
	state := filepath.Join(dir, "containerd")
	lc.Runtimes = []nodelocal.Runtime{nodelocal.Runtimes[0]}
	lc.Runtimes[0].Bundles = filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", "*", "config.json")
	write := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cpuset := func(d, cpus string) {
		write(filepath.Join(d, "cpuset.cpus"), cpus+"\n")
		write(filepath.Join(d, "cpuset.cpus.effective"), cpus+"\n")
		write(filepath.Join(d, "cpuset.mems"), "0\n")
	}
	write(filepath.Join(lc.CgroupRoot, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	entries := map[string]map[string]string{}
	for _, c := range ctrs {
		pod := filepath.Join(lc.CgroupRoot, "kubepods", "pod"+c.pod)
		if _, err := os.Stat(pod); err != nil && c.cgroup != "gone" {
			cpuset(pod, "")
			cpuset(filepath.Join(pod, "sandbox"+c.pod[:8]), "0-63")
		}
		if c.cgroup != "-" && c.cgroup != "gone" {
			cpuset(filepath.Join(pod, c.id), c.cgroup)
			write(filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", c.id, "config.json"),
				fmt.Sprintf(`{"ociVersion":"1.1.0","annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-uid":%q,"io.kubernetes.cri.container-name":%q}}`, c.pod, c.name))
		}
		if c.assigned != "" {
			if entries[c.pod] == nil {
				entries[c.pod] = map[string]string{}
			}
			entries[c.pod][c.name] = c.assigned
		}
	}
	write(filepath.Join(lc.RootDir, "cpu_manager_state"), string(cpuCheckpoint(t, shared, entries)))
	return lc
}

func checkOne(t *testing.T, lc LocalConfig, c NodeCheck) CheckResult {
	t.Helper()
	res, err := CheckNode(context.Background(), lc, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Check != c {
		t.Fatalf("%+v", res)
	}
	return res[0]
}

const (
	podA = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	podB = "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9"
)

// The cgroup check finds drift, CPUs handed out twice and leaked CPUs on a generated node,
// and nothing on the healthy one.
func TestCheckCgroups(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ctrs   []testContainer
		status CheckStatus
		want   string
	}{
		{"healthy", []testContainer{{podA, "app", "a1", "2-3", "2-3"}, {podB, "web", "b1", "", "0-1"}}, CheckOK, "cgroups agree with the CPU and memory state (2 containers)"},
		{"drift", []testContainer{{podA, "app", "a1", "2-3", "0-3"}, {podB, "web", "b1", "", "0-1"}}, CheckProblem, "cpuset-drift " + podA + "/app"},
		{"shared pool on exclusive CPUs", []testContainer{{podA, "app", "a1", "2-3", "2-3"}, {podB, "web", "b1", "", "0-2"}}, CheckProblem, "cpus-on-exclusive " + podB + "/web (+1 more)"},
		{"handed out twice", []testContainer{{podA, "app", "a1", "2-3", "2-3"}, {podB, "db", "b1", "3", "3"}}, CheckProblem, "cpus-handed-out-twice " + podB + "/db"},
		{"stopped, its sandbox runs", []testContainer{{podA, "app", "a1", "2-3", "-"}, {podB, "web", "b1", "", "0-1"}}, CheckOK, "cgroups agree with the CPU and memory state (1 containers)"},
		{"leaked", []testContainer{{podA, "app", "a1", "2-3", "gone"}, {podB, "web", "b1", "", "0-1"}}, CheckProblem, "cpus-leaked pod " + podA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := generatedNode(t, "0-1", tc.ctrs)
			if got := checkOne(t, lc, CheckCheckpoints); got.Status != CheckOK {
				t.Fatalf("the generated checkpoint: %+v", got)
			}
			got := checkOne(t, lc, CheckCgroups)
			if got.Status != tc.status || got.Summary != tc.want {
				t.Errorf("%d %q, want %d %q (%+v)", got.Status, got.Summary, tc.status, tc.want, got.Problems)
			}
		})
	}
	lc := generatedNode(t, "0-1", nil)
	if got := checkOne(t, lc, CheckCgroups); got.Status != CheckUnknown || !strings.Contains(got.Summary, "no kubepods cgroup tree under") {
		t.Errorf("no kubepods tree: %+v", got)
	}
	lc.CgroupRoot = t.TempDir()
	if got := checkOne(t, lc, CheckCgroups); got.Status != CheckUnknown || !strings.Contains(got.Summary, "no cpuset cgroup tree") {
		t.Errorf("no cgroup mount: %+v", got)
	}
}

// copyTree copies a fixture dir.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// The checkpoint check: the bundled example is valid for its kubelet; a flipped digit in a
// checksum is corrupt; no version known judges by the newest release writing the files.
func TestCheckCheckpoints(t *testing.T) {
	root := copyTree(t, filepath.Join("..", "..", "examples", "kubelet-root"))
	lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: "v1.37.1"}
	lc.RootDir = root
	if got := checkOne(t, lc, CheckCheckpoints); got.Status != CheckOK || got.Summary != "7 checkpoint files valid for kubelet v1.37.1" {
		t.Errorf("%+v", got)
	}
	p := filepath.Join(root, "cpu_manager_state")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"dataChecksum":3859490060`, `"dataChecksum":3859490061`, 1)), 0o644)
	got := checkOne(t, lc, CheckCheckpoints)
	if got.Status != CheckProblem || !strings.HasPrefix(got.Summary, "cpu_manager_state corrupt for kubelet v1.37.1") {
		t.Errorf("%+v", got)
	}
	lc.KubeletVersion, lc.KubeletBinaries = "", []string{filepath.Join(root, "no-kubelet")}
	if got := checkOne(t, lc, CheckCheckpoints); got.Status != CheckProblem || !strings.Contains(got.Summary, "corrupt for the newest kubelet writing them") {
		t.Errorf("no version: %+v", got)
	}
}

// sysfsTree writes a machine's sysfs dump (pkg/machine/testdata) out as /sys and /proc trees.
func sysfsTree(t *testing.T, dump string) (sys, proc string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "machine", "testdata", "sysfs", dump))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sys, proc = filepath.Join(dir, "sys"), filepath.Join(dir, "proc")
	for _, line := range strings.Split(string(b), "\n") {
		p, content, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "@@") {
			continue
		}
		switch {
		case strings.HasPrefix(p, "/sys/"):
			p = filepath.Join(sys, p[len("/sys/"):])
		case strings.HasPrefix(p, "/proc/"):
			p = filepath.Join(proc, p[len("/proc/"):])
		default:
			p = filepath.Join(sys, "devices", "system", p)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, content)
		f.Close()
	}
	return sys, proc
}

// The restart check is doctor's start prediction: the recorded node whose config changed the
// CPU manager policy would not start (the real kubelet's error, testdata/kubelet-start-real);
// with its policy back, it would; without a version or a config it cannot judge.
func TestCheckRestart(t *testing.T) {
	root := copyTree(t, filepath.Join("testdata", "noderoot", "kubelet"))
	lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: "v1.37.1"}
	lc.RootDir = root
	lc.SysRoot, lc.ProcRoot = sysfsTree(t, "kvm-2cpu.txt")
	lc.Runtimes = []nodelocal.Runtime{{Name: "containerd", Bundles: filepath.Join(t.TempDir(), "*", "config.json")}} // none found
	got := checkOne(t, lc, CheckRestart)
	if got.Status != CheckProblem || !strings.HasPrefix(got.Summary, `kubelet v1.37.1 would not start: could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static"`) {
		t.Errorf("%+v", got)
	}
	config := filepath.Join(root, "config.yaml")
	b, _ := os.ReadFile(config)
	os.WriteFile(config, []byte(strings.Replace(string(b), "cpuManagerPolicy: none", "cpuManagerPolicy: static", 1)), 0o644)
	// It starts; its files hold the trainer on GPUs and a VF, which a reboot refuses until their
	// plugins register (the restart outlook, from the files).
	if got := checkOne(t, lc, CheckRestart); got.Status != CheckProblem ||
		!strings.HasPrefix(got.Summary, "kubelet v1.37.1 would start with its config and files, but if this node reboots") ||
		!strings.Contains(got.Summary, "pod 6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f waits on intel.com/sriov_netdevice, nvidia.com/gpu") {
		t.Errorf("policy back: %+v", got)
	}
	lc.KubeletConfigFile = filepath.Join(root, "absent.yaml")
	if got := checkOne(t, lc, CheckRestart); got.Status != CheckUnknown || !strings.HasPrefix(got.Summary, "cannot judge: kubelet config "+lc.KubeletConfigFile) {
		t.Errorf("no config: %+v", got)
	}
	lc.KubeletConfigFile, lc.KubeletVersion, lc.KubeletBinaries = "", "", []string{filepath.Join(root, "absent")}
	if got := checkOne(t, lc, CheckRestart); got.Status != CheckUnknown || !strings.HasPrefix(got.Summary, "cannot judge: kubelet version: no kubelet binary at") {
		t.Errorf("no version: %+v", got)
	}
}

// node-check restart on a node known by its files and its runtime's state: the kubelet restart
// re-admits the trainer (its GPUs and VF in the device checkpoint) while its container runs, so
// it comes back; with its sandbox running but not its container (between restarts) it is
// refused as at a reboot, and the outlook says so; with neither running, the pod is gone or
// done as far as the node knows, and not judged: no problem.
func TestCheckRestartWithTheRuntimesContainers(t *testing.T) {
	const trainer, other = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f", "c956c337-b836-4801-b85a-e41649c6788c"
	for _, tc := range []struct {
		running   [][2]string // pod UID, container ("": its sandbox)
		wantCheck []string
	}{
		{[][2]string{{trainer, ""}, {trainer, "trainer"}, {other, "main"}}, []string{CheckIfReboot}},
		{[][2]string{{trainer, ""}, {other, "main"}}, []string{CheckIfReboot, CheckIfKubeletRestart}},
		{[][2]string{{other, "main"}}, nil},
	} {
		root := copyTree(t, filepath.Join("testdata", "noderoot", "kubelet"))
		config := filepath.Join(root, "config.yaml")
		b, _ := os.ReadFile(config)
		os.WriteFile(config, []byte(strings.Replace(string(b), "cpuManagerPolicy: none", "cpuManagerPolicy: static", 1)), 0o644)
		lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: "v1.37.1"}
		lc.RootDir = root
		lc.SysRoot, lc.ProcRoot = sysfsTree(t, "kvm-2cpu.txt")
		state := t.TempDir()
		lc.Runtimes = []nodelocal.Runtime{nodelocal.Runtimes[0]}
		lc.Runtimes[0].Bundles = filepath.Join(state, "*", "config.json")
		for i, c := range tc.running {
			dir := filepath.Join(state, fmt.Sprintf("c%d", i))
			os.MkdirAll(dir, 0o755)
			bundle := fmt.Sprintf(`{"annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-uid":%q,"io.kubernetes.cri.container-name":%q}}`, c[0], c[1])
			if c[1] == "" {
				bundle = fmt.Sprintf(`{"annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-uid":%q}}`, c[0])
			}
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(bundle), 0o644)
		}
		got := checkOne(t, lc, CheckRestart)
		var checks []string
		for _, f := range got.Problems {
			checks = append(checks, f.Check)
		}
		if wantStatus := map[bool]CheckStatus{true: CheckProblem, false: CheckOK}[len(tc.wantCheck) > 0]; got.Status != wantStatus || !slices.Equal(checks, tc.wantCheck) {
			t.Errorf("running %v: problems %v, want %v: %+v", tc.running, checks, tc.wantCheck, got)
		}
		if len(got.Problems) == 2 && !strings.Contains(got.Problems[1].Message, "pod "+trainer+" waits on intel.com/sriov_netdevice, nvidia.com/gpu") {
			t.Errorf("kubelet restart: %s", got.Problems[1].Message)
		}
	}
}

// The device check: the recorded node's device checkpoint names plugins whose sockets are gone
// and a DRA device its driver reported unhealthy; with the sockets back the unhealthy device
// remains; a node without device or DRA state has nothing to disagree.
func TestCheckDevices(t *testing.T) {
	root := copyTree(t, filepath.Join("testdata", "noderoot"))
	lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: "v1.37.1"}
	lc.RootDir = filepath.Join(root, "kubelet")
	lc.CDIDirs = []string{filepath.Join(root, "host", "etc", "cdi"), filepath.Join(root, "host", "var", "run", "cdi")}
	got := checkOne(t, lc, CheckDevices)
	if got.Status != CheckProblem || !strings.HasPrefix(got.Summary, "device-plugin-gone ") {
		t.Errorf("%+v", got)
	}
	for _, s := range []string{"kubelet.sock", "gpu.example.com.sock"} {
		l, err := net.Listen("unix", filepath.Join(lc.RootDir, "device-plugins", s))
		if err != nil {
			t.Skipf("no unix sockets here: %v", err)
		}
		defer l.Close()
	}
	got = checkOne(t, lc, CheckDevices)
	for _, p := range got.Problems {
		if p.Check == "device-plugin-gone" {
			t.Errorf("sockets back: %+v", p)
		}
	}
	if got.Status != CheckProblem || len(got.Problems) == 0 {
		t.Errorf("sockets back: %+v", got)
	}
	if got := checkOne(t, generatedNode(t, "0-1", nil), CheckDevices); got.Status != CheckOK {
		t.Errorf("no device state: %+v", got)
	}
}
