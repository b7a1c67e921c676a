package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The kubelet-start vectors: for each case (checkpoint files written by a real kubelet, a
// machine, a kubelet config) and each kubelet version, whether the real cpumanager and
// memorymanager packages of that version let the kubelet start, and their exact error. Each set
// is packed by hack/vectorpack (testdata/kubelet-start/README.md): each case's expectation is its
// results by version; the set's meta lists the versions.
//
// start is the shipped set (tools/statevec: 1.25.16, 1.31.14, 1.34.10, 1.37.1); start-admitvec
// holds the same cases run by hack/admitvec's start mode (hack/admitvec/start.sh: 1.37.1, equal
// to the shipped set's, and 1.38.0-beta.0); start-rows holds our own cases whose start tells
// 1.37 and 1.38 apart (hack/admitvec/startcases: the reserved CPUs' pick).
const startVectorsFile = "../../testdata/kubelet-start/start" + vectorpack.Ext

var startVectorsFiles = []string{startVectorsFile, "../../testdata/kubelet-start/start-admitvec" + vectorpack.Ext,
	"../../testdata/kubelet-start/start-rows" + vectorpack.Ext}

var startSets = func() map[string]func() (*vectorpack.Set, error) {
	m := map[string]func() (*vectorpack.Set, error){}
	for _, f := range startVectorsFiles {
		m[f] = sync.OnceValues(func() (*vectorpack.Set, error) { return vectorpack.ReadFile(f) })
	}
	return m
}()

// startVector is the case of that name in the shipped set, which the other tests of this
// package take their cases from.
func startVector(t testing.TB, name string) vectorpack.Case {
	t.Helper()
	return startVectorIn(t, startVectorsFile, name)
}

// startVectorIn is the case of that name in the set of that file.
func startVectorIn(t testing.TB, file, name string) vectorpack.Case {
	t.Helper()
	set, err := startSets[file]()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := set.Case(name)
	if !ok {
		t.Fatalf("%s: kubelet-start vector %s missing", file, name)
	}
	return c
}

// startCheckpoints are the checkpoint files a case may hold; its machine.json is the rest.
var startCheckpoints = []string{"cpu_manager_state", "memory_manager_state"}

type startManifest struct {
	Versions []string
	Cases    map[string]startManifestCase
}

type startManifestCase struct {
	Files   []string // the case's checkpoints
	Results map[string]startExpectRow
}

type startExpectRow struct {
	Starts bool           `json:"starts"`
	Error  string         `json:"error"`
	Phase  string         `json:"phase"`
	CPU    managerOutcome `json:"cpu"`
	Memory managerOutcome `json:"memory"`
}

// managerOutcome is one manager's own result in the manifest.
type managerOutcome struct {
	Policy string `json:"policy"`
	Phase  string `json:"phase"`
	Error  string `json:"error"`
}

// startCase loads one case as doctor's inputs for one kubelet version: the files decoded for
// that kubelet, the machine, and the case's `kubelet` section as a KubeletConfiguration.
func startCase(t testing.TB, name string, files []string, version string) replay.StartInput {
	t.Helper()
	return startCaseIn(t, startVectorsFile, name, files, version)
}

// startCaseIn is startCase for a case of the set of that file.
func startCaseIn(t testing.TB, file, name string, files []string, version string) replay.StartInput {
	t.Helper()
	raw, ok := startVectorIn(t, file, name).Files["machine.json"]
	if !ok {
		t.Fatalf("%s: no machine.json", name)
	}
	m, err := machine.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := replay.ParseKubeletConfig(m.Kubelet)
	if err != nil {
		t.Fatal(err)
	}
	return startCaseWithIn(t, file, name, files, version, m, cfg)
}

// startCaseWith is startCase with the kubelet config given (a fix applied to the case's).
func startCaseWith(t testing.TB, name string, files []string, version string, m *machine.Machine, cfg *replay.KubeletConfig) replay.StartInput {
	t.Helper()
	return startCaseWithIn(t, startVectorsFile, name, files, version, m, cfg)
}

func startCaseWithIn(t testing.TB, file, name string, files []string, version string, m *machine.Machine, cfg *replay.KubeletConfig) replay.StartInput {
	t.Helper()
	// The config's gates are the kubelet's: they change how it reads some files too.
	k, err := decode.ParseKubelet(version, cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	in := replay.StartInput{Machine: m, Config: cfg, Kubelet: k}
	c := startVectorIn(t, file, name)
	for _, f := range files {
		b, ok := c.Files[f]
		if !ok {
			t.Fatalf("%s: no %s", name, f)
		}
		kind, _ := decode.ParseKind(f)
		rep := decode.Decode(kind, b, decode.Options{Kubelet: &k})
		switch kind {
		case decode.KindCPU:
			in.CPU = rep
		case decode.KindMemory:
			in.Memory = rep
		}
	}
	return in
}

// loadStartManifest reads the kubelet-start vectors: the versions run, and each case's
// checkpoints and results.
func loadStartManifest(t *testing.T) startManifest {
	t.Helper()
	return loadStartManifestOf(t, startVectorsFile)
}

// loadStartManifestOf reads the set of that file.
func loadStartManifestOf(t *testing.T, file string) startManifest {
	t.Helper()
	set, err := startSets[file]()
	if err != nil {
		t.Fatal(err)
	}
	man := startManifest{Cases: map[string]startManifestCase{}}
	if err := json.Unmarshal(set.Meta["versions"], &man.Versions); err != nil {
		t.Fatalf("%s: versions: %v", file, err)
	}
	for _, c := range set.Cases {
		mc := startManifestCase{}
		if err := json.Unmarshal(c.Expected, &mc.Results); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for _, f := range startCheckpoints {
			if c.Has(f) {
				mc.Files = append(mc.Files, f)
			}
		}
		man.Cases[c.Name] = mc
	}
	return man
}

// TestStartVectorsComplete: every case has a result for every version, a machine, and no file
// but its checkpoints: a vanished result fails here rather than shrinking the conformance run (a
// vanished case or file fails to load).
func TestStartVectorsComplete(t *testing.T) {
	for _, file := range startVectorsFiles {
		t.Run(filepath.Base(file), func(t *testing.T) { startVectorsComplete(t, file) })
	}
}

func startVectorsComplete(t *testing.T, file string) {
	man := loadStartManifestOf(t, file)
	if len(man.Versions) == 0 || len(man.Cases) == 0 {
		t.Fatalf("manifest has %d versions and %d cases", len(man.Versions), len(man.Cases))
	}
	for _, name := range slices.Sorted(maps.Keys(man.Cases)) {
		c := man.Cases[name]
		if len(c.Results) != len(man.Versions) {
			t.Errorf("%s: results for %d versions, the manifest runs %d", name, len(c.Results), len(man.Versions))
		}
		for _, v := range man.Versions {
			if _, ok := c.Results[v]; !ok {
				t.Errorf("%s: no result for %s", name, v)
			}
		}
		for f := range startVectorIn(t, file, name).Files {
			if f != "machine.json" && !slices.Contains(startCheckpoints, f) {
				t.Errorf("%s: file %s is neither its machine nor a checkpoint", name, f)
			}
		}
		if !startVectorIn(t, file, name).Has("machine.json") {
			t.Errorf("%s: no machine.json", name)
		}
	}
}

// TestStartConformance: every case x version of the manifest, predicted as the real kubelet
// started: the outcome, its phase and error word for word, and each manager's own policy,
// phase and error.
func TestStartConformance(t *testing.T) {
	for _, file := range startVectorsFiles {
		t.Run(filepath.Base(file), func(t *testing.T) { startConformance(t, file) })
	}
}

func startConformance(t *testing.T, file string) {
	man := loadStartManifestOf(t, file)
	total, matched := 0, 0
	perVersion := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(man.Cases)) {
		c := man.Cases[name]
		for _, v := range man.Versions {
			want, ok := c.Results[v]
			if !ok {
				t.Errorf("%s @ %s: no result in the manifest", name, v)
				continue
			}
			total++
			in := startCaseIn(t, file, name, c.Files, v)
			got, err := replay.PredictStart(in)
			if err != nil {
				t.Errorf("%s @ %s: %v", name, v, err)
				continue
			}
			if got.Starts != want.Starts || got.Error != want.Error || got.Phase != want.Phase {
				t.Errorf("%s @ %s:\n got  starts=%v phase=%s error=%q\n want starts=%v phase=%s error=%q",
					name, v, got.Starts, got.Phase, got.Error, want.Starts, want.Phase, want.Error)
				continue
			}
			if msg := compareManagers(in, got, want); msg != "" {
				t.Errorf("%s @ %s: %s", name, v, msg)
				continue
			}
			matched++
			perVersion[v]++
		}
	}
	for _, v := range man.Versions {
		t.Logf("kubelet-start conformance %s: %d of %d cases matched", v, perVersion[v], len(man.Cases))
	}
	t.Logf("kubelet-start conformance: %d of %d (case x version) matched, %d cases x %d versions", matched, total, len(man.Cases), len(man.Versions))
	if want := len(man.Cases) * len(man.Versions); total != want || matched != total {
		t.Fatalf("%d of %d runs matched; the manifest holds %d", matched, total, want)
	}
}

// compareManagers compares each manager's own outcome with the manifest's. A config failure
// stops the kubelet before either manager runs: the manifest then records each as "ok" with
// its configured policy, and doctor reports no manager at all.
func compareManagers(in replay.StartInput, got replay.Prediction, want startExpectRow) string {
	if got.Phase == replay.PhaseConfig {
		if got.CPU != nil || got.Memory != nil {
			return fmt.Sprintf("a config failure, yet managers reported: cpu %+v, memory %+v", got.CPU, got.Memory)
		}
		if want.CPU.Phase != replay.PhaseOK || want.CPU.Error != "" || want.Memory.Phase != replay.PhaseOK || want.Memory.Error != "" {
			return fmt.Sprintf("a config failure, yet the manifest has managers failing: cpu %+v, memory %+v", want.CPU, want.Memory)
		}
		if want.CPU.Policy != in.Config.CPUPolicy() || want.Memory.Policy != in.Config.MemoryPolicy() {
			return fmt.Sprintf("configured policies cpu %q memory %q, the manifest's %q %q", in.Config.CPUPolicy(), in.Config.MemoryPolicy(), want.CPU.Policy, want.Memory.Policy)
		}
		return ""
	}
	for _, m := range []struct {
		name string
		got  *replay.ManagerResult
		want managerOutcome
	}{{"cpu", got.CPU, want.CPU}, {"memory", got.Memory, want.Memory}} {
		if m.got == nil {
			return fmt.Sprintf("no %s manager result, want %+v", m.name, m.want)
		}
		if m.got.Policy != m.want.Policy || m.got.Phase != m.want.Phase || m.got.Error != m.want.Error {
			return fmt.Sprintf("%s manager got policy %q %s %q, want %q %s %q", m.name, m.got.Policy, m.got.Phase, m.got.Error, m.want.Policy, m.want.Phase, m.want.Error)
		}
	}
	return ""
}
