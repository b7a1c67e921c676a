package nodestate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The restart vector packs (hack/admitvec/RESTART.md): the real kubelet's files before it
// restarted and each pod's fate after.
const restartPacks = "../../hack/admitvec/restart-out"

// Every reboot case of the packs where no plugin registers during the re-admissions (doctor's
// own outlook) is written as a collect bundle (its checkpoints, machine.json, the kubelet config
// and node.json, no pod spec) and read by doctor --from-dir: each pod the outlook lists at risk
// is one the real kubelet refused, with its words, and each the real kubelet refused and the
// files hold is at risk or not judged.
func TestRestartOutlookFromVectorBundles(t *testing.T) {
	sets, err := vectorpack.ReadDir(restartPacks)
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
