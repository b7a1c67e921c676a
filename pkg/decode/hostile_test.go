package decode

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var cpuAndMemory = []Kind{KindCPU, KindMemory}

var knownVerdicts = map[Verdict]bool{Valid: true, Corrupt: true, Unreadable: true, UnknownFormat: true, NotRead: true}

// checkReport asserts what must hold for any input: a known verdict, a reason when not valid,
// content when valid, and a report that serialises.
func checkReport(t *testing.T, rep *Report) {
	t.Helper()
	if !knownVerdicts[rep.Verdict] {
		t.Fatalf("unknown verdict %q", rep.Verdict)
	}
	if rep.Verdict != Valid && rep.Error == "" {
		t.Fatalf("verdict %s without an error", rep.Verdict)
	}
	if rep.Verdict == Valid && rep.Decoded.IsZero() {
		t.Fatalf("valid without decoded content")
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report does not serialise: %v", err)
	}
}

func TestHostileInputs(t *testing.T) {
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	deepObj := `{"policyName":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + `}`
	cases := []struct {
		name  string
		raw   []byte
		want  Verdict
		kinds []Kind // default: every checksummed kind
	}{
		{"empty", nil, Unreadable, nil},
		{"binary junk", []byte{0x00, 0xff, 0x13, 0x37, 0x89, 'P', 'N', 'G'}, Unreadable, nil},
		{"deep array nesting", []byte(deep), Unreadable, nil},
		{"deep object nesting", []byte(deepObj), Unreadable, nil},
		{"json array", []byte(`[1,2,3]`), UnknownFormat, nil},
		{"json string", []byte(`"cpu_manager_state"`), UnknownFormat, nil},
		{"unrelated object", []byte(`{"apiVersion":"v1","kind":"Pod"}`), UnknownFormat, nil},
		// The same without its comma is not JSON at all (each value whole is not enough).
		{"members without a comma", []byte(`{"apiVersion":"v1" "kind":"Pod"}`), Unreadable, nil},
		{"checksum not a number", []byte(`{"policyName":"none","defaultCpuSet":"","checksum":"x"}`), Unreadable, cpuAndMemory},
		{"negative checksum", []byte(`{"policyName":"none","defaultCpuSet":"","checksum":-1}`), Unreadable, cpuAndMemory},
		{"checksum overflows uint64", []byte(`{"policyName":"none","defaultCpuSet":"","checksum":184467440737095516150}`), Unreadable, cpuAndMemory},
	}
	for _, tc := range cases {
		kinds := tc.kinds
		if kinds == nil {
			kinds = []Kind{KindCPU, KindMemory, KindDevices}
		}
		for _, kind := range kinds {
			t.Run(tc.name+"/"+string(kind), func(t *testing.T) {
				rep := Decode(kind, tc.raw, Options{})
				checkReport(t, rep)
				if rep.Verdict != tc.want {
					t.Errorf("verdict %s (%s), want %s", rep.Verdict, rep.Error, tc.want)
				}
			})
		}
	}
}

// A file of exactly MaxFileSize bytes is read (a kubelet's file padded with the white space JSON
// allows after it stays valid); one byte more is not.
func TestSizeCap(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(vectorsDir, "cpu_manager_state/v1.35.8/static-numa.json"))
	if err != nil {
		t.Fatal(err)
	}
	k := mustParseKubelet("v1.35.8")
	padded := append(raw, bytes.Repeat([]byte(" "), MaxFileSize-len(raw))...)
	if rep := Decode(KindCPU, padded, Options{Kubelet: &k}); rep.Verdict != Valid {
		t.Errorf("file of exactly %d bytes: %s %q, want valid", len(padded), rep.Verdict, rep.Error)
	}
	padded = append(padded, ' ')
	if rep := Decode(KindCPU, padded, Options{Kubelet: &k}); rep.Verdict != Unreadable || !strings.Contains(rep.Error, "cap") {
		t.Fatalf("over-cap file: %s %q", rep.Verdict, rep.Error)
	}
}

func TestUnknownKind(t *testing.T) {
	rep := Decode(Kind("kubeadm-flags.env"), []byte("{}"), Options{})
	if rep.Verdict != UnknownFormat {
		t.Fatalf("unknown kind: %s", rep.Verdict)
	}
}

func TestKubeletVersionNotReading(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(vectorsDir, "memory_manager_state/v1.21.14/none-empty.json"))
	if err != nil {
		t.Fatal(err)
	}
	k := mustParseKubelet("v1.20.15")
	rep := Decode(KindMemory, raw, Options{Kubelet: &k})
	if rep.Verdict != NotRead || rep.Error != notReadError {
		t.Fatalf("1.20 reading memory_manager_state: %s %q", rep.Verdict, rep.Error)
	}
}

func TestParseKubelet(t *testing.T) {
	for in, want := range map[string]string{
		"v1.36.4":                          "v1.36.4",
		"1.36":                             "v1.36.0",
		"v1.30.2-eks-1234":                 "v1.30.2",
		"v1.29.3+k3s1":                     "v1.29.3",
		"v1.38.0-alpha.0":                  "v1.38.0-alpha.0",
		"v1.36.4+PodLevelResourceManagers": "v1.36.4+PodLevelResourceManagers",
	} {
		k, err := ParseKubelet(in, nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if k.String() != want {
			t.Errorf("%s: got %s, want %s", in, k, want)
		}
	}
	if _, err := ParseKubelet("latest", nil); err == nil {
		t.Error("ParseKubelet(latest) succeeded")
	}
	if !mustParseKubelet("v1.38.0-alpha.0").Version.AtLeast(mustParseKubelet("v1.37.0").Version) {
		t.Error("1.38.0-alpha.0 must order after 1.37.0")
	}
}

// spew prints a string as "(string)" followed by the raw bytes: the fast string rule relies on it.
func TestStringPrefixMatchesSpew(t *testing.T) {
	for _, s := range []string{"", "{}", `{"a":"b\n"}`, "\x00\xff\u2028 <&>"} {
		var buf bytes.Buffer
		spewInto(&buf, s, nil)
		if buf.String() != string(stringPrefix)+s {
			t.Errorf("spew of %q is %q", s, buf.String())
		}
	}
}

// The streaming rewrite equals strings.Replace on the whole text, whatever the write boundaries.
func TestRenamerMatchesStringsReplace(t *testing.T) {
	text := "(*state.CPUManagerCheckpointV2){X:(state.CPUManagerCheckpointV2)a V2V2 CPUManagerCheckpointV}"
	for _, all := range []bool{false, true} {
		n := 1
		if all {
			n = -1
		}
		want := strings.Replace(text, "CheckpointV2", "Checkpoint", n)
		for chunk := 1; chunk <= len(text); chunk++ {
			var buf bytes.Buffer
			r := &renamer{w: &buf, from: []byte("CheckpointV2"), to: []byte("Checkpoint"), all: all}
			for i := 0; i < len(text); i += chunk {
				r.Write([]byte(text[i:min(i+chunk, len(text))]))
			}
			r.flush()
			if buf.String() != want {
				t.Fatalf("all=%v chunk %d: %q, want %q", all, chunk, buf.String(), want)
			}
		}
	}
}

// TestWithConfigGates: the config file's gates, then the kubelet's own, which win; a config
// with fewer gates than the kubelet's, or none, keeps the kubelet's.
func TestWithConfigGates(t *testing.T) {
	k := mustParseKubelet("v1.36.4+PodLevelResourceManagers")
	for _, tc := range []struct {
		config map[string]bool
		want   map[string]bool
	}{
		{nil, map[string]bool{"PodLevelResourceManagers": true}},
		{map[string]bool{"PodLevelResourceManagers": false, "Other": true}, map[string]bool{"PodLevelResourceManagers": true, "Other": true}},
	} {
		got := k.WithConfigGates(tc.config).Gates
		if !maps.Equal(got, tc.want) {
			t.Errorf("config %v: gates %v, want %v", tc.config, got, tc.want)
		}
	}
}
