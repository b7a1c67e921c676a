package nodestate

import (
	"path/filepath"
	"strings"
	"testing"
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
