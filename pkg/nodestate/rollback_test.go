package nodestate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// The upgrade and rollback gates across the allocation files' V1/V2 boundary: a 1.38.0-beta.0
// node's V2 files under a 1.37.1 kubelet (a rollback: it restores their V1 entries) and V1 files
// under 1.38.0-beta.0 (an upgrade: it migrates them). The verdicts are the real readers'
// (testdata/kubelet/expected/<file>/<writer>/*.json, written by hack/restorevec/alloc).
var gateReaders = []string{"v1.37.1", "v1.38.0-beta.0"}

type gateVector struct {
	kind   decode.Kind
	file   string // the vector, as the kubelet's file
	name   string
	reader string
	valid  bool
	err    string // the reader's error, the file's path as on the node (/var/lib/kubelet)
}

// gateVectors is every allocation vector read by both releases of gateReaders.
func gateVectors(t *testing.T) []gateVector {
	t.Helper()
	var out []gateVector
	for _, kind := range []decode.Kind{decode.KindAllocated, decode.KindActuated} {
		base := decode.PathOf(kind)
		exps, err := filepath.Glob(filepath.Join(repo, "testdata", "kubelet", "expected", base, "*", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, exp := range exps {
			raw, err := os.ReadFile(exp)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Reads map[string]struct {
					Verdict string  `json:"verdict"`
					Error   *string `json:"error"`
				} `json:"reads"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("%s: %v", exp, err)
			}
			rel, _ := filepath.Rel(filepath.Join(repo, "testdata", "kubelet", "expected"), exp)
			for _, reader := range gateReaders {
				r, ok := e.Reads[reader]
				if !ok {
					continue
				}
				v := gateVector{kind: kind, file: filepath.Join(repo, "testdata", "kubelet", rel), name: rel + "@" + reader,
					reader: reader, valid: r.Verdict == string(decode.Valid)}
				if r.Error != nil {
					v.err = *r.Error
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// checkGateCoverage: the vectors still hold both directions, and the files 1.38 refuses but
// 1.37 restores.
func checkGateCoverage(t *testing.T, vs []gateVector) {
	t.Helper()
	verdict := map[string]map[string]bool{}
	for _, v := range vs {
		f := strings.TrimSuffix(v.name, "@"+v.reader)
		if verdict[f] == nil {
			verdict[f] = map[string]bool{}
		}
		verdict[f][v.reader] = v.valid
	}
	var v2OnlyOld, v1Upgraded int
	for f, by := range verdict {
		if strings.Contains(f, "/v1.38.0-beta.0/") && by["v1.37.1"] && !by["v1.38.0-beta.0"] {
			v2OnlyOld++
		}
		if !strings.Contains(f, "/v1.38.0-beta.0/") && by["v1.38.0-beta.0"] {
			v1Upgraded++
		}
	}
	if v2OnlyOld == 0 || v1Upgraded == 0 {
		t.Fatalf("the vectors no longer show both directions: %d V2 files only 1.37 restores, %d V1 files 1.38 restores", v2OnlyOld, v1Upgraded)
	}
}

// doctor's upgrade gate (doctor --kubelet-version): a file the target kubelet refuses is an
// error saying that kubelet's own words, a file it restores none; the CPU and memory state
// beside it (examples/doctor-node) starts either kubelet.
func TestDoctorGateAcrossAllocationV2(t *testing.T) {
	vs := gateVectors(t)
	checkGateCoverage(t, vs)
	node := filepath.Join(repo, "examples", "doctor-node")
	dc, _, err := LoadDoctorConfig("", "", node)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		dir := copyTree(t, node)
		copyFile(t, v.file, filepath.Join(dir, decode.PathOf(v.kind)))
		k, err := decode.ParseKubelet(v.reader, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := readOne(t, Config{FromDir: dir, Kubelet: &k, Engines: Engines{Doctor: dc}})
		d := res.Doctor
		if d == nil || !d.KubeletStart.Starts {
			t.Fatalf("%s: the CPU and memory state no longer starts %s: %+v", v.name, v.reader, d)
		}
		var refused []doctor.Finding
		for _, f := range d.Findings {
			if f.Severity == doctor.SeverityError {
				refused = append(refused, f)
			}
		}
		switch {
		case v.valid && len(refused) > 0:
			t.Errorf("%s: the real kubelet restores it, doctor says %+v", v.name, refused)
		case !v.valid && (len(refused) != 1 || refused[0].Check != "file-refused" || refused[0].File != decode.PathOf(v.kind) ||
			!strings.HasSuffix(refused[0].Message, ": "+v.err)):
			t.Errorf("%s: the real kubelet refuses it (%s), doctor says %+v", v.name, v.err, refused)
		}
	}
}

// node-check restart: a kubelet whose CPU and memory state starts does not restart when it
// refuses an allocation file (the allocation manager panics, the runtime manager is not made),
// and does with one it restores.
func TestCheckRestartAcrossAllocationV2(t *testing.T) {
	vs := gateVectors(t)
	checkGateCoverage(t, vs)
	sys, proc := sysfsTree(t, "kvm-2cpu.txt")
	for _, v := range vs {
		root := copyTree(t, filepath.Join("testdata", "noderoot", "kubelet"))
		config := filepath.Join(root, "config.yaml")
		b, _ := os.ReadFile(config)
		os.WriteFile(config, []byte(strings.Replace(string(b), "cpuManagerPolicy: none", "cpuManagerPolicy: static", 1)), 0o644)
		copyFile(t, v.file, filepath.Join(root, decode.PathOf(v.kind)))
		lc := LocalConfig{Paths: nodelocal.Defaults(), KubeletVersion: v.reader}
		lc.RootDir, lc.SysRoot, lc.ProcRoot = root, sys, proc
		got := checkOne(t, lc, CheckRestart)
		if v.valid {
			// It starts; the node's files hold a pod on GPUs, which a reboot refuses until its
			// plugins register (the restart outlook, from the files).
			want := "kubelet " + v.reader + " would start with its config and files, but if this node reboots"
			if !strings.HasPrefix(got.Summary, want) || len(got.Problems) == 0 || got.Problems[0].Check != CheckIfReboot {
				t.Errorf("%s:\n got %v %q\nwant %q...", v.name, got.Status, got.Summary, want)
			}
			continue
		}
		want := "kubelet " + v.reader + " would not start: " + strings.ReplaceAll(v.err, decode.DefaultRootDir, root)
		if got.Summary != want || got.Status == CheckOK {
			t.Errorf("%s:\n got %v %q\nwant %q", v.name, got.Status, got.Summary, want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
