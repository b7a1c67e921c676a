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

// shapeDoc is a file's JSON as the era shapes look at it: the top object, and what lies
// deeper decoded on first use and kept, however many eras' shapes look at it.
type shapeDoc struct {
	top jsonObject
	// raw is the file; valid is json.Valid(raw), asked once for every probe of its values.
	raw           []byte
	valid         lazy[bool]
	data          lazy[map[string]json.RawMessage]
	draDrivers    lazy[[]map[string]json.RawMessage]
	draDevices    lazy[[]map[string]json.RawMessage]
	allocPods     lazy[[]map[string]json.RawMessage]
	deviceIDsOpen lazy[byte]
}

// lazy is a value computed once, on first use (a shapeDoc is read by one goroutine).
type lazy[T any] struct {
	done bool
	v    T
}

func (l *lazy[T]) get(compute func() T) T {
	if !l.done {
		l.v, l.done = compute(), true
	}
	return l.v
}

// topValid: the file is valid JSON, so are the values of top.
func (d *shapeDoc) topValid() bool {
	return d.valid.get(func() bool { return json.Valid(d.raw) })
}

// dataDocument is the JSON document embedded as a string under "data" (nil if it is not one),
// for the shapes of formats that differ only inside it. Its values are valid JSON.
func (d *shapeDoc) dataDocument() map[string]json.RawMessage {
	return d.data.get(func() map[string]json.RawMessage { return dataDocument(d.top) })
}

func hasAnyKey(keys ...string) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool {
		for _, k := range keys {
			if _, ok := d.top[k]; ok {
				return true
			}
		}
		return false
	}
}

// valuesAreStrings: the object under key maps to strings (CPU V1's containerID -> cpuset).
func valuesAreStrings(key string) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool {
		v := firstMemberValue(d.top[key])
		return len(v) > 0 && v[0] == '"'
	}
}

// deviceIDsAre: the first entry's DeviceIDs opens with open ('[' for V1 lists, '{' for V2 maps).
func deviceIDsAre(open byte) func(*shapeDoc) bool {
	return func(d *shapeDoc) bool { return d.deviceIDsOpen.get(d.firstDeviceIDsOpen) == open }
}

// firstDeviceIDsOpen is the byte the first entry's DeviceIDs opens with (0: none).
func (d *shapeDoc) firstDeviceIDsOpen() byte {
	for k, v := range rawObject(d.top["data"], d.topValid()) {
		if !strings.EqualFold(k, "PodDeviceEntries") {
			continue
		}
		for _, e := range objectList(v, d.topValid()) {
			for ek, ev := range e {
				if strings.EqualFold(ek, "DeviceIDs") {
					if ev = bytes.TrimSpace(ev); len(ev) > 0 {
						return ev[0]
					}
					return 0
				}
			}
		}
	}
	return 0
}

// detectEra names the layout era of a file: an era whose own marks the JSON carries (a data
// document, pod-level entries, V1 lists); else, among eras sharing one shape (say an empty
// V1/V2/V3 CPU file), the one whose checksum verifies; else the file's fallback era. It returns
// nil when the object is not this checkpoint at all.
func detectEra(kind Kind, in *input, doc *shapeDoc) *era {
	if keys := files[kind].Keys; keys != nil && !hasAnyKey(keys...)(doc) {
		return nil
	}
	candidates := erasOf(kind)
	for _, e := range candidates {
		if e.Shape != nil && e.Shape(doc) {
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
// one).
func dataDocument(top jsonObject) map[string]json.RawMessage {
	var data string
	if json.Unmarshal(top["data"], &data) != nil {
		return nil
	}
	return rawObject([]byte(data), false)
}
