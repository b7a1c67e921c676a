package doctor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// cpuFileV2 is a V2 cpu_manager_state (1.18-1.27 writers) with the checksum its kubelet computes,
// so only the restore's cpuset parsing can refuse it.
func cpuFileV2(t *testing.T, defaultSet, appSet string) []byte {
	t.Helper()
	raw := fmt.Sprintf(`{"policyName":"static","defaultCpuSet":%q,"entries":{"pod-a":{"app":%q}},"checksum":0}`, defaultSet, appSet)
	// A 1.25 reader computes the V2 checksum over the file as written.
	k, err := decode.ParseKubelet("v1.25.16", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := decode.Decode(decode.KindCPU, []byte(raw), decode.Options{Kubelet: &k})
	if len(rep.Checksums) != 1 || rep.Checksums[0].Computed == 0 {
		t.Fatalf("no checksum computed for %s: %+v", raw, rep.Checksums)
	}
	return []byte(strings.Replace(raw, `"checksum":0`, fmt.Sprintf(`"checksum":%d`, rep.Checksums[0].Computed), 1))
}

// TestCPUSetRulesAreDecodes: a start is refused for a CPU set exactly where decode's restore
// rules for that release refuse it. Every release from 1.22 refuses only start > end: 1.22-1.26's
// pkg/kubelet/cm/cpuset words it "(%d >= %d)" but tests start > end (1.26.0 cpuset.go:322), so
// "15-15" is a CPU set for all of them (doctor once refused it before 1.28).
func TestCPUSetRulesAreDecodes(t *testing.T) {
	name := "cpu-s2c8t2n2-healthy-assigned__w1.25.16"
	for _, tc := range []struct {
		version, app string
		starts       bool
		err          string
	}{
		{"v1.25.16", "15,31", true, ""},
		{"v1.25.16", "15-15,31", true, ""},
		{"v1.25.16", "31-15", false, `could not parse cpuset "31-15" for container "app" in pod "pod-a": invalid range "31-15" (31 >= 15)`},
		{"v1.27.0", "15-15,31", true, ""},
		{"v1.31.14", "15-15,31", true, ""},
		{"v1.27.0", "31-15", false, `invalid range "31-15" (31 > 15)`},
	} {
		in := startCase(t, name, nil, tc.version)
		in.CPU = decode.Decode(decode.KindCPU, cpuFileV2(t, "0-14,16-30", tc.app), decode.Options{Kubelet: &in.Kubelet})
		p, err := replay.PredictStart(in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Starts != tc.starts || !strings.Contains(p.Error, tc.err) {
			t.Errorf("%s %q: starts=%v error %q, want starts=%v error containing %q", tc.version, tc.app, p.Starts, p.Error, tc.starts, tc.err)
		}
	}
}

// TestHostileCPUSetIsNotBuilt: a checksum-valid range of two billion CPUs is refused without
// building it (the kubelet would try to).
func TestHostileCPUSetIsNotBuilt(t *testing.T) {
	in := startCase(t, "cpu-s2c8t2n2-healthy-assigned__w1.25.16", nil, "v1.31.14")
	in.CPU = decode.Decode(decode.KindCPU, cpuFileV2(t, "0-2000000000", "15,31"), decode.Options{Kubelet: &in.Kubelet})
	p, err := replay.PredictStart(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Starts || !strings.Contains(p.Error, "beyond any machine") {
		t.Errorf("got starts=%v error %q", p.Starts, p.Error)
	}
	r := Diagnose(Input{Machine: in.Machine, Config: in.Config, Kubelet: &in.Kubelet, Files: []*decode.Report{in.CPU}})
	if !hasFinding(r, "cpu-unparsable", "beyond any machine") {
		t.Errorf("no cpu-unparsable finding: %+v", r.Findings)
	}
}
