package nodestate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// The library runs doctor from a plain config: a collect-style directory's own machine and
// kubelet config, the kubelet asked for, one prediction per node beside the judged files.
func TestDoctorEngine(t *testing.T) {
	dir := filepath.Join(repo, "examples/doctor-node")
	dc, notes, err := LoadDoctorConfig("", "", dir)
	if err != nil || dc.Machine == nil || dc.KubeletConfig == nil || len(notes) != 2 {
		t.Fatalf("bundle inputs: %+v %q %v", dc, notes, err)
	}
	run := func(cfg Config) *NodeResult { return readOne(t, cfg) }
	if res := run(Config{FromDir: dir}); res.Doctor != nil {
		t.Errorf("doctor ran unasked: %+v", res.Doctor)
	}
	k := homeKubelet(t)
	res := run(Config{FromDir: dir, Kubelet: &k, Engines: Engines{Doctor: dc}})
	if res.Doctor == nil || res.Doctor.KubeletStart.Kubelet != k.String() {
		t.Fatalf("doctor result %+v", res.Doctor)
	}
	// Without a version to predict for, the start is skipped and says why.
	res = run(Config{FromDir: dir, Engines: Engines{Doctor: dc}})
	if res.Doctor == nil || !strings.Contains(strings.Join(res.Doctor.Skipped, "\n"), "start prediction") {
		t.Errorf("no version: %+v", res.Doctor)
	}
	if _, _, err := LoadDoctorConfig(filepath.Join(dir, "cpu_manager_state"), "", ""); err == nil {
		t.Error("a checkpoint taken for a machine.json: no error")
	}
}

// A live node's checkpoint entries are stale only for pods the API server listed and does not
// have: with no pod there, every entry is a finding; when the pods could not be listed (a pod
// LIST forbidden), none is.
func TestDoctorStaleOnlyAgainstListedPods(t *testing.T) {
	dir := filepath.Join(repo, "examples/doctor-node")
	dc, _, err := LoadDoctorConfig("", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	k := homeKubelet(t)
	cfg := Config{FromDir: dir, Kubelet: &k, Engines: Engines{Doctor: dc}}
	stale := func(ix *fetch.PodIndex) (n int) {
		res := readOne(t, cfg)
		res.Node, res.Snapshot.Pods = "n1", ix
		for _, f := range (&Runner{cfg: cfg}).diagnose(res).Result.Findings {
			if strings.Contains(f.Message, "is gone from the API server") {
				n++
			}
		}
		return n
	}
	unlisted := fetch.NewPodIndex(nil)
	unlisted.Unlisted = true
	if listed, failed := stale(fetch.NewPodIndex(nil)), stale(unlisted); listed == 0 || failed != 0 {
		t.Errorf("stale entries: %d with no pod listed (want some), %d with the list failed (want none)", listed, failed)
	}
}
