package decode

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A format is one layout era of one file: what it looks like, which checksums it carries, and
// which kubelet judges it when no --kubelet-version is given (the last release writing it).
type format struct {
	ID        string
	Kind      Kind
	Layout    *layout
	Checksums []formatChecksum
	// Shape says whether the top-level JSON object (keys lower-cased) looks like this format.
	Shape func(top jsonObject) bool
	Home  string
}

// formatChecksum is one stored checksum of a format and who checks it.
type formatChecksum struct {
	JSONField string
	Rule      *checksumRule
	Readers   string
}

// formats lists every format per kind, most specific shape first.
var formats = []*format{
	{ID: "cpu-v4", Kind: KindCPU, Layout: cpuV4Layout, Home: "v1.37.1", Shape: hasAnyKey("data", "datachecksum"),
		Checksums: []formatChecksum{
			{"dataChecksum", ruleCPUV4Data, "kubelet 1.37+"},
			{"checksum", ruleCPUV4Outer, "kubelet 1.18-1.36 (0 accepted unverified)"},
		}},
	{ID: "cpu-v3", Kind: KindCPU, Layout: cpuV3Layout, Home: "v1.36.4+PodLevelResourceManagers", Shape: hasAnyKey("podentries"),
		Checksums: []formatChecksum{{"checksum", ruleCPUV3, "kubelet 1.36 with PodLevelResourceManagers, 1.37+"}}},
	{ID: "cpu-v1", Kind: KindCPU, Layout: cpuV1Layout, Home: "v1.17.17", Shape: valuesAreStrings("entries"),
		Checksums: []formatChecksum{{"checksum", ruleCPUV1, "kubelet 1.12-1.36 (0 accepted unverified)"}}},
	{ID: "cpu-v2", Kind: KindCPU, Layout: cpuV2Layout, Home: "v1.35.8", Shape: anyShape,
		Checksums: []formatChecksum{{"checksum", ruleCPUV2, "kubelet 1.18+ (0 accepted unverified)"}}},

	{ID: "mem-v3", Kind: KindMemory, Layout: memV3Layout, Home: "v1.37.1", Shape: hasAnyKey("data", "datachecksum"),
		Checksums: []formatChecksum{
			{"dataChecksum", ruleMemV3Data, "kubelet 1.37+"},
			{"checksum", ruleMemV3Outer, "kubelet 1.21-1.36 (0 accepted unverified from 1.36)"},
		}},
	{ID: "mem-v2", Kind: KindMemory, Layout: memV2Layout, Home: "v1.36.4+PodLevelResourceManagers", Shape: hasAnyKey("podentries"),
		Checksums: []formatChecksum{{"checksum", ruleMemV2, "kubelet 1.36 with PodLevelResourceManagers, 1.37+"}}},
	{ID: "mem-v1", Kind: KindMemory, Layout: memV1Layout, Home: "v1.35.8", Shape: anyShape,
		Checksums: []formatChecksum{{"checksum", ruleMemV1, "kubelet 1.21+ (0 accepted unverified from 1.36)"}}},

	{ID: "dev-v2", Kind: KindDevices, Layout: devV2Layout, Home: "v1.37.1", Shape: deviceIDsAre('{'),
		Checksums: []formatChecksum{{"Checksum", ruleDevV2, "kubelet 1.20+"}}},
	{ID: "dev-v1", Kind: KindDevices, Layout: devV1Layout, Home: "v1.19.16", Shape: deviceIDsAre('['),
		Checksums: []formatChecksum{{"Checksum", ruleDevV1, "kubelet 1.11-1.19; 1.20.14+, 1.21.8+, 1.22.5+ and 1.23-1.30 as a fallback"}}},
	{ID: "dev-v2", Kind: KindDevices, Layout: devV2Layout, Home: "v1.37.1", Shape: anyShape,
		Checksums: []formatChecksum{{"Checksum", ruleDevV2, "kubelet 1.20+"}}},
}

// knownKeys are the top-level keys (lower-cased) any layout of a kind has; an object with none of
// them is not that checkpoint. A nil list accepts any object.
var knownKeys = map[Kind][]string{
	KindCPU:     {"policyname", "defaultcpuset", "entries", "podentries", "checksum", "data", "datachecksum"},
	KindMemory:  {"policyname", "machinestate", "entries", "podentries", "checksum", "data", "datachecksum"},
	KindDevices: {"data", "checksum"},
}

// jsonObject is a top-level JSON object with lower-cased keys (encoding/json matches keys
// case-insensitively, and so does the kubelet).
type jsonObject map[string]json.RawMessage

func parseObject(raw []byte) (jsonObject, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	out := make(jsonObject, len(top))
	for k, v := range top {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

func hasAnyKey(keys ...string) func(jsonObject) bool {
	return func(top jsonObject) bool {
		for _, k := range keys {
			if _, ok := top[k]; ok {
				return true
			}
		}
		return false
	}
}

func anyShape(jsonObject) bool { return true }

// valuesAreStrings: the object under key maps to strings (CPU V1's containerID -> cpuset).
func valuesAreStrings(key string) func(jsonObject) bool {
	return func(top jsonObject) bool {
		var m map[string]json.RawMessage
		if json.Unmarshal(top[key], &m) != nil {
			return false
		}
		for _, v := range m {
			return len(v) > 0 && v[0] == '"'
		}
		return false
	}
}

// deviceIDsAre: the first entry's DeviceIDs opens with open ('[' for V1 lists, '{' for V2 maps).
func deviceIDsAre(open byte) func(jsonObject) bool {
	return func(top jsonObject) bool {
		var data map[string]json.RawMessage
		if json.Unmarshal(top["data"], &data) != nil {
			return false
		}
		for k, v := range data {
			if !strings.EqualFold(k, "PodDeviceEntries") {
				continue
			}
			var entries []map[string]json.RawMessage
			if json.Unmarshal(v, &entries) != nil {
				return false
			}
			for _, e := range entries {
				for ek, ev := range e {
					if strings.EqualFold(ek, "DeviceIDs") {
						ev = bytes.TrimSpace(ev)
						return len(ev) > 0 && ev[0] == open
					}
				}
			}
		}
		return false
	}
}

func formatsOf(kind Kind) []*format {
	var out []*format
	for _, f := range formats {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// detectFormat names the layout era of a file: the first format whose own checksum verifies,
// else the first whose shape fits. It returns nil when the object is not this kind at all.
func detectFormat(kind Kind, raw []byte, top jsonObject) *format {
	candidates := formatsOf(kind)
	if keys, ok := knownKeys[kind]; ok && !hasAnyKey(keys...)(top) {
		return nil
	}
	for _, f := range candidates {
		v := f.Layout.New()
		if json.Unmarshal(raw, v) != nil {
			continue
		}
		primary := f.Checksums[0].Rule
		if stored := fieldUint(v, primary.Field); stored != 0 && primary.compute(v) == stored {
			return f
		}
	}
	for _, f := range candidates {
		if f.Shape(top) {
			return f
		}
	}
	return nil
}

// unmarshalPayload decodes an embedded data document.
func unmarshalPayload(data string, into any) error {
	return json.Unmarshal([]byte(data), into)
}
