package doctor

import (
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// diagnoseCase runs Diagnose on one vector case for one version.
func diagnoseCase(t *testing.T, name, version string, live map[string]bool) Result {
	t.Helper()
	return diagnoseCaseWith(t, name, version, func(in *Input) { in.LivePods = live })
}

func diagnoseCaseWith(t *testing.T, name, version string, edit func(*Input)) Result {
	t.Helper()
	var files []string
	for _, f := range startCheckpoints {
		if caseHas(t, name, f) {
			files = append(files, f)
		}
	}
	sin := startCase(t, name, files, version)
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

// TestFixesVerified: every failed start gets a fix, and each way a fix offers is replayed as a
// user would follow it (each config field the fix names set to its value, the checkpoint
// deleted) and must start; a fix is marked verified exactly when one of its ways
// starts, and one that offers none says so.
func TestFixesVerified(t *testing.T) {
	man := loadStartManifest(t)
	failed, configs, deletes, alternatives, verified, none := 0, 0, 0, 0, 0, 0
	for _, name := range slices.Sorted(maps.Keys(man.Cases)) {
		for _, v := range man.Versions {
			r := diagnoseCase(t, name, v, nil)
			if r.KubeletStart.Starts {
				continue
			}
			failed++
			at := name + " @ " + v
			fix := r.KubeletStart.Fix
			if fix == nil {
				t.Errorf("%s: no fix for %q", at, r.KubeletStart.Error)
				continue
			}
			starts := false // one of the ways offered lets the kubelet start
			if fix.Config != nil {
				configs++
				if !replayStarts(t, at, name, v, fix.Config, "") {
					t.Errorf("%s: config fix %s offered, but the replayed start with it fails", at, fix.Config)
				}
				starts = true
				mustSay(t, at, fix.Text, "set "+string(fix.Config))
			}
			if fix.Delete != "" {
				deletes++
				ok := replayStarts(t, at, name, v, nil, fix.Delete)
				// Beside a config fix, a delete is offered only as a way that works on its own.
				if fix.Config != nil && !ok {
					t.Errorf("%s: deleting %s offered beside %s, but the replayed start fails", at, fix.Delete, fix.Config)
				}
				if !ok {
					mustSay(t, at, fix.Text, "that is not enough")
				}
				starts = starts || ok
				mustSay(t, at, fix.Text, "delete "+fix.Delete)
			}
			for _, alt := range fix.Alternatives {
				alternatives++
				if !alt.Verified || alt.Config == nil || alt.Delete == "" || !replayStarts(t, at, name, v, alt.Config, alt.Delete) {
					t.Errorf("%s: alternative %q (verified %v) does not start when replayed", at, alt.Text, alt.Verified)
				}
				starts = true
				mustSay(t, at, fix.Text, alt.Text)
			}
			if fix.Verified != starts {
				t.Errorf("%s: fix marked verified=%v, but its ways replayed start=%v: %+v", at, fix.Verified, starts, fix)
			}
			if fix.Verified {
				verified++
			}
			if fix.Config == nil && fix.Delete == "" && len(fix.Alternatives) == 0 {
				none++
				mustSay(t, at, fix.Text, "no single change doctor tried lets it start): "+r.KubeletStart.Error)
				// Doctor tries the delete for every manager's Start failure: it must not miss one
				// that works.
				if file := failingFile(r.KubeletStart.Phase); file != "" && caseHas(t, name, file) && replayStarts(t, at, name, v, nil, file) {
					t.Errorf("%s: no fix offered, yet deleting %s lets it start", at, file)
				}
			}
		}
	}
	t.Logf("%d failed starts: %d config fixes, %d delete-file fixes, %d config-and-delete alternatives, %d verified by replay, %d with none", failed, configs, deletes, alternatives, verified, none)
	if failed == 0 || verified == 0 {
		t.Fatalf("%d failed starts, %d verified fixes: the vectors exercise no fix", failed, verified)
	}
}

func mustSay(t *testing.T, at, text, want string) {
	t.Helper()
	if !strings.Contains(text, want) {
		t.Errorf("%s: the fix says %q, not %q", at, text, want)
	}
}

func failingFile(phase string) string {
	switch phase {
	case replay.PhaseCPUStart:
		return "cpu_manager_state"
	case replay.PhaseMemoryStart:
		return "memory_manager_state"
	}
	return ""
}

func caseHas(t testing.TB, name, file string) bool {
	t.Helper()
	return startVector(t, name).Has(file)
}

// replayStarts follows a fix on one case: the fields of patch (a KubeletConfiguration fragment)
// set in the case's config, the checkpoint named by del (a path on the
// node) removed, the files decoded again for the resulting config, and the start predicted.
func replayStarts(t *testing.T, at, name, version string, patch json.RawMessage, del string) bool {
	t.Helper()
	return replayEditedStarts(t, at, name, version, nil, patch, del)
}

// replayEditedStarts is replayStarts on the case's config changed by edit first (nil: as it is).
func replayEditedStarts(t *testing.T, at, name, version string, edit func(*replay.KubeletConfig), patch json.RawMessage, del string) bool {
	t.Helper()
	var files []string
	for _, f := range startCheckpoints {
		if !caseHas(t, name, f) {
			continue
		}
		if del != "" && (del == f || del == path.Join(decode.DefaultRootDir, f)) {
			del = ""
			continue
		}
		files = append(files, f)
	}
	if del != "" {
		t.Errorf("%s: the fix deletes %s, which is not one of the case's files", at, del)
		return false
	}
	base := startCase(t, name, nil, version)
	cfg := base.Config
	if edit != nil {
		edit(cfg)
	}
	if patch != nil {
		orig, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// "set {fields} in the kubelet config": each field named takes the value given.
		var fields, set map[string]json.RawMessage
		if err := json.Unmarshal(orig, &fields); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(patch, &set); err != nil {
			t.Errorf("%s: fix %s is not a set of config fields: %v", at, patch, err)
			return false
		}
		maps.Copy(fields, set)
		merged, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err = replay.ParseKubeletConfig(merged); err != nil {
			t.Errorf("%s: config with fix %s applied: %v", at, patch, err)
			return false
		}
	}
	p, err := replay.PredictStart(startCaseWith(t, name, files, version, base.Machine, cfg))
	if err != nil {
		t.Errorf("%s: replay: %v", at, err)
		return false
	}
	return p.Starts
}
