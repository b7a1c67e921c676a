package decode

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func ff(file string, kind Kind, format string) FileFormat {
	return FileFormat{File: file, Kind: kind, Format: format}
}

func TestChooseJudge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []FileFormat
		judge string
		apart []string
	}{
		{name: "current formats: the newest release writes them all",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v4"), ff("mem", KindMemory, "mem-v3"), ff("dev", KindDevices, "dev-v2")},
			judge: HomeKubelet},
		{name: "a field-adding sub-era's older look is written by the newer kubelets too",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v4"), ff("dra", KindDRA, "dra-v2b"), ff("alloc", KindAllocated, "alloc-v1a")},
			judge: HomeKubelet},
		{name: "a V2 CPU file caps the node at 1.36 (gate off)",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v2"), ff("dev", KindDevices, "dev-v2"), ff("dra", KindDRA, "dra-v2a")},
			judge: "v1.36.4"},
		{name: "pod-level formats need the gate on",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v3"), ff("mem", KindMemory, "mem-v2")},
			judge: "v1.36.4+PodLevelResourceManagers"},
		{name: "DRA v1c is 1.30 only",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v2"), ff("dra", KindDRA, "dra-v1c")},
			judge: "v1.30.14"},
		{name: "a 1.19 device file beside 1.37 files is apart",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v4"), ff("mem", KindMemory, "mem-v3"), ff("dev", KindDevices, "dev-v1"), ff("dra", KindDRA, "dra-v1c")},
			judge: HomeKubelet, apart: []string{"dev", "dra"}},
		{name: "unknown formats are left out",
			files: []FileFormat{ff("cpu", KindCPU, "cpu-v1"), ff("x", KindMemory, ""), ff("y", KindDRA, "dra-v9")},
			judge: "v1.17.17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, ok := ChooseWritingRelease(tc.files)
			if !ok {
				t.Fatal("no judge")
			}
			if got := j.Kubelet.String(); got != tc.judge {
				t.Errorf("judge %s, want %s", got, tc.judge)
			}
			var apart []string
			for _, f := range j.Apart {
				apart = append(apart, f.File)
			}
			if strings.Join(apart, ",") != strings.Join(tc.apart, ",") {
				t.Errorf("apart %v, want %v", apart, tc.apart)
			}
			if len(j.Writes)+len(j.Apart) == 0 {
				t.Error("no file placed")
			}
		})
	}
	if _, ok := ChooseWritingRelease([]FileFormat{ff("x", KindCPU, "")}); ok {
		t.Error("a judge chosen without any known format")
	}
}

// Every era's writers can be told in prose, and the newest release of each era's writers judges
// a file of that era alone: a file is never apart from itself.
func TestChooseJudgeEveryEraAlone(t *testing.T) {
	for _, e := range eras {
		for _, k := range e.Kinds {
			if WrittenBy(k, e.ID) == "" || ReadBy(k, e.ID) == "" {
				t.Errorf("%s %s: no writers or readers prose", k, e.ID)
			}
			j, ok := ChooseWritingRelease([]FileFormat{ff("f", k, e.ID)})
			if !ok || len(j.Apart) != 0 {
				t.Errorf("%s %s: judge %v apart %v", k, e.ID, j.Kubelet, j.Apart)
			}
		}
	}
}

func TestWrittenBy(t *testing.T) {
	for _, tc := range []struct {
		kind          Kind
		format, want  string
		wantReadersOf string
	}{
		{KindDevices, "dev-v1", "1.11-1.19", "1.11-1.30"},
		{KindCPU, "cpu-v2", "1.18-1.35, 1.36 without PodLevelResourceManagers", "1.18+"},
		{KindDRA, "dra-v2a", "1.31+", "1.31-1.34"},
		{KindDRA, "dra-v1c", "1.30", "1.30"},
		{KindCPU, "cpu-v3", "1.36 with PodLevelResourceManagers", "1.36+"},
	} {
		if got := WrittenBy(tc.kind, tc.format); got != tc.want {
			t.Errorf("WrittenBy(%s) = %q, want %q", tc.format, got, tc.want)
		}
		if tc.wantReadersOf != "" {
			if got := ReadBy(tc.kind, tc.format); got != tc.wantReadersOf {
				t.Errorf("ReadBy(%s) = %q, want %q", tc.format, got, tc.wantReadersOf)
			}
		}
	}
}

// The bundled broken node's memory file: its dataChecksum matches (1.37+ accept it), its outer
// checksum does not, so a downgrade to 1.36 or older refuses it.
func TestBreaks(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "broken-node", "memory_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	k := mustParseKubelet(HomeKubelet)
	rep := Decode(KindMemory, raw, Options{Kubelet: &k})
	if rep.Verdict != Valid || rep.Breaks == nil || rep.Breaks.Older != "1.36" || rep.Breaks.Newer != "" {
		t.Fatalf("verdict %s, breaks %+v", rep.Verdict, rep.Breaks)
	}
	// Judged by 1.36, the same CPU file of the broken node breaks upgrades only: 1.17 refuses it
	// too, but cannot parse it at all, which is not the mismatch.
	raw, err = os.ReadFile(filepath.Join("..", "..", "examples", "broken-node", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	k136 := mustParseKubelet("v1.36.4")
	if rep := Decode(KindCPU, raw, Options{Kubelet: &k136}); rep.Verdict != Valid || rep.Breaks == nil || *rep.Breaks != (Breaks{Newer: "1.37"}) {
		t.Fatalf("cpu file for 1.36: verdict %s, breaks %+v", rep.Verdict, rep.Breaks)
	}
	// Breaks are releases before or after the reader's, never its own line. The 1.37 memory
	// file with its outer checksum set to the mem-v2 rule's, which 1.36 checks only with
	// PodLevelResourceManagers on: 1.36 with the gate off (its default) refuses it, but that is
	// a gate away, not a release away.
	raw, err = os.ReadFile(filepath.Join(vectorsDir, "memory_manager_state/v1.37.1/static-2numa-pods.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = withOuterChecksum(t, raw, memV2Layout, eraByID(t, "mem-v2").Sums[0].Rule)
	k136gate := mustParseKubelet("v1.36.4+" + GatePodLevelResourceManagers)
	if rep := Decode(KindMemory, raw, Options{Kubelet: &k136}); rep.Verdict != Corrupt {
		t.Fatalf("by 1.36, gate off: %s (%s), want corrupt", rep.Verdict, rep.Error)
	}
	if rep := Decode(KindMemory, raw, Options{Kubelet: &k136gate}); rep.Verdict != Valid || rep.Breaks == nil || *rep.Breaks != (Breaks{Older: "1.35"}) {
		t.Fatalf("by 1.36 with the gate: verdict %s (%s), breaks %+v, want valid, breaks older 1.35 only", rep.Verdict, rep.Error, rep.Breaks)
	}
	// An intact file breaks nothing.
	raw, err = os.ReadFile(filepath.Join("..", "..", "examples", "kubelet-root", "memory_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	if rep := Decode(KindMemory, raw, Options{Kubelet: &k}); rep.Verdict != Valid || rep.Breaks != nil {
		t.Fatalf("intact file: verdict %s, breaks %+v", rep.Verdict, rep.Breaks)
	}
}

// withOuterChecksum sets a file's top-level "checksum" to what rule computes over it as layout l.
func withOuterChecksum(t *testing.T, raw []byte, l *layout, rule *checksumRule) []byte {
	t.Helper()
	outer := regexp.MustCompile(`"checksum":[0-9]+`)
	if len(outer.FindAll(raw, -1)) != 1 {
		t.Fatalf("not one outer checksum in %s", raw)
	}
	return outer.ReplaceAll(raw, fmt.Appendf(nil, `"checksum":%d`, newInput(raw).checksum(l, rule)))
}
