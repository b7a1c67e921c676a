package decode

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/davecgh/go-spew/spew"

	state "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/cpustate"
)

// kubeletDeepHash is the kubelet's own algorithm (1.36+: dump.ForHash builds the spew text as a
// string, the type name is rewritten, then fmt writes it into fnv32a), kept here as the
// baseline the benchmarks compare against.
func kubeletDeepHash(obj any, rewriteFrom, rewriteTo string) uint64 {
	forHash := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true,
		DisablePointerAddresses: true, DisableCapacities: true}
	text := forHash.Sprintf("%#v", obj)
	text = strings.Replace(text, rewriteFrom, rewriteTo, 1)
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", text)
	return uint64(h.Sum32())
}

// largeCPUCheckpoint writes a V2 cpu_manager_state with pods*2 containers, its checksum
// computed by the kubelet's algorithm.
func largeCPUCheckpoint(tb testing.TB, pods int) []byte {
	cp := &state.CPUManagerCheckpointV2{PolicyName: "static", DefaultCPUSet: "0-1,256-511", Entries: map[string]map[string]string{}}
	for i := 0; i < pods; i++ {
		uid := fmt.Sprintf("%08x-6a5f-4e3d-8c2b-%012x", i, i*7919)
		cp.Entries[uid] = map[string]string{"app": fmt.Sprintf("%d-%d", 2+i%250, 3+i%250), "sidecar": fmt.Sprint(4 + i%250)}
	}
	cp.Checksum = 0
	sum := kubeletDeepHash(cp, "CPUManagerCheckpointV2", "CPUManagerCheckpoint")
	cp.Checksum = 0
	raw, err := json.Marshal(cp)
	if err != nil {
		tb.Fatal(err)
	}
	// json.Marshal wrote checksum 0 (the kubelet marshals after setting it); put the sum in.
	return []byte(strings.Replace(string(raw), `"checksum":0`, fmt.Sprintf(`"checksum":%d`, sum), 1))
}

func TestLargeCheckpointVerifies(t *testing.T) {
	raw := largeCPUCheckpoint(t, 2500)
	rep := Decode(KindCPU, raw, Options{})
	if rep.Verdict != Valid || rep.Format != "cpu-v2" {
		t.Fatalf("large checkpoint: %s %s %s", rep.Format, rep.Verdict, rep.Error)
	}
	if n := len(rep.Decoded.CPU.Entries); n != 2500 {
		t.Fatalf("decoded %d pods", n)
	}
}

// BenchmarkChecksum5000 compares the checksum of a decoded 5,000-container checkpoint: ours
// (spew straight into a pooled buffer, rewrite in place, fnv over the bytes) beside the
// kubelet's (spew to a string, rewrite to a new string, fmt into fnv).
func BenchmarkChecksum5000(b *testing.B) {
	raw := largeCPUCheckpoint(b, 2500)
	cp := &state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}
	if err := json.Unmarshal(raw, cp); err != nil {
		b.Fatal(err)
	}
	stored := uint64(cp.Checksum)
	b.Run("kubelet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			saved := cp.Checksum
			cp.Checksum = 0
			if kubeletDeepHash(cp, "CPUManagerCheckpointV2", "CPUManagerCheckpoint") != stored {
				b.Fatal("mismatch")
			}
			cp.Checksum = saved
		}
	})
	b.Run("nodestate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ruleCPUV2.compute(cp) != stored {
				b.Fatal("mismatch")
			}
		}
	})
}

// BenchmarkVerify5000 compares verifying the file from its bytes: the kubelet 1.35 restore path
// (decode as V1, which fails, then as V2, then the checksum) beside our whole Decode (format
// detection, that same reader replayed, both checksums reported, the model built).
func BenchmarkVerify5000(b *testing.B) {
	raw := largeCPUCheckpoint(b, 2500)
	b.SetBytes(int64(len(raw)))
	b.Run("kubelet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v1 := &state.CPUManagerCheckpointV1{Entries: map[string]string{}}
			if json.Unmarshal(raw, v1) == nil {
				b.Fatal("V1 must not decode")
			}
			cp := &state.CPUManagerCheckpointV2{Entries: map[string]map[string]string{}}
			if err := json.Unmarshal(raw, cp); err != nil {
				b.Fatal(err)
			}
			stored := uint64(cp.Checksum)
			cp.Checksum = 0
			if kubeletDeepHash(cp, "CPUManagerCheckpointV2", "CPUManagerCheckpoint") != stored {
				b.Fatal("mismatch")
			}
		}
	})
	b.Run("nodestate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rep := Decode(KindCPU, raw, Options{}); rep.Verdict != Valid {
				b.Fatal(rep.Error)
			}
		}
	})
}

// BenchmarkVerifyByKubelet compares judging the same 5,000-container file for a kubelet built
// with Go 1.26 (1.37.1) and one built with Go 1.27 (1.38.0-beta.0), whose reads decode with
// Go 1.27's encoding/json (builtWithGo127).
func BenchmarkVerifyByKubelet(b *testing.B) {
	raw := largeCPUCheckpoint(b, 2500)
	b.SetBytes(int64(len(raw)))
	for _, label := range []string{"v1.37.1", "v1.38.0-beta.0"} {
		k := mustParseKubelet(label)
		b.Run(label, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rep := Decode(KindCPU, raw, Options{Kubelet: &k}); rep.Verdict != Valid {
					b.Fatal(rep.Error)
				}
			}
		})
	}
}

// BenchmarkUnchecked is what every admission replay pays to name a kubelet build not checked
// (admit.Result.KubeletUnchecked): a release's minor, answered without parsing, beside a build
// of a minor known only from pre-releases and one of a minor newer than every build, answered
// from what the build was told before:
//
//	go test ./pkg/decode -run '^$' -bench Unchecked -benchmem
func BenchmarkUnchecked(b *testing.B) {
	cases := []struct{ name, build string }{{"release-minor", HomeKubelet}, {"newer-minor", "v1.99.0"}}
	if n := len(preReleases); n > 0 { // the GA of the newest's minor is not checked yet
		cases = append(cases, struct{ name, build string }{"pre-release-minor", fmt.Sprintf("v%d.%d.0", preReleases[n-1].Major(), preReleases[n-1].Minor())})
	}
	for _, tc := range cases {
		k, err := ParseKubelet(tc.build, nil)
		if err != nil {
			b.Fatal(err)
		}
		if (k.Unchecked() == "") != (tc.name == "release-minor") {
			b.Fatalf("%s: %q", tc.build, k.Unchecked())
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = k.Unchecked()
			}
		})
	}
}
