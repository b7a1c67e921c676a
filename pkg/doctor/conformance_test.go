package doctor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The kubelet-start vectors: for each case (checkpoint files written by a real kubelet, a
// machine, a kubelet config) and each kubelet version, whether the real cpumanager and
// memorymanager packages of that version let the kubelet start, and their exact error.
const startVectorsDir = "../../testdata/kubelet-start"

type startManifest struct {
	Versions []string `json:"versions"`
	Cases    map[string]struct {
		Dir     string                    `json:"dir"`
		Files   []string                  `json:"files"`
		Results map[string]startExpectRow `json:"results"`
	} `json:"cases"`
}

type startExpectRow struct {
	Starts bool   `json:"starts"`
	Error  string `json:"error"`
	Phase  string `json:"phase"`
	CPU    struct {
		Phase string `json:"phase"`
		Error string `json:"error"`
	} `json:"cpu"`
	Memory struct {
		Phase string `json:"phase"`
		Error string `json:"error"`
	} `json:"memory"`
}

// startCase loads one case as doctor's inputs for one kubelet version: the files decoded for
// that kubelet, the machine, and the case's `kubelet` section as a KubeletConfiguration.
func startCase(t testing.TB, dir string, files []string, version string) StartInput {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseKubeletConfig(m.Kubelet)
	if err != nil {
		t.Fatal(err)
	}
	// The config's gates are the kubelet's: they change how it reads some files too.
	k, err := decode.ParseKubelet(version, cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	in := StartInput{Machine: m, Config: cfg, Kubelet: k}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
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

// loadStartManifest reads the kubelet-start vectors' MANIFEST.json.
func loadStartManifest(t *testing.T) startManifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(startVectorsDir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man startManifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	return man
}

func TestStartConformance(t *testing.T) {
	man := loadStartManifest(t)
	names := make([]string, 0, len(man.Cases))
	for n := range man.Cases {
		names = append(names, n)
	}
	sort.Strings(names)
	total, matched := 0, 0
	for _, name := range names {
		c := man.Cases[name]
		for _, v := range man.Versions {
			want, ok := c.Results[v]
			if !ok {
				continue
			}
			total++
			in := startCase(t, filepath.Join(startVectorsDir, c.Dir), c.Files, v)
			got, err := PredictStart(in)
			if err != nil {
				t.Errorf("%s @ %s: %v", name, v, err)
				continue
			}
			if got.Starts != want.Starts || got.Error != want.Error || got.Phase != want.Phase {
				t.Errorf("%s @ %s:\n got  starts=%v phase=%s error=%q\n want starts=%v phase=%s error=%q",
					name, v, got.Starts, got.Phase, got.Error, want.Starts, want.Phase, want.Error)
				continue
			}
			if got.CPU != nil && (got.CPU.Phase != want.CPU.Phase || got.CPU.Error != want.CPU.Error) {
				t.Errorf("%s @ %s: cpu manager got %s %q, want %s %q", name, v, got.CPU.Phase, got.CPU.Error, want.CPU.Phase, want.CPU.Error)
				continue
			}
			if got.Memory != nil && (got.Memory.Phase != want.Memory.Phase || got.Memory.Error != want.Memory.Error) {
				t.Errorf("%s @ %s: memory manager got %s %q, want %s %q", name, v, got.Memory.Phase, got.Memory.Error, want.Memory.Phase, want.Memory.Error)
				continue
			}
			matched++
		}
	}
	t.Logf("kubelet-start conformance: %d of %d (case x version) matched, %d cases x %d versions", matched, total, len(names), len(man.Versions))
	if total == 0 {
		t.Fatal("no vectors")
	}
}
