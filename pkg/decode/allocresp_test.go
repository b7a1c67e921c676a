package decode

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	devcheckpoint "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/devcheckpoint"
)

// Protobuf wire helpers for the tests.
func pbTag(num uint64, wt byte) []byte { return binary.AppendUvarint(nil, num<<3|uint64(wt)) }
func pbBytes(num uint64, v []byte) []byte {
	return pbCat(pbTag(num, 2), binary.AppendUvarint(nil, uint64(len(v))), v)
}
func pbStr(num uint64, s string) []byte { return pbBytes(num, []byte(s)) }
func pbCat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var pbGood = pbCat(pbBytes(1, pbCat(pbStr(1, "NVIDIA_VISIBLE_DEVICES"), pbStr(2, "GPU-0"))),
	pbBytes(2, pbCat(pbStr(1, "/usr/local/nvidia"), pbStr(2, "/opt/nvidia"), pbTag(3, 0), []byte{1})),
	pbBytes(3, pbCat(pbStr(1, "/dev/nvidia0"), pbStr(2, "/dev/nvidia0"), pbStr(3, "rw"))),
	pbBytes(4, pbCat(pbStr(1, "example.com/gpu"), pbStr(2, "0"))))

// The kubelet of each era, as a release in it (the rows of files[KindDevices].Restore).
var allocRespEras = []string{"v1.17.17", "v1.21.14", "v1.33.0", HomeKubelet}

const (
	pbDecode = "proto: cannot parse invalid wire-format data"
	pbUTF8   = "string field contains invalid UTF-8"
	eof      = "unexpected EOF"
)

// Every rule that differs between the eras, with each era's error ("" keeps the entry). The
// texts are the generated code's (api.pb.go of k8s.io/kubelet v0.17.17, v0.21.14, v0.33.0) and
// google.golang.org/protobuf's; the conformance vectors record them from the real restores.
func TestAllocRespRules(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want [4]string // by allocRespEras
	}{
		{"good", pbGood, [4]string{}},
		{"empty", nil, [4]string{}},
		{"truncated", pbGood[:30], [4]string{eof, eof, eof, pbDecode}},
		{"envs as a varint", pbCat(pbTag(1, 0), []byte{7}), [4]string{"proto: wrong wireType = 0 for field Envs", "proto: wrong wireType = 0 for field Envs", "proto: wrong wireType = 0 for field Envs", ""}},
		{"read_only as bytes", pbBytes(2, pbStr(3, "x")), [4]string{"proto: wrong wireType = 2 for field ReadOnly", "proto: wrong wireType = 2 for field ReadOnly", "proto: wrong wireType = 2 for field ReadOnly", ""}},
		{"cdi_devices as a varint", pbCat(pbTag(5, 0), []byte{1}), [4]string{"", "", "proto: wrong wireType = 0 for field CDIDevices", ""}},
		{"cdi name truncated", pbBytes(5, []byte{0x0a, 0x05, 'a'}), [4]string{"", "", eof, pbDecode}},
		{"host path not UTF-8", pbBytes(2, pbStr(2, "/mnt/\xff")), [4]string{"", "", "", pbUTF8}},
		{"env value not UTF-8", pbBytes(1, pbCat(pbStr(1, "K"), pbStr(2, "caf\xe9"))), [4]string{"", "", "", pbUTF8}},
		{"env key as a varint", pbBytes(1, pbCat(pbTag(1, 0), []byte{0}, pbStr(2, "v"))), [4]string{"", "", "", ""}},
		{"lone end group in an env entry", pbBytes(1, pbCat(pbStr(1, "A"), pbTag(3, 4), pbStr(2, "B"))), [4]string{"", "proto: unexpected end of group", "proto: unexpected end of group", pbDecode}},
		{"lone end group at the top", pbCat(pbGood, pbTag(9, 4)), [4]string{"proto: ContainerAllocateResponse: wiretype end group for non-group", "proto: ContainerAllocateResponse: wiretype end group for non-group", "proto: ContainerAllocateResponse: wiretype end group for non-group", pbDecode}},
		{"field number 0", pbCat(pbTag(0, 0), []byte{1}), [4]string{"proto: ContainerAllocateResponse: illegal tag 0 (wire type 0)", "proto: ContainerAllocateResponse: illegal tag 0 (wire type 0)", "proto: ContainerAllocateResponse: illegal tag 0 (wire type 0)", pbDecode}},
		{"field number 2^29", pbCat(pbTag(1<<29, 0), []byte{1}), [4]string{"", "", "", pbDecode}},
		{"field number 2^31 (negative as int32)", pbCat(pbTag(1<<31, 0), []byte{1}), [4]string{"proto: ContainerAllocateResponse: illegal tag -2147483648 (wire type 17179869184)", "proto: ContainerAllocateResponse: illegal tag -2147483648 (wire type 17179869184)", "proto: ContainerAllocateResponse: illegal tag -2147483648 (wire type 17179869184)", pbDecode}},
		{"ten-byte varint over 64 bits", pbBytes(2, pbCat(pbTag(3, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})), [4]string{"", "", "", pbDecode}},
		{"eleven-byte varint", pbBytes(2, pbCat(pbTag(3, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})), [4]string{"proto: integer overflow", "proto: integer overflow", "proto: integer overflow", pbDecode}},
		{"group", pbCat(pbTag(9, 3), pbTag(1, 0), []byte{5}, pbTag(9, 4)), [4]string{}},
		{"group ended by another number", pbCat(pbTag(9, 3), pbTag(1, 0), []byte{5}, pbTag(8, 4)), [4]string{"", "", "", pbDecode}},
		{"group never ended", pbCat(pbTag(9, 3), pbTag(1, 0), []byte{5}), [4]string{eof, eof, eof, pbDecode}},
		{"wire type 6", pbCat(pbTag(9, 6)), [4]string{"proto: illegal wireType 6", "proto: illegal wireType 6", "proto: illegal wireType 6", pbDecode}},
		{"length near 2^63", pbCat(pbTag(2, 2), binary.AppendUvarint(nil, 1<<63)), [4]string{"proto: negative length found during unmarshaling", "proto: negative length found during unmarshaling", "proto: negative length found during unmarshaling", pbDecode}},
		// A map entry's string may run past the entry, as long as it ends within the response:
		// gogo reads it against the whole message's length, then jumps to the entry's end.
		// Here the key is the next field's two bytes (field 9, empty), which is then read again.
		// An unknown field in a map entry whose end, from the response's start, is past the
		// largest int: 1.2's code only checks the skip's own length, the index wraps negative
		// and the next read panics (TestAllocRespPanicReport: the kubelet crashes).
		{"skip in an env entry past the largest int", pbBytes(1, pbCat(pbStr(1, "k"), pbTag(3, 2), binary.AppendUvarint(nil, 1<<63-15))),
			[4]string{"panic: runtime error: index out of range [-9223372036854775808]", "proto: negative length found during unmarshaling", "proto: negative length found during unmarshaling", pbDecode}},
		{"env key past its entry", pbCat(pbTag(1, 2), []byte{2}, pbTag(1, 2), []byte{2}, pbTag(9, 2), []byte{0}), [4]string{"", "", "", pbDecode}},
	} {
		for i, label := range allocRespEras {
			if got := allocRespRuleOf(t, label).judge(c.b); got != c.want[i] {
				t.Errorf("%s, kubelet %s: %q, want %q", c.name, label, got, c.want[i])
			}
		}
	}
}

// allocRespRuleOf is the AllocResp rule of kubelet release label's row of
// files[KindDevices].Restore.
func allocRespRuleOf(t testing.TB, label string) allocRespRule {
	t.Helper()
	k := mustParseKubelet(label)
	for _, r := range files[KindDevices].Restore {
		if r.By.has(k) {
			return r.Check.(devRestore).AllocResp
		}
	}
	t.Fatalf("kubelet %s: no device restore row", label)
	return allocRespRule{}
}

// judge is the rule's error text for b ("": accepted).
func (r allocRespRule) judge(b []byte) string {
	if err := r.unmarshal(b); err != nil {
		return err.Error()
	}
	return ""
}

// The corpus of hack/restorevec/device/allocresp, recorded from each era's real device plugin
// API code (k8s.io/kubelet's deviceplugin/v1beta1 and its Unmarshal, as the restore calls it):
// every era rule must return each input's error word for word. The record's count guards a
// vanished input, its columns a rule without a record.
func TestAllocRespMatchesRealUnmarshal(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/allocresp/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var eras []string
	var rules []allocRespRule
	texts := []string{""}
	count, rows, bad := -1, 0, 0
	for n, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		key, rest, _ := strings.Cut(line, " ")
		switch key {
		case "#":
			continue
		case "eras":
			eras = strings.Fields(rest)
			for _, label := range eras {
				rules = append(rules, allocRespRuleOf(t, label))
			}
			continue
		case "inputs":
			if count, err = strconv.Atoi(rest); err != nil {
				t.Fatalf("corpus.txt:%d: %v", n+1, err)
			}
			continue
		case "text":
			num, quoted, _ := strings.Cut(rest, " ")
			text, err := strconv.Unquote(quoted)
			if err != nil || num != strconv.Itoa(len(texts)) {
				t.Fatalf("corpus.txt:%d: text %s %s out of order or not quoted", n+1, num, quoted)
			}
			texts = append(texts, text)
			continue
		}
		fields := strings.Fields(line)
		if len(eras) == 0 || (len(fields) != len(eras) && len(fields) != len(eras)+1) {
			t.Fatalf("corpus.txt:%d: %d fields, want a result per era (%v) and the input", n+1, len(fields), eras)
		}
		in, err := hex.DecodeString(strings.Join(fields[len(eras):], ""))
		if err != nil {
			t.Fatalf("corpus.txt:%d: %v", n+1, err)
		}
		rows++
		for i, rule := range rules {
			want, err := strconv.Atoi(fields[i])
			if err != nil || want < 0 || want >= len(texts) {
				t.Fatalf("corpus.txt:%d: %q is not a text's number", n+1, fields[i])
			}
			if got := rule.judge(in); got != texts[want] {
				if bad++; bad <= 20 {
					t.Errorf("corpus.txt:%d, kubelet %s, input %x: %q, the real code %q", n+1, eras[i], in, got, texts[want])
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d results differ from the real code's", bad)
	}
	if rows != count || rows == 0 {
		t.Errorf("corpus.txt: %d inputs, its header says %d", rows, count)
	}
	// Every era rule is checked: the rule of each row of the restore is a recorded release's.
	for _, r := range files[KindDevices].Restore {
		if rule := r.Check.(devRestore).AllocResp; !slices.Contains(rules, rule) {
			t.Errorf("no recorded era has the rule %+v", rule)
		}
	}
}

// A file with one bad entry is valid, names the entry in Dropped and in a note, and the other
// entries stay in Decoded.
func TestDroppedEntryReport(t *testing.T) {
	raw := devFile(t, pbGood, pbGood[:12])
	for _, label := range []string{"v1.21.14", HomeKubelet} {
		k := mustParseKubelet(label)
		rep := Decode(KindDevices, raw, Options{Kubelet: &k})
		if rep.Verdict != Valid || len(rep.Dropped) != 1 || rep.Dropped[0].Index != 1 || rep.Dropped[0].ContainerName != "c1" {
			t.Fatalf("%s: verdict %s, dropped %+v", label, rep.Verdict, rep.Dropped)
		}
		if n := len(rep.Decoded.Devices.PodDeviceEntries); n != 2 {
			t.Errorf("%s: %d entries decoded, want 2", label, n)
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "skips 1 of 2 device entries") {
			t.Errorf("%s: notes %q", label, rep.Notes)
		}
	}
}

// An AllocResp on which kubelet 1.17's generated code panics: that kubelet crashes, the file is
// refused with the panic's text; later kubelets skip the entry.
func TestAllocRespPanicReport(t *testing.T) {
	bad := pbBytes(1, pbCat(pbStr(1, "k"), pbTag(3, 2), binary.AppendUvarint(nil, 1<<63-15)))
	cp := devcheckpoint.NewDataV1()
	for i, r := range [][]byte{pbGood, bad} {
		cp.Data.PodDeviceEntries = append(cp.Data.PodDeviceEntries, devcheckpoint.PodDevicesEntryV1{PodUID: "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f",
			ContainerName: fmt.Sprintf("c%d", i), ResourceName: "nvidia.com/gpu", DeviceIDs: []string{fmt.Sprintf("GPU-%d", i)}, AllocResp: r})
	}
	cp.Checksum = checksumField(eraByID(t, "dev-v1").Sums[0].Rule.compute(cp))
	raw, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	k := mustParseKubelet("v1.17.17")
	rep := Decode(KindDevices, raw, Options{Kubelet: &k})
	if rep.Verdict != Unreadable || rep.Error != "panic: runtime error: index out of range [-9223372036854775808]" ||
		rep.Refused == nil || rep.Refused.KubeletStarts || !strings.Contains(rep.Refused.Effect, "panics") {
		t.Errorf("1.17: verdict %s, error %q, refused %+v", rep.Verdict, rep.Error, rep.Refused)
	}
	k = mustParseKubelet("v1.19.16")
	if rep := Decode(KindDevices, raw, Options{Kubelet: &k}); rep.Verdict != Valid || len(rep.Dropped) != 1 || rep.Dropped[0].Index != 1 {
		t.Errorf("1.19: verdict %s, dropped %+v", rep.Verdict, rep.Dropped)
	}
}

// devFile is a dev-v2 checkpoint with one entry per response (containers c0, c1, ...), its
// checksum computed by the dev-v2 rule.
func devFile(t *testing.T, resps ...[]byte) []byte {
	t.Helper()
	cp := devcheckpoint.NewData()
	for i, r := range resps {
		cp.Data.PodDeviceEntries = append(cp.Data.PodDeviceEntries, devcheckpoint.PodDevicesEntry{PodUID: "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f",
			ContainerName: fmt.Sprintf("c%d", i), ResourceName: "nvidia.com/gpu", DeviceIDs: devcheckpoint.DevicesPerNUMA{0: {fmt.Sprintf("GPU-%d", i)}}, AllocResp: r})
	}
	cp.Data.RegisteredDevices["nvidia.com/gpu"] = []string{"GPU-0", "GPU-1"}
	cp.Checksum = checksumField(eraByID(t, "dev-v2").Sums[0].Rule.compute(cp))
	raw, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Two good entries for one container and resource: the kubelet keeps the later one.
func TestReplacedEntryReport(t *testing.T) {
	raw := devFile(t, pbGood, pbGood)
	// devFile names the containers c0, c1: make them one.
	raw = []byte(strings.Replace(string(raw), `"ContainerName":"c1"`, `"ContainerName":"c0"`, 1))
	var cp devcheckpoint.Data
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	cp.Checksum = checksumField(eraByID(t, "dev-v2").Sums[0].Rule.compute(&cp))
	raw, _ = json.Marshal(&cp)
	k := mustParseKubelet(HomeKubelet)
	rep := Decode(KindDevices, raw, Options{Kubelet: &k})
	if rep.Verdict != Valid || len(rep.Dropped) != 1 || rep.Dropped[0].Index != 0 || rep.Dropped[0].ReplacedBy == nil || *rep.Dropped[0].ReplacedBy != 1 {
		t.Fatalf("verdict %s, dropped %+v", rep.Verdict, rep.Dropped)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "entry 0 (pod 6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f, container c0, nvidia.com/gpu) is replaced by entry 1") {
		t.Errorf("notes %q", rep.Notes)
	}
}
