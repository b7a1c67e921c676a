package decode

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// What the era table implies, spelled out: a row edit that moves a home reader or changes who
// checks a checksum shows up here (and in verify's output) before it reaches a user.
func TestEraDerivations(t *testing.T) {
	want := map[string]struct {
		home  string
		prose []string
	}{
		"cpu-v4":        {HomeKubelet, []string{"kubelet 1.37+", "kubelet 1.18-1.36 (0 accepted unverified)"}},
		"cpu-v3":        {"v1.36.4+PodLevelResourceManagers", []string{"kubelet 1.36 with PodLevelResourceManagers, 1.37+"}},
		"cpu-v2":        {"v1.35.8", []string{"kubelet 1.18+ (0 accepted unverified)"}},
		"cpu-v1":        {"v1.17.17", []string{"kubelet 1.12-1.36 (0 accepted unverified)"}},
		"mem-v3":        {HomeKubelet, []string{"kubelet 1.37+", "kubelet 1.21-1.36 (0 accepted unverified from 1.36)"}},
		"mem-v2":        {"v1.36.4+PodLevelResourceManagers", []string{"kubelet 1.36 with PodLevelResourceManagers, 1.37+"}},
		"mem-v1":        {"v1.35.8", []string{"kubelet 1.21+ (0 accepted unverified from 1.36)"}},
		"dev-v2":        {HomeKubelet, []string{"kubelet 1.20+"}},
		"dev-v1":        {"v1.19.16", []string{"kubelet 1.11-1.19; 1.20.14+, 1.21.8+, 1.22.5+ and 1.23-1.30 as a fallback"}},
		"dra-v2c":       {HomeKubelet, []string{"kubelet 1.31+ (1.31-1.36 drop skipNodeOperations)"}},
		"dra-v2b":       {"v1.36.4", []string{"kubelet 1.31+ (1.31-1.34 drop ShareID)"}},
		"dra-v2a":       {"v1.34.10", []string{"kubelet 1.31+"}},
		"dra-v1c":       {"v1.30.14", []string{"kubelet 1.30 only"}},
		"dra-v1b":       {"v1.29.15", []string{"kubelet 1.28-1.29"}},
		"dra-v1a":       {"v1.27.16", []string{"kubelet 1.27-1.30 (1.28-1.30 through their legacy check)"}},
		"podstatus-v2":  {"v1.32.13", []string{"kubelet 1.32 only"}},
		"podstatus-v1":  {"v1.31.14", []string{"kubelet 1.27-1.31"}},
		"alloc-v2":      {"v1.38.0-beta.0", []string{"kubelet 1.33+ (1.33-1.37 drop podList)"}},
		"alloc-v1c":     {HomeKubelet, []string{"kubelet 1.33+ (1.33-1.36 drop EmptyDirVolumeLimits)"}},
		"alloc-v1b":     {"v1.36.4", []string{"kubelet 1.33+ (1.33-1.34 drop PodLevelResources)"}},
		"alloc-v1a":     {"v1.34.10", []string{"kubelet 1.33+"}},
		"dra-health-v1": {HomeKubelet, nil},
	}
	for _, e := range eras {
		w, ok := want[e.ID]
		if !ok {
			t.Errorf("era %s: not in this test", e.ID)
			continue
		}
		if e.ID == "dra-health-v1" && e.Layout != health136Layout {
			continue // the older health layouts share the ID; the newest is the home
		}
		if got := index.home[e].String(); got != w.home {
			t.Errorf("era %s: home %s, want %s", e.ID, got, w.home)
		}
		if got := index.prose[e]; strings.Join(got, "|") != strings.Join(w.prose, "|") {
			t.Errorf("era %s: readers\n got %q\nwant %q", e.ID, got, w.prose)
		}
	}
}

// The table's own invariants: an era's reads never overlap (a kubelet decodes the file into a
// layout once), every rule's typed accessors fit the layout it is used with, and an era read by
// a kubelet is one that kubelet's restore tries.
func TestEraTableInvariants(t *testing.T) {
	for _, e := range eras {
		for _, kind := range e.Kinds {
			bounds := kindBounds(index, kind)
			for _, b := range bounds {
				for _, on := range []bool{false, true} {
					k := Kubelet{Version: b, Gates: map[string]bool{GatePodLevelResourceManagers: on}}
					n := 0
					for _, r := range e.Reads {
						if r.By.has(k) {
							n++
						}
					}
					if n > 1 {
						t.Errorf("era %s: %d reads by %s", e.ID, n, k)
					}
				}
			}
		}
		v := e.Layout.new()
		rules := map[*checksumRule]bool{}
		for _, s := range e.Sums {
			rules[s.Rule] = true
		}
		for _, r := range e.Reads {
			for _, rule := range r.Rules {
				rules[rule] = true
			}
		}
		for rule := range rules {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("era %s: rule %s does not fit its layout: %v", e.ID, rule.ID, p)
					}
				}()
				rule.stored(v)
				rule.compute(v)
			}()
		}
	}
}

// TestRefusedSaysWhatTheKubeletDoes: a refused file's report says what its kubelet then does,
// which differs by manager (the device manager and the health cache carry on) and, for the
// actuated file, by release (kuberuntime returns the error from 1.35; the allocation manager
// panicked before).
func TestRefusedSaysWhatTheKubeletDoes(t *testing.T) {
	for _, tc := range []struct {
		kind    Kind
		raw     string
		version string
		starts  bool
		want    string
	}{
		{KindCPU, `{"policyName":"none","defaultCpuSet":"","checksum":1}`, "v1.31.14", false, "the CPU manager fails, and the kubelet does not start"},
		{KindMemory, `{"policyName":"None","machineState":{},"checksum":1}`, "v1.31.14", false, "the memory manager fails, and the kubelet does not start"},
		{KindDevices, `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":1}`, HomeKubelet, true, "the device manager logs it and starts without the file's allocations: until those pods restart it may hand their devices to other pods"},
		{KindDRAHealth, `[`, HomeKubelet, true, `the DRA manager logs "Failed to load health checkpoint, proceeding with empty cache" and starts with no device health`},
		{KindAllocated, `{"data":"{}","checksum":1}`, "v1.34.10", false, "the allocation manager panics, and the kubelet with it"},
		{KindActuated, `{"data":"{}","checksum":1}`, "v1.34.10", false, "the allocation manager panics, and the kubelet with it"},
		{KindActuated, `{"data":"{}","checksum":1}`, "v1.35.8", false, "the container runtime manager cannot be created, and the kubelet does not start"},
		{KindPodStatus, `{"checksum":1}`, "v1.31.14", false, "the status manager panics, and the kubelet with it"},
	} {
		k := mustParseKubelet(tc.version)
		rep := Decode(tc.kind, []byte(tc.raw), Options{Kubelet: &k})
		if rep.Verdict != Corrupt && rep.Verdict != Unreadable {
			t.Errorf("%s @ %s: verdict %s (%s), want a refusal", tc.kind, tc.version, rep.Verdict, rep.Error)
			continue
		}
		if rep.Refused == nil || rep.Refused.Effect != tc.want || rep.Refused.KubeletStarts != tc.starts {
			t.Errorf("%s @ %s: refused %+v, want %q (kubelet starts: %v)", tc.kind, tc.version, rep.Refused, tc.want, tc.starts)
		}
	}
	k := mustParseKubelet(HomeKubelet)
	if rep := Decode(KindDevices, []byte(`{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661}`), Options{Kubelet: &k}); rep.Verdict != Valid || rep.Refused != nil {
		t.Errorf("a valid file: verdict %s, refused %+v", rep.Verdict, rep.Refused)
	}
}

// Each gate's rows follow one another without gap or overlap, so a release has at most one.
func TestGateRowsContiguous(t *testing.T) {
	last := map[string]*GateSpan{}
	for i := range Gates {
		g := &Gates[i]
		if g.Until != nil && !g.Since.LessThan(g.Until) {
			t.Errorf("%s: empty row [%s, %s)", g.Gate, g.Since, g.Until)
		}
		if prev := last[g.Gate]; prev != nil && (prev.Until == nil || !prev.Until.EqualTo(g.Since)) {
			t.Errorf("%s: row from %s does not follow the one until %v", g.Gate, g.Since, prev.Until)
		}
		last[g.Gate] = g
	}
	if on, _ := GateAt("MemoryManager", Release("1.36")); on == nil || !on.Removed || !GateDefault("MemoryManager", Release("1.37")) {
		t.Errorf("MemoryManager after its removal: %+v", on)
	}
}

// TestVersionSetAddEitherGateFirst: a release range added for one gate setting, then the same
// range for the other, is one range for both, whichever came first (the table happens to list
// the gate off first).
func TestVersionSetAddEitherGateFirst(t *testing.T) {
	since := version.MustParseGeneric("1.36.0")
	for _, first := range []bool{false, true} {
		var s versionSet
		s.add(since, nil, first)
		s.add(since, nil, !first)
		if len(s.ranges) != 1 || !s.ranges[0].on || !s.ranges[0].off {
			t.Errorf("gate %v first: ranges %+v, want one range for both settings", first, s.ranges)
		}
	}
}
