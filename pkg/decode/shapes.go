package decode

import (
	"bytes"
	"encoding/json"
	"strings"
)

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

// detectEra names the layout era of a file: an era whose own marks the JSON carries (a data
// document, pod-level entries, V1 lists); else, among eras sharing one shape (say an empty
// V1/V2/V3 CPU file), the one whose checksum verifies; else the file's fallback era. It returns
// nil when the object is not this checkpoint at all.
func detectEra(kind Kind, in *input, top jsonObject) *era {
	if keys := files[kind].Keys; keys != nil && !hasAnyKey(keys...)(top) {
		return nil
	}
	candidates := erasOf(kind)
	for _, e := range candidates {
		if e.Shape != nil && e.Shape(top) {
			return e
		}
	}
	// The fallback (the most common layout) is tried first.
	var fallback *era
	ordered := make([]*era, 0, len(candidates))
	for _, e := range candidates {
		if e.Shape == nil && fallback == nil {
			fallback = e
			ordered = append([]*era{e}, ordered...)
		} else {
			ordered = append(ordered, e)
		}
	}
	for _, e := range ordered {
		v, err := in.decode(e.Layout)
		if err != nil {
			continue
		}
		primary := e.Sums[0].Rule
		if stored := primary.stored(v); stored != 0 && in.checksum(e.Layout, primary) == stored {
			return e
		}
	}
	return fallback
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
