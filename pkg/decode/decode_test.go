package decode

import (
	"strings"
	"testing"
)

// The report's checksums and notes, judged against what the vectors record the real kubelets did.

// vectorsByFile indexes the vectors' expectations by their path under testdata/kubelet.
func vectorsByFile(t *testing.T) map[string]manifestEntry {
	t.Helper()
	out := map[string]manifestEntry{}
	for _, e := range loadManifest(t) {
		out[e.File] = e
	}
	return out
}

func vector(t *testing.T, vectors map[string]manifestEntry, file string) manifestEntry {
	t.Helper()
	e, ok := vectors[file]
	if !ok {
		t.Fatalf("%s: not in MANIFEST", file)
	}
	return e
}

func hasNote(rep *Report, part string) bool {
	return strings.Contains(strings.Join(rep.Notes, "\n"), part)
}

// A stored 0 is accepted unverified where the reader has that shortcut: the memory manager from
// 1.36 on, not before (the real 1.35 refused the zeroed file, 1.36 accepted it).
func TestZeroAcceptedChecksum(t *testing.T) {
	e := vector(t, vectorsByFile(t), "memory_manager_state/v1.35.8/static-2numa-pods.checksum-zero.json")
	raw := e.raw(t)
	for label, zeroAccepted := range map[string]bool{"v1.35.8": false, "v1.36.4": true, HomeKubelet: true} {
		k := mustParseKubelet(label)
		rep := Decode(KindMemory, raw, Options{Kubelet: &k})
		if want := e.Reads[label].Verdict; rep.Verdict != want {
			t.Fatalf("%s: verdict %s, the real kubelet's %s", label, rep.Verdict, want)
		}
		if len(rep.Checksums) != 1 {
			t.Fatalf("%s: checksums %+v, want one", label, rep.Checksums)
		}
		if c := rep.Checksums[0]; c.Stored != 0 || c.Match || c.ZeroAccepted != zeroAccepted {
			t.Errorf("%s: %+v, want stored 0, no match, zero accepted %v", label, c, zeroAccepted)
		}
	}
}

// "The file is intact ... refuses it" is said of a file whose checksums all match and that the
// reader refuses, as corrupt or unreadable; not of a file it accepts, nor to a kubelet that never
// reads that file.
func TestIntactNote(t *testing.T) {
	vectors := vectorsByFile(t)
	for _, tc := range []struct {
		file, reader string
		intact       bool
	}{
		{"kubelet_internal_checkpoint/v1.19.16/multi-resource.json", "v1.19.16", false},                  // valid
		{"kubelet_internal_checkpoint/v1.19.16/multi-resource.json", HomeKubelet, true},                  // unreadable
		{"cpu_manager_state/v1.15.12/restore-default-equal-range.json", HomeKubelet, true},               // corrupt: 1.37 checks the V2 rule
		{"kubelet_internal_checkpoint/v1.19.16/multi-resource.checksum-altered.json", "v1.19.16", false}, // corrupt, not intact
		{"actuated_pods_state/v1.33.13/one-pod-two-containers.json", "v1.27.16", false},                  // not read by 1.27
	} {
		e := vector(t, vectors, tc.file)
		k := mustParseKubelet(tc.reader)
		rep := Decode(Kind(e.Component), e.raw(t), Options{Kubelet: &k})
		if want := e.Reads[tc.reader].Verdict; rep.Verdict != want {
			t.Fatalf("%s by %s: verdict %s, the real kubelet's %s", tc.file, tc.reader, rep.Verdict, want)
		}
		if got := hasNote(rep, "the file is intact"); got != tc.intact {
			t.Errorf("%s by %s (%s): intact note %v, want %v: %q", tc.file, tc.reader, rep.Verdict, got, tc.intact, rep.Notes)
		}
	}
	// A file in the shape of an era that does not decode in its layout has no checksum to match.
	rep := Decode(KindCPU, []byte(`{"policyName":"none","defaultCpuSet":"","data":5,"dataChecksum":1,"checksum":1}`), Options{})
	if rep.Format != "cpu-v4" || rep.Verdict != Unreadable || len(rep.Checksums) != 0 || hasNote(rep, "intact") {
		t.Errorf("cpu-v4 shape, data a number: format %s, verdict %s, checksums %+v, notes %q", rep.Format, rep.Verdict, rep.Checksums, rep.Notes)
	}
}

// A file with one checksum that its readers accept anyway gets no "would reject" note. The zeroed
// 1.36 pod-level CPU file fails its cpu-v3 checksum, yet the kubelets checking that checksum
// (1.36 with PodLevelResourceManagers, 1.37) accept it, as they do every reader before, through
// the cpu-v2 rule's stored-0 shortcut.
func TestNoRejectNoteForAnAcceptedFile(t *testing.T) {
	e := vector(t, vectorsByFile(t), "cpu_manager_state/v1.36.4+PodLevelResourceManagers/static-podlevel.checksum-zero.json")
	raw := e.raw(t)
	for label, read := range e.Reads {
		if read.Verdict != Valid {
			continue
		}
		k := mustParseKubelet(label)
		rep := Decode(KindCPU, raw, Options{Kubelet: &k})
		if rep.Verdict != Valid || hasNote(rep, "would reject") {
			t.Errorf("%s: verdict %s, notes %q: the real kubelet accepts it", label, rep.Verdict, rep.Notes)
		}
	}
	for _, label := range []string{"v1.36.4+" + GatePodLevelResourceManagers, "v1.37.1"} {
		if e.Reads[label].Verdict != Valid {
			t.Fatalf("%s: recorded %s, this test's premise is that it accepts the file", label, e.Reads[label].Verdict)
		}
	}
}

// A dev-v1 file (DeviceIDs a list) is told by its shape, not only by a checksum that verifies:
// with its checksum broken it is still judged by the last kubelet writing dev-v1, which finds it
// corrupt, not by a dev-v2 reader that cannot parse it.
func TestDeviceV1ShapeWithoutItsChecksum(t *testing.T) {
	n := 0
	for _, e := range loadManifest(t) {
		if formatID(e.Format) != "dev-v1" || e.Mutation == nil || (*e.Mutation != "checksum-altered" && *e.Mutation != "corrupt-digit") {
			continue
		}
		n++
		rep := Decode(KindDevices, e.raw(t), Options{})
		if rep.Format != "dev-v1" || rep.Reader != "v1.19.16" || rep.Verdict != e.Reads["v1.19.16"].Verdict {
			t.Errorf("%s: format %s judged by %s: %s, want dev-v1 by v1.19.16: %s", e.File, rep.Format, rep.Reader, rep.Verdict, e.Reads["v1.19.16"].Verdict)
		}
	}
	if n == 0 {
		t.Fatal("no dev-v1 vector with a broken checksum")
	}
}
