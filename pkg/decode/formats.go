package decode

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// A format is one layout era of one file: what it looks like, which checksums it carries, and
// which kubelet judges it when no --kubelet-version is given (the last release writing it).
type format struct {
	ID        string
	Kind      Kind
	Layout    *layout
	Checksums []formatChecksum
	// Shape says whether the top-level JSON object (keys lower-cased) has this format's own
	// marks; nil marks the kind's fallback format, whose shape older ones share.
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
	{ID: "cpu-v2", Kind: KindCPU, Layout: cpuV2Layout, Home: "v1.35.8",
		Checksums: []formatChecksum{{"checksum", ruleCPUV2, "kubelet 1.18+ (0 accepted unverified)"}}},

	{ID: "mem-v3", Kind: KindMemory, Layout: memV3Layout, Home: "v1.37.1", Shape: hasAnyKey("data", "datachecksum"),
		Checksums: []formatChecksum{
			{"dataChecksum", ruleMemV3Data, "kubelet 1.37+"},
			{"checksum", ruleMemV3Outer, "kubelet 1.21-1.36 (0 accepted unverified from 1.36)"},
		}},
	{ID: "mem-v2", Kind: KindMemory, Layout: memV2Layout, Home: "v1.36.4+PodLevelResourceManagers", Shape: hasAnyKey("podentries"),
		Checksums: []formatChecksum{{"checksum", ruleMemV2, "kubelet 1.36 with PodLevelResourceManagers, 1.37+"}}},
	{ID: "mem-v1", Kind: KindMemory, Layout: memV1Layout, Home: "v1.35.8",
		Checksums: []formatChecksum{{"checksum", ruleMemV1, "kubelet 1.21+ (0 accepted unverified from 1.36)"}}},

	{ID: "dev-v1", Kind: KindDevices, Layout: devV1Layout, Home: "v1.19.16", Shape: deviceIDsAre('['),
		Checksums: []formatChecksum{{"Checksum", ruleDevV1, "kubelet 1.11-1.19; 1.20.14+, 1.21.8+, 1.22.5+ and 1.23-1.30 as a fallback"}}},
	{ID: "dev-v2", Kind: KindDevices, Layout: devV2Layout, Home: "v1.37.1",
		Checksums: []formatChecksum{{"Checksum", ruleDevV2, "kubelet 1.20+"}}},
	// dra_manager_state: v2 sub-eras by the fields they added (a file without them is byte-identical
	// to the older sub-era's); v1c by structured handles, else v1b/v1c by checksum; v1a falls back.
	{ID: "dra-v2c", Kind: KindDRA, Layout: draV2cLayout, Home: "v1.37.1", Shape: draDataHasKey("driver", "skipNodeOperations"),
		Checksums: []formatChecksum{{"Checksum", ruleDRAV2, "kubelet 1.31+ (1.31-1.36 drop skipNodeOperations)"}}},
	{ID: "dra-v2b", Kind: KindDRA, Layout: draV2bLayout, Home: "v1.36.4", Shape: draDataHasKey("device", "ShareID"),
		Checksums: []formatChecksum{{"Checksum", ruleDRAV2, "kubelet 1.31+ (1.31-1.34 drop ShareID)"}}},
	{ID: "dra-v2a", Kind: KindDRA, Layout: draV2aLayout, Home: "v1.34.10", Shape: hasAnyKey("data"),
		Checksums: []formatChecksum{{"Checksum", ruleDRAV2, "kubelet 1.31+"}}},
	{ID: "dra-v1c", Kind: KindDRA, Layout: draV1cLayout, Home: "v1.30.14", Shape: draV1HandleHasKey("structuredData"),
		Checksums: []formatChecksum{{"checksum", ruleDRAV1c, "kubelet 1.30 only"}}},
	{ID: "dra-v1b", Kind: KindDRA, Layout: draV1bLayout, Home: "v1.29.15", Shape: checksumOnly,
		Checksums: []formatChecksum{{"checksum", ruleDRAV1b, "kubelet 1.28-1.29 only"}}},
	{ID: "dra-v1a", Kind: KindDRA, Layout: draV1aLayout, Home: "v1.27.16",
		Checksums: []formatChecksum{{"checksum", ruleDRAV1a, "kubelet 1.27-1.30 (1.28-1.30 through their legacy check)"}}},

	{ID: "podstatus-v2", Kind: KindPodStatus, Layout: podStatusV2Layout, Home: "v1.32.13", Shape: hasAnyKey("data"),
		Checksums: []formatChecksum{{"checksum", rulePodStatusV2, "kubelet 1.32 only"}}},
	{ID: "podstatus-v1", Kind: KindPodStatus, Layout: podStatusV1Layout, Home: "v1.31.14",
		Checksums: []formatChecksum{{"checksum", rulePodStatusV1, "kubelet 1.27-1.31"}}},

	{ID: "alloc-v1c", Kind: KindAllocated, Layout: allocV1cLayout, Home: "v1.37.1", Shape: allocDataHasPodKey("EmptyDirVolumeLimits"),
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+ (1.33-1.36 drop EmptyDirVolumeLimits)"}}},
	{ID: "alloc-v1b", Kind: KindAllocated, Layout: allocV1bLayout, Home: "v1.36.4", Shape: allocDataHasPodKey("PodLevelResources"),
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+ (1.33-1.34 drop PodLevelResources)"}}},
	{ID: "alloc-v1a", Kind: KindAllocated, Layout: allocV1aLayout, Home: "v1.34.10",
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+"}}},

	{ID: "alloc-v1c", Kind: KindActuated, Layout: allocV1cLayout, Home: "v1.37.1", Shape: allocDataHasPodKey("EmptyDirVolumeLimits"),
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+ (1.33-1.36 drop EmptyDirVolumeLimits)"}}},
	{ID: "alloc-v1b", Kind: KindActuated, Layout: allocV1bLayout, Home: "v1.36.4", Shape: allocDataHasPodKey("PodLevelResources"),
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+ (1.33-1.34 drop PodLevelResources)"}}},
	{ID: "alloc-v1a", Kind: KindActuated, Layout: allocV1aLayout, Home: "v1.34.10",
		Checksums: []formatChecksum{{"checksum", ruleAlloc, "kubelet 1.33+"}}},
}

// knownKeys are the top-level keys (lower-cased) any layout of a kind has; an object with none of
// them is not that checkpoint. A nil list accepts any object.
var knownKeys = map[Kind][]string{
	KindCPU:       {"policyname", "defaultcpuset", "entries", "podentries", "checksum", "data", "datachecksum"},
	KindMemory:    {"policyname", "machinestate", "entries", "podentries", "checksum", "data", "datachecksum"},
	KindDevices:   {"data", "checksum"},
	KindDRA:       {"version", "entries", "checksum", "data"},
	KindPodStatus: {"allocationentries", "resizestatusentries", "checksum", "data"},
	KindAllocated: {"data", "checksum"},
	KindActuated:  {"data", "checksum"},
	// dra_health_state has no checksummed layout (a handler judges it): no format matches.
	KindDRAHealth: {},
}

// jsonObject is a top-level JSON object with lower-cased keys (encoding/json matches keys
// case-insensitively, and so does the kubelet).
type jsonObject map[string]json.RawMessage

func parseObject(raw []byte) (jsonObject, error) {
	if top, ok := scanObject(raw); ok {
		return top, nil
	}
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

// valuesAreStrings: the object under key maps to strings (CPU V1's containerID -> cpuset).
func valuesAreStrings(key string) func(jsonObject) bool {
	return func(top jsonObject) bool {
		v := firstMemberValue(top[key])
		return len(v) > 0 && v[0] == '"'
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

// detectFormat names the layout era of a file: a format whose own marks the JSON carries (a
// data document, pod-level entries, V1 lists); else, among layouts sharing one shape (say an
// empty V1/V2/V3 CPU file), the one whose checksum verifies; else the kind's fallback format.
// It returns nil when the object is not this kind at all.
func detectFormat(kind Kind, in *input, top jsonObject) *format {
	if keys, ok := knownKeys[kind]; ok && !hasAnyKey(keys...)(top) {
		return nil
	}
	candidates := formatsOf(kind)
	for _, f := range candidates {
		if f.Shape != nil && f.Shape(top) {
			return f
		}
	}
	// The fallback (the most common layout) is tried first.
	sort.SliceStable(candidates, func(i, j int) bool { return candidates[i].Shape == nil && candidates[j].Shape != nil })
	for _, f := range candidates {
		v, err := in.decode(f.Layout)
		if err != nil {
			continue
		}
		primary := f.Checksums[0].Rule
		if stored := fieldUint(v, primary.Field); stored != 0 && in.checksum(f.Layout, primary) == stored {
			return f
		}
	}
	if len(candidates) > 0 && candidates[0].Shape == nil {
		return candidates[0]
	}
	return nil
}

// unmarshalPayload decodes an embedded data document.
func unmarshalPayload(data string, into any) error {
	return json.Unmarshal([]byte(data), into)
}

// dataDocument decodes the JSON document embedded as a string under "data" (nil if it is not
// one), for the shapes of formats that differ only inside it.
func dataDocument(top jsonObject) map[string]json.RawMessage {
	var data string
	if json.Unmarshal(top["data"], &data) != nil {
		return nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal([]byte(data), &doc) != nil {
		return nil
	}
	return doc
}
