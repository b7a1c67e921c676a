package decode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	json127 "github.com/go-json-experiment/json/v1"

	alloc138 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/allocstate138"
)

// fuzzReaders are the kubelets each fuzz input is also judged for.
var fuzzReaders = []string{"v1.17.17", "v1.20.15", "v1.35.8", "v1.36.4", "v1.36.4+PodLevelResourceManagers", HomeKubelet, "v1.38.0-beta.0"}

// seedFuzz adds every vector of a kind as a seed.
func seedFuzz(f *testing.F, kind Kind) {
	err := filepath.WalkDir(filepath.Join(vectorsDir, string(kind)), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
}

func fuzzDecode(f *testing.F, kind Kind) {
	seedFuzz(f, kind)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rep := Decode(kind, raw, Options{})
		checkReport(t, rep)
		// Detection alone finds the format a decode reports: nodestate chooses the release by it.
		if got := Parse(kind, raw).Format(); got != rep.Format {
			t.Errorf("Parse(...).Format() %q, Decode's format %q", got, rep.Format)
		}
		for _, label := range fuzzReaders {
			k := mustParseKubelet(label)
			checkReport(t, Decode(kind, raw, Options{Kubelet: &k}))
		}
		hashedText(kind, raw)
		json127Agrees(t, kind, raw)
	})
}

// json127Agrees: a kubelet built with Go 1.27 decodes each layout into the same value as one
// built with Go 1.26, and fails where it fails (only the words differ): the engine verifies a
// checksum over the one value, decoded once (input.decodeFor).
func json127Agrees(t *testing.T, kind Kind, raw []byte) {
	for _, e := range erasOf(kind) {
		v126, v127 := e.Layout.new(), e.Layout.new()
		err126, err127 := json.Unmarshal(raw, v126), json127.Unmarshal(raw, v127)
		if (err126 == nil) != (err127 == nil) {
			t.Fatalf("layout of %s: Go 1.26's encoding/json says %v, Go 1.27's %v", e.ID, err126, err127)
		}
		if err126 == nil && !reflect.DeepEqual(v126, v127) {
			t.Fatalf("layout of %s: Go 1.26 and 1.27 decode other values:\n%#v\n%#v", e.ID, v126, v127)
		}
	}
}

func FuzzDecodeCPU(f *testing.F)       { fuzzDecode(f, KindCPU) }
func FuzzDecodeMemory(f *testing.F)    { fuzzDecode(f, KindMemory) }
func FuzzDecodeDevices(f *testing.F)   { fuzzDecode(f, KindDevices) }
func FuzzDecodeAllocated(f *testing.F) { fuzzDecode(f, KindAllocated) }

// FuzzAllocV2PodList decodes any bytes as a V2 file's podList (the checksum, which a fuzzed
// file rarely matches, is skipped): GetPodList and the model must not panic, and a list it
// accepts yields one pod per UID. Seeds: the podLists of the 1.38 vectors.
func FuzzAllocV2PodList(f *testing.F) {
	for _, e := range loadManifest(f) {
		if e.Component != string(KindAllocated) || !strings.HasPrefix(e.Format, "alloc-v2") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(vectorsDir, e.File))
		if err != nil {
			f.Fatal(err)
		}
		var cp alloc138.Checkpoint
		var data alloc138.CheckpointData
		if json.Unmarshal(raw, &cp) == nil && json.Unmarshal([]byte(cp.Data), &data) == nil {
			f.Add(data.PodListProto)
		}
	}
	f.Fuzz(func(t *testing.T, podList []byte) {
		doc, _ := json.Marshal(alloc138.CheckpointData{PodListProto: podList})
		d, err := allocV2Payload(&alloc138.Checkpoint{Version: alloc138.VersionV2, Data: string(doc)})
		if err != nil {
			return
		}
		m := allocV2Model(d)
		uids := map[string]bool{}
		for _, p := range d.Pods.Items {
			uids[string(p.UID)] = true
		}
		if len(m.Pods) != len(uids) {
			t.Errorf("%d pods for %d UIDs", len(m.Pods), len(uids))
		}
	})
}

// FuzzAllocResp runs every era's AllocResp rules on any bytes: they must not panic, and, as
// protobuf parses field after field, two pieces each era accepts must be accepted together.
// The seeds are the responses of the device vectors (the real restores judged each one).
func FuzzAllocResp(f *testing.F) {
	for _, e := range loadManifest(f) {
		if e.Component != string(KindDevices) || e.ExpectedVerdict != Valid {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(vectorsDir, e.File))
		if err != nil {
			f.Fatal(err)
		}
		rep := Decode(KindDevices, raw, Options{})
		if st, ok := rep.Decoded.Devices, rep.Decoded.Devices != nil; ok {
			for _, d := range st.PodDeviceEntries {
				f.Add(d.AllocResp, uint16(len(d.AllocResp)/2))
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		k := int(split) % (len(b) + 1)
		for _, r := range files[KindDevices].Restore {
			rule := r.Check.(devRestore).AllocResp
			whole := rule.unmarshal(b)
			if rule.unmarshal(b[:k]) == nil && rule.unmarshal(b[k:]) == nil && whole != nil {
				t.Errorf("%v: %x and %x are accepted, together refused: %v", r.By, b[:k], b[k:], whole)
			}
		}
	})
}
