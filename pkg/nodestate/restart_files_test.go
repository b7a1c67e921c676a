package nodestate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The restart vector packs (hack/admitvec/RESTART.md): the real kubelet's files before it
// restarted and each pod's fate after.
const restartPacks = "../../testdata/admission/*-restart" + vectorpack.Ext

// Every reboot case of the packs where no plugin registers during the re-admissions (doctor's
// own outlook) is written as a collect bundle (its checkpoints, machine.json, the kubelet config
// and node.json, no pod spec) and read by doctor --from-dir: each pod the outlook lists at risk
// is one the real kubelet refused, with its words, and each the real kubelet refused and the
// files hold is at risk or not judged.
func TestRestartOutlookFromVectorBundles(t *testing.T) {
	sets, err := vectorpack.ReadGlob(restartPacks)
	if err != nil {
		t.Fatal(err)
	}
	cases, atRisk, notJudged := 0, 0, 0
	for _, set := range sets {
		kubelet := set.MetaString("kubelet")
		for _, c := range set.Cases {
			var restart struct {
				Kind     string `json:"kind"`
				Register []struct {
					AfterPods int `json:"afterPods"`
				} `json:"register"`
			}
			if err := json.Unmarshal(c.Files["restart.json"], &restart); err != nil {
				t.Fatal(err)
			}
			if restart.Kind != admit.RestartReboot || len(restart.Register) == 0 || restart.Register[0].AfterPods < 99 {
				continue
			}
			var want struct {
				Starts bool `json:"starts"`
				Pods   []struct {
					UID     string `json:"uid"`
					Admit   bool   `json:"admit"`
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"pods"`
			}
			if err := json.Unmarshal(c.Expected, &want); err != nil || !want.Starts {
				t.Fatalf("%s: %v", c.Name, err)
			}
			cases++
			out := vectorBundleOutlook(t, c, kubelet)
			risk := map[string]PodAtRisk{}
			for _, p := range out.AtRisk {
				risk[strings.TrimPrefix(p.Pod, "pod ")] = p
			}
			judgedNot := strings.Join(out.NotJudged, " ")
			for _, w := range want.Pods {
				p, listed := risk[w.UID]
				switch {
				case listed && w.Admit:
					t.Errorf("%s %s: pod %s at risk (%s), the real kubelet admitted it", kubelet, c.Name, w.UID, p.Message)
				case listed && (p.Reason != w.Reason || p.Message != w.Message):
					t.Errorf("%s %s: pod %s refused with %q, the real kubelet's words: %q", kubelet, c.Name, w.UID, p.Message, w.Message)
				case listed:
					atRisk++
				case !w.Admit && strings.Contains(judgedNot, "pod "+w.UID+" "):
					notJudged++
				case !w.Admit && strings.HasSuffix(w.UID, "-n"):
					// A new pod: in no file.
				case !w.Admit:
					t.Errorf("%s %s: the real kubelet refused pod %s (%s), the outlook does not say so: %+v", kubelet, c.Name, w.UID, w.Message, out)
				}
			}
		}
	}
	t.Logf("%d reboot cases with no plugin back: %d pods at risk as the real kubelet refused them, %d refused pods not judged", cases, atRisk, notJudged)
	if cases == 0 || atRisk == 0 {
		t.Fatalf("no case exercised the outlook: %d cases, %d at risk", cases, atRisk)
	}
}

// vectorBundleOutlook writes the case as a collect bundle and returns doctor's reboot outlook.
func vectorBundleOutlook(t *testing.T, c vectorpack.Case, kubelet string) RestartOutlook {
	t.Helper()
	dir := vectorBundle(t, c, kubelet)
	dc, _, err := LoadDoctorConfig("", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	res := readOne(t, Config{FromDir: dir, Engines: Engines{Doctor: dc}})
	if res.Doctor == nil || len(res.Doctor.Restart) != 1 || res.Doctor.Restart[0].Kind != admit.RestartReboot || !res.Doctor.Restart[0].FromFiles {
		t.Fatalf("%s: %+v", c.Name, res.Doctor)
	}
	return res.Doctor.Restart[0]
}

// vectorBundle writes the case as a collect bundle of an older collect: its checkpoints,
// machine.json, the kubelet config and node.json, no pod.
func vectorBundle(t *testing.T, c vectorpack.Case, kubelet string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint", "machine.json"} {
		if b, ok := c.Files[f]; ok {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := machine.Parse(c.Files["machine.json"])
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ConfigYAMLFile), m.Kubelet, 0o600)
	os.WriteFile(filepath.Join(dir, NodeInfoFile), []byte(`{"schema":"`+NodeInfoSchema+`","node":"n","kubeletVersion":"`+kubelet+`"}`), 0o600)
	return dir
}

// A bundle with a cgroups section: a pod of the device checkpoint with no directory under its
// cgroup ran nothing when the bundle was collected (deleted or finished, its entries not yet
// cleaned), which the kubelet does not re-admit: not judged, no alarm; with its containers'
// directories there, the reboot refuses it until its plugins register.
func TestRestartOutlookFromABundleWithCgroups(t *testing.T) {
	const trainer, other = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f", "c956c337-b836-4801-b85a-e41649c6788c"
	dump := func(pods ...string) string {
		lines := []string{"@@nodestate-cgroup v1", "@hierarchy 1", "=./kubepods", "./kubepods/cpuset.cpus:0-1", "./kubepods/cpuset.effective_cpus:0-1", "./kubepods/cpuset.mems:0"}
		for _, uid := range pods {
			for _, d := range []string{"./kubepods/pod" + uid, "./kubepods/pod" + uid + "/sandbox", "./kubepods/pod" + uid + "/ctr"} {
				lines = append(lines, "="+d, d+"/cpuset.cpus:0-1", d+"/cpuset.effective_cpus:0-1", d+"/cpuset.mems:0")
			}
		}
		return strings.Join(append(lines, "@@end"), "\n") + "\n"
	}
	for _, tc := range []struct {
		running    []string
		wantAtRisk []string
	}{
		{[]string{trainer, other}, []string{"pod " + trainer}},
		{[]string{other}, nil},
	} {
		// The recorded node's device checkpoint (its CPU and memory state are a 2-CPU host's).
		dir := copyTree(t, filepath.Join("testdata", "noderoot", "kubelet"))
		os.Remove(filepath.Join(dir, "cpu_manager_state"))
		os.Remove(filepath.Join(dir, "memory_manager_state"))
		os.Rename(filepath.Join(dir, "config.yaml"), filepath.Join(dir, ConfigYAMLFile))
		machine, _ := os.ReadFile(filepath.Join(repo, "examples/doctor-node/machine.json"))
		os.WriteFile(filepath.Join(dir, MachineFile), machine, 0o600)
		os.WriteFile(filepath.Join(dir, NodeInfoFile), []byte(`{"schema":"`+NodeInfoSchema+`","node":"n","kubeletVersion":"v1.37.1"}`), 0o600)
		os.WriteFile(filepath.Join(dir, CgroupsFile), []byte(dump(tc.running...)), 0o600)
		dc, _, err := LoadDoctorConfig("", "", dir)
		if err != nil {
			t.Fatal(err)
		}
		res := readOne(t, Config{FromDir: dir, Engines: Engines{Doctor: dc}})
		if res.Cgroups == nil || res.Doctor == nil || len(res.Doctor.Restart) != 1 {
			t.Fatalf("running %v: cgroups %v (%v), doctor %+v", tc.running, res.Cgroups, res.CgroupsErr, res.Doctor)
		}
		o := res.Doctor.Restart[0]
		var atRisk []string
		for _, p := range o.AtRisk {
			atRisk = append(atRisk, p.Pod)
		}
		if !slices.Equal(atRisk, tc.wantAtRisk) {
			t.Errorf("running %v: at risk %v, want %v (not judged %v)", tc.running, atRisk, tc.wantAtRisk, o.NotJudged)
		}
		if !slices.Contains(tc.running, trainer) && !strings.Contains(strings.Join(o.NotJudged, " "), "pod "+trainer+" (nothing of it ran when the bundle's cgroups were read") {
			t.Errorf("running %v: the trainer is not said to have run nothing: %v", tc.running, o.NotJudged)
		}
	}
}
