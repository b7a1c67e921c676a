package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	kubeletViews[KindDRA] = draKubeletView
	kubeletViews[KindDRAHealth] = healthKubeletView
	kubeletViews[KindPodStatus] = podAllocKubeletView(KindPodStatus)
	kubeletViews[KindAllocated] = podAllocKubeletView(KindAllocated)
	kubeletViews[KindActuated] = podAllocKubeletView(KindActuated)
}

// draKubeletView renders a DRAState as the vectors' expectedDecoded shows the kubelet's own
// decoded value: the v1 checkpoint ({version, entries}) or the v2 data document ({kind,
// apiVersion, entries}), claims keyed by the kubelet's Go field names.
func draKubeletView(model any) any {
	m := model.(*DRAState)
	v1 := m.Version != ""
	entries := make([]any, 0, len(m.Claims))
	for _, c := range m.Claims {
		pods := map[string]any{}
		for _, uid := range c.PodUIDs {
			pods[uid] = map[string]any{}
		}
		e := map[string]any{"ClaimUID": c.ClaimUID, "ClaimName": c.ClaimName, "Namespace": c.Namespace, "PodUIDs": pods}
		if v1 {
			e["DriverName"], e["ClassName"], e["CDIDevices"] = c.DriverName, c.ClassName, c.CDIDevices
			if c.ResourceHandles != nil {
				handles := make([]any, 0, len(c.ResourceHandles))
				for _, h := range c.ResourceHandles {
					handles = append(handles, draHandleView(h))
				}
				e["ResourceHandles"] = handles
			}
		} else {
			drivers := map[string]any{}
			for name, ds := range c.DriverState {
				var devices []any
				for _, d := range ds.Devices {
					dev := map[string]any{"PoolName": d.PoolName, "DeviceName": d.DeviceName,
						"RequestNames": d.RequestNames, "CDIDeviceIDs": d.CDIDeviceIDs}
					if d.ShareID != nil {
						dev["ShareID"] = *d.ShareID
					}
					devices = append(devices, dev)
				}
				drivers[name] = map[string]any{"Devices": devices, "skipNodeOperations": ds.SkipNodeOperations}
			}
			e["DriverState"] = drivers
		}
		entries = append(entries, e)
	}
	if v1 {
		return map[string]any{"version": m.Version, "entries": entries}
	}
	return map[string]any{"kind": m.Kind, "apiVersion": m.APIVersion, "entries": entries}
}

// draHandleView is a v1alpha2.ResourceHandle as json.Marshal writes it (omitempty fields).
func draHandleView(h DRAResourceHandle) map[string]any {
	out := map[string]any{}
	if h.DriverName != "" {
		out["driverName"] = h.DriverName
	}
	if h.Data != "" {
		out["data"] = h.Data
	}
	if sd := h.StructuredData; sd != nil {
		results := []any{}
		for _, r := range sd.Results {
			res := map[string]any{"vendorRequestParameters": r.VendorRequestParameters}
			if r.NamedResource != nil {
				res["namedResources"] = map[string]any{"name": *r.NamedResource}
			}
			results = append(results, res)
		}
		s := map[string]any{"vendorClassParameters": sd.VendorClassParameters, "vendorClaimParameters": sd.VendorClaimParameters,
			"results": results}
		if sd.NodeName != "" {
			s["nodeName"] = sd.NodeName
		}
		out["structuredData"] = s
	}
	return out
}

// draFile builds a v2 file around a data document.
func draFile(data string, sum uint64) []byte {
	b, _ := json.Marshal(map[string]any{"Data": data, "Checksum": sum})
	return b
}

func draV2File(data string) []byte { return draFile(data, uint64(crc32.ChecksumIEEE([]byte(data)))) }

func judge(t *testing.T, kind Kind, raw []byte, reader string) *Report {
	t.Helper()
	opts := Options{}
	if reader != "" {
		k := mustParseKubelet(reader)
		opts.Kubelet = &k
	}
	rep := Decode(kind, raw, opts)
	checkReport(t, rep)
	return rep
}

func TestDRAEdgeCases(t *testing.T) {
	const doc = `{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[{"ClaimUID":"u1","ClaimName":"c","Namespace":"ns","PodUIDs":{"p2":{},"p1":{}},"DriverState":{"gpu.example.com":{"Devices":[{"PoolName":"pool","DeviceName":"gpu-0","ShareID":"s-1","RequestNames":["r"],"CDIDeviceIDs":["gpu.example.com/gpu=gpu-0"]}]}}}]}`
	cases := []struct {
		name, reader string
		raw          []byte
		verdict      Verdict
		err          string // exact, or a prefix when it ends in "..."
	}{
		{"checksum above uint32", HomeKubelet, []byte(`{"Data":"{}","Checksum":4294967296}`), Unreadable,
			"failed to get checkpoint dra_manager_state: json: cannot unmarshal number 4294967296 into Go struct field Checkpoint.Checksum of type uint32"},
		// 1.27-1.30 keep a uint64 checksum: the same file is only corrupt there.
		{"checksum above uint32 in v1", "v1.30.14", []byte(`{"Data":"{}","Checksum":4294967296}`), Corrupt,
			"failed to get checkpoint dra_manager_state: checkpoint is corrupted"},
		{"data not JSON, checksum right", "v1.35.8", draV2File("not json"), Unreadable,
			"invalid character 'o' in literal null (expecting 'u')"},
		{"empty data, checksum 0", "v1.31.14", []byte(`{"Data":"","Checksum":0}`), Unreadable, "unexpected end of JSON input"},
		{"empty data, checksum 0, default reader", "", []byte(`{"Data":"","Checksum":0}`), Unreadable, "unexpected end of JSON input"},
		{"data of the wrong type", HomeKubelet, draV2File(`{"ClaimInfoStateList":{}}`), Unreadable,
			"json: cannot unmarshal object into Go struct field CheckpointData.ClaimInfoStateList of type state.ClaimInfoStateList"},
		{"Data not a string", "v1.34.10", []byte(`{"Data":{},"Checksum":1}`), Unreadable,
			"failed to get checkpoint dra_manager_state: json: cannot unmarshal object into Go struct field Checkpoint.Data of type string"},
		// GetOrCreate decodes into NewCheckpoint(nil): absent keys keep the empty document.
		{"no keys at all", "v1.31.14", []byte(`{}`), Valid, ""},
		{"checksum only", "v1.31.14", []byte(`{"Checksum":4010664294}`), Valid, ""},
		{"kind and apiVersion are not checked", HomeKubelet, draV2File(`{"kind":"Pod","apiVersion":"v9"}`), Valid, ""},
		{"ShareID of the wrong type, 1.35 reads it", "v1.35.8", draV2File(strings.Replace(doc, `"s-1"`, `5`, 1)), Unreadable,
			"json: cannot unmarshal number into Go struct field Device.ClaimInfoStateList.DriverState.Devices.ShareID of type types.UID"},
		{"ShareID of the wrong type, 1.34 ignores it", "v1.34.10", draV2File(strings.Replace(doc, `"s-1"`, `5`, 1)), Valid, ""},
		{"v2 file in a v1 reader", "v1.29.15", draV2File(doc), Corrupt, "failed to get checkpoint dra_manager_state: checkpoint is corrupted"},
		{"v1 file in a v2 reader", "v1.31.14", []byte(`{"version":"v1","checksum":991151041}`), Corrupt,
			"failed to get checkpoint dra_manager_state: checkpoint is corrupted"},
		{"v1 file without a checksum key in a v2 reader", "v1.31.14", []byte(`{"version":"v1"}`), Valid, ""},
		{"v1 entries null", "v1.27.16", []byte(`{"version":"v1","entries":null,"checksum":991151041}`), Corrupt,
			"failed to get checkpoint dra_manager_state: checkpoint is corrupted"},
		// 1.28-1.30's legacy check rebuilds a non-nil list and forces version "v1".
		{"v1 entries null, legacy check", "v1.28.15", []byte(`{"version":"v1","entries":null,"checksum":991151041}`), Valid, ""},
		{"v1 version v2, legacy check", "v1.30.14", []byte(`{"version":"v2","checksum":991151041}`), Valid, ""},
		{"v1 version v2", "v1.27.16", []byte(`{"version":"v2","checksum":991151041}`), Corrupt,
			"failed to get checkpoint dra_manager_state: checkpoint is corrupted"},
		{"v1 PodUIDs wrong type", "v1.28.15", []byte(`{"version":"v1","entries":[{"PodUIDs":[]}],"checksum":1}`), Unreadable,
			"failed to get checkpoint dra_manager_state: json: cannot unmarshal array into Go struct field ClaimInfoState.entries.PodUIDs of type sets.Set[string]"},
		{"not read before 1.27", "v1.26.15", []byte(`{"version":"v1","checksum":991151041}`), NotRead, notReadError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := judge(t, KindDRA, c.raw, c.reader)
			if rep.Verdict != c.verdict {
				t.Fatalf("verdict %s (%q), want %s", rep.Verdict, rep.Error, c.verdict)
			}
			if c.err != "" && rep.Error != c.err {
				t.Errorf("error\n got %q\nwant %q", rep.Error, c.err)
			}
		})
	}
}

// A 1.30 writer hashes a RawExtension's bytes as the API server sent them, but json.Marshal
// compacts them: the kubelet's own file then fails verification (vector
// v1.30.14/selfinconsistent-rawextension, not shipped).
func TestDRASelfInconsistentRawExtension(t *testing.T) {
	file := `{"version":"v1","entries":[{"DriverName":"gpu.example.com","ClassName":"gpu-class","ClaimUID":"u1","ClaimName":"c","Namespace":"default","PodUIDs":{"p1":{}},"ResourceHandles":[{"driverName":"gpu.example.com","structuredData":{"vendorClassParameters":{"a":1,"b":[1,2]},"nodeName":"node-1","results":[{"vendorRequestParameters":null,"namedResources":{"name":"gpu-3"}}]}}],"CDIDevices":{"gpu.example.com":["gpu.example.com/gpu=gpu-3"]}}],"checksum":0}`
	written := strings.Replace(file, `{"a":1,"b":[1,2]}`, `{"a": 1, "b": [1, 2]}`, 1)

	sum := func(raw string) string {
		v, err := newInput([]byte(raw)).decode(draV1cLayout)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(ruleDRAV1c.compute(v))
	}
	// What the writer stored: the checksum of its non-compact bytes.
	stored := sum(written)
	raw := []byte(strings.Replace(file, `"checksum":0`, `"checksum":`+stored, 1))

	rep := judge(t, KindDRA, raw, "v1.30.14")
	if rep.Verdict != Corrupt {
		t.Fatalf("verdict %s (%s), want corrupt", rep.Verdict, rep.Error)
	}
	if rep.Format != "dra-v1c" {
		t.Errorf("format %s, want dra-v1c (structured handles)", rep.Format)
	}
	// The same content, checksummed as the reader sees it, is valid and decodes its handle.
	good := []byte(strings.Replace(file, `"checksum":0`, `"checksum":`+sum(file), 1))
	rep = judge(t, KindDRA, good, "")
	if rep.Verdict != Valid || rep.Reader != "v1.30.14" {
		t.Fatalf("verdict %s by %s (%s), want valid by v1.30.14", rep.Verdict, rep.Reader, rep.Error)
	}
	h := rep.Decoded.DRA.Claims[0].ResourceHandles[0]
	if h.StructuredData == nil || h.StructuredData.NodeName != "node-1" || *h.StructuredData.Results[0].NamedResource != "gpu-3" ||
		!bytes.Equal(h.StructuredData.VendorClassParameters, []byte(`{"a":1,"b":[1,2]}`)) {
		t.Errorf("structured handle decoded as %+v", h.StructuredData)
	}
	if got := hashedText(KindDRA, good)["checksum"]; !strings.Contains(got, "StructuredData:(*v1alpha2.StructuredResourceHandle){VendorClassParameters:(runtime.RawExtension){Raw:([]uint8)[123 34 97 34") {
		t.Errorf("hashed text %q lacks the RawExtension bytes", got)
	}
}

// Sub-eras are named by the oldest layout holding everything in the file; older readers drop
// what they lack, and say so.
func TestDRASubEraAndDroppedFields(t *testing.T) {
	shared := draV2File(`{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[{"ClaimUID":"u","ClaimName":"c","Namespace":"n","PodUIDs":{"p":{}},"DriverState":{"d":{"Devices":[{"PoolName":"p","DeviceName":"g","ShareID":"s","RequestNames":null,"CDIDeviceIDs":null}],"skipNodeOperations":["NodePrepareResources"]}}}]}`)
	rep := judge(t, KindDRA, shared, "")
	if rep.Format != "dra-v2c" || rep.Reader != HomeKubelet || rep.Verdict != Valid {
		t.Fatalf("format %s by %s: %s", rep.Format, rep.Reader, rep.Verdict)
	}
	dev := rep.Decoded.DRA.Claims[0].DriverState["d"]
	if dev.Devices[0].ShareID == nil || *dev.Devices[0].ShareID != "s" || len(dev.SkipNodeOperations) != 1 {
		t.Errorf("decoded %+v", dev)
	}
	old := judge(t, KindDRA, shared, "v1.34.10")
	if old.Verdict != Valid || old.Decoded.DRA.Claims[0].DriverState["d"].Devices[0].ShareID != nil {
		t.Fatalf("1.34 should accept the file and drop ShareID: %s %+v", old.Verdict, old.Decoded)
	}
	if len(old.Notes) == 0 || !strings.Contains(old.Notes[0], "dropped") {
		t.Errorf("no note on the dropped fields: %q", old.Notes)
	}
	// An older file read by a newer kubelet loses nothing: no note (1.27's file in 1.29's
	// layout, 1.31's in 1.37's).
	v127, err := os.ReadFile(filepath.Join(vectorsDir, "dra_manager_state/v1.27.16/multi-driver.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rep := judge(t, KindDRA, v127, "v1.29.15"); rep.Verdict != Valid || rep.Rule != "dra-v1a" || len(rep.Notes) != 0 {
		t.Errorf("1.27 file by 1.29: %s by rule %s, notes %q", rep.Verdict, rep.Rule, rep.Notes)
	}
	plain := draV2File(`{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[]}`)
	if rep := judge(t, KindDRA, plain, HomeKubelet); rep.Format != "dra-v2a" || len(rep.Notes) != 0 {
		t.Errorf("format %s, notes %q", rep.Format, rep.Notes)
	}
}

func FuzzDecodeDRA(f *testing.F) {
	fuzzKinds(f, []Kind{KindDRA}, []string{"v1.26.15", "v1.27.16", "v1.29.15", "v1.30.14", "v1.34.10", "v1.35.8", HomeKubelet})
}

// fuzzKinds seeds from the vectors of kinds and asserts that Decode never panics, always gives a
// known verdict with a reason, and that its report serialises: each input judged as each kind,
// by the default reader and by each of readers.
func fuzzKinds(f *testing.F, kinds []Kind, readers []string) {
	for _, kind := range kinds {
		seedFuzz(f, kind)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, kind := range kinds {
			checkReport(t, Decode(kind, raw, Options{}))
			for _, label := range readers {
				k := mustParseKubelet(label)
				checkReport(t, Decode(kind, raw, Options{Kubelet: &k}))
			}
			hashedText(kind, raw)
		}
	})
}

// The conformance suite accepts an older sub-era for files byte-identical across sub-eras; files
// with a sub-era's own content must be named exactly.
func TestDetectedSubEra(t *testing.T) {
	for file, want := range map[string]string{
		"dra_manager_state/v1.27.16/multi-driver.json":                   "dra-v1a",
		"dra_manager_state/v1.28.15/empty.json":                          "dra-v1a",
		"dra_manager_state/v1.29.15/empty-resource-handle.json":          "dra-v1b",
		"dra_manager_state/v1.29.15/multi-driver.json":                   "dra-v1b",
		"dra_manager_state/v1.30.14/empty-resource-handle.json":          "dra-v1c",
		"dra_manager_state/v1.30.14/multi-driver.json":                   "dra-v1c",
		"dra_manager_state/v1.34.10/multi-driver.json":                   "dra-v2a",
		"dra_manager_state/v1.36.4/shared-device.json":                   "dra-v2b",
		"dra_manager_state/v1.37.1/skip-node-operations.json":            "dra-v2c",
		"dra_manager_state/v1.37.1/empty.json":                           "dra-v2a",
		"pod_status_manager_state/v1.29.15/resize-in-progress.json":      "podstatus-v1",
		"pod_status_manager_state/v1.32.13/empty.json":                   "podstatus-v2",
		"allocated_pods_state/v1.34.10/corrupt-content-changed.json":     "alloc-v1a",
		"allocated_pods_state/v1.35.8/pod-level-resources.json":          "alloc-v1b",
		"allocated_pods_state/v1.37.1/emptydir-size-limit.json":          "alloc-v1c",
		"actuated_pods_state/v1.37.1/one-pod-two-containers.json":        "alloc-v1c",
		"dra_health_state/v1.36.4/two-drivers.json":                      "dra-health-v1",
		"dra_manager_state/v1.38.0-alpha.0/corrupt-content-changed.json": "dra-v2b",
	} {
		raw, err := os.ReadFile(filepath.Join(vectorsDir, file))
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := ParseKind(filepath.Dir(filepath.Dir(file)))
		if rep := judge(t, kind, raw, ""); rep.Format != want {
			t.Errorf("%s: format %s, want %s", file, rep.Format, want)
		}
	}
}
