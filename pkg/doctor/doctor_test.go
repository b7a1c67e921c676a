package doctor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// diagnoseCase runs Diagnose on one vector case for one version.
func diagnoseCase(t *testing.T, name, version string, live map[string]bool) Result {
	t.Helper()
	return diagnoseCaseWith(t, name, version, func(in *Input) { in.LivePods = live })
}

func diagnoseCaseWith(t *testing.T, name, version string, edit func(*Input)) Result {
	t.Helper()
	dir := filepath.Join(startVectorsDir, "cases", name)
	var files []string
	for _, f := range []string{"cpu_manager_state", "memory_manager_state"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			files = append(files, f)
		}
	}
	sin := startCase(t, dir, files, version)
	in := Input{Machine: sin.Machine, Config: sin.Config, Kubelet: &sin.Kubelet}
	for _, r := range []*decode.Report{sin.CPU, sin.Memory} {
		if r != nil {
			in.Files = append(in.Files, r)
		}
	}
	edit(&in)
	return Diagnose(in)
}

func hasFinding(r Result, check, substr string) bool {
	for _, f := range r.Findings {
		if f.Check == check && strings.Contains(f.Message, substr) {
			return true
		}
	}
	return false
}

func TestDiagnoseFindings(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		live          map[string]bool
		check, substr string
	}{
		{"cpu-s2c8t2n2-two-pods-same-cpus__w1.37.1", decode.HomeKubelet, nil, "cpu-overlap", "also assigned to"},
		{"cpu-s2c8t2n2-assignment-overlaps-default__w1.37.1", decode.HomeKubelet, nil, "cpu-overlap", "shared pool"},
		{"cpu-s2c8t2n2-cpu-offlined-default__w1.37.1", decode.HomeKubelet, nil, "cpu-outside-machine", "CPUs 31 "},
		{"cpu-s2c8t2n2-vm-grew__w1.37.1", decode.HomeKubelet, nil, "cpu-missing-from-state", "online CPUs"},
		{"mem-n1-drift-node0-plus-4KiB__w1.37.1", decode.HomeKubelet, nil, "memory-machine-drift", "(+4096)"},
		{"mem-n1-healthy-assigned__w1.37.1", decode.HomeKubelet, map[string]bool{}, "stale-pod", "gone from the API"},
		{"cpu-s2c8t2n2-policy-static-to-none__w1.37.1", decode.HomeKubelet, nil, "kubelet-start", `configured policy "none" differs`},
		// What the kubelet only logs: which field of the machine state differs.
		{"mem-n1-assignment-count-stale__w1.37.1", decode.HomeKubelet, nil, "kubelet-start", "numberOfAssignments 2 stored, 1 from the assignments"},
		{"mem-n1-assignment-dropped__w1.25.16", "v1.25.16", nil, "kubelet-start", "memory reserved: 2147483648 stored, 0 expected"},
	} {
		r := diagnoseCase(t, tc.name, tc.version, tc.live)
		if !hasFinding(r, tc.check, tc.substr) {
			b, _ := json.MarshalIndent(r, "", " ")
			t.Errorf("%s: no %s finding with %q:\n%s", tc.name, tc.check, tc.substr, b)
		}
	}
	// A container gone from a live pod.
	r := diagnoseCaseWith(t, "cpu-s2c8t2n2-healthy-assigned__w1.37.1", decode.HomeKubelet, func(in *Input) {
		in.LivePods = map[string]bool{"pod-a": true}
		in.LiveContainers = map[string]map[string]bool{"pod-a": {"sidecar": true}}
	})
	if !hasFinding(r, "stale-container", "no container app") {
		t.Errorf("stale container not found: %+v", r.Findings)
	}
	// A healthy node: no finding at all, and it starts.
	for _, name := range []string{"cpu-s2c8t2n2-healthy-assigned__w1.37.1", "mem-n1-healthy-assigned__w1.37.1", "cpu-s1c4t2-init-reuse__w1.37.1",
		"cpu-s1c4t2-opt-strict-reservation-default-without-reserved__w1.37.1"} {
		r := diagnoseCase(t, name, decode.HomeKubelet, map[string]bool{"pod-a": true, "pod-m": true, "pod-i": true})
		if !r.KubeletStart.Starts || len(r.Findings) != 0 {
			t.Errorf("%s: healthy, got %+v", name, r)
		}
	}
}

// TestFixesVerified: every failed start gets a fix, and a fix marked verified really starts.
func TestFixesVerified(t *testing.T) {
	man := loadStartManifest(t)
	failed, config, deletes, verified := 0, 0, 0, 0
	for name := range man.Cases {
		for _, v := range man.Versions {
			r := diagnoseCase(t, name, v, nil)
			if r.KubeletStart.Starts {
				continue
			}
			failed++
			fix := r.KubeletStart.Fix
			if fix == nil || fix.Text == "" {
				t.Errorf("%s @ %s: no fix for %q", name, v, r.KubeletStart.Error)
				continue
			}
			if fix.Config != nil {
				config++
			}
			if fix.Delete != "" {
				deletes++
			}
			if fix.Verified {
				verified++
			}
		}
	}
	t.Logf("%d failed starts: %d config fixes, %d delete-file fixes, %d verified by replay", failed, config, deletes, verified)
}
