package decode

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// scanObject splits a top-level JSON object into its members without decoding the values (a
// layout decode validates them later); keys are lower-cased. Detection only needs the keys and
// a peek into a value, and the full parse that encoding/json would do here is a third of the
// cost of verifying a large file. It reports false for anything it does not fully understand
// (escaped keys, not an object), and the caller then falls back to encoding/json.
func scanObject(raw []byte) (jsonObject, bool) { return splitMembers(raw, strings.ToLower) }

// splitMembers splits a JSON object into its members, each key through key (nil: as is), the
// values aliasing raw; false for anything but an object with plain keys and only space after it.
func splitMembers(raw []byte, key func(string) string) (map[string]json.RawMessage, bool) {
	s := scanner{b: raw}
	s.space()
	if !s.take('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	s.space()
	if s.take('}') {
		return out, s.rest()
	}
	for {
		s.space()
		k, ok := s.plainString()
		if !ok {
			return nil, false
		}
		s.space()
		if !s.take(':') {
			return nil, false
		}
		s.space()
		start := s.i
		if !s.skipValue() {
			return nil, false
		}
		if key != nil {
			k = key(k)
		}
		out[k] = bytes.TrimRight(raw[start:s.i], " \t\r\n")
		s.space()
		if s.take('}') {
			return out, s.rest()
		}
		if !s.take(',') {
			return nil, false
		}
	}
}

// maxNesting is encoding/json's own limit.
const maxNesting = 10000

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// rest reports whether only white space follows.
func (s *scanner) rest() bool {
	s.space()
	return s.i == len(s.b)
}

// plainString reads a string without escapes, of valid UTF-8.
func (s *scanner) plainString() (string, bool) {
	if !s.take('"') {
		return "", false
	}
	end := bytes.IndexByte(s.b[s.i:], '"')
	// encoding/json decodes escapes and replaces invalid UTF-8: leave both to it.
	if end < 0 || bytes.IndexByte(s.b[s.i:s.i+end], '\\') >= 0 || !utf8.Valid(s.b[s.i:s.i+end]) {
		return "", false
	}
	str := string(s.b[s.i : s.i+end])
	s.i += end + 1
	return str, true
}

// skipValue moves past one value: strings honour escapes, brackets nest.
func (s *scanner) skipValue() bool {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			if s.i >= len(s.b) {
				return false
			}
			s.i++
		case '{', '[':
			// The object around the value is one level of encoding/json's count.
			if depth++; depth >= maxNesting {
				return false // let encoding/json report it, as the kubelet would
			}
			s.i++
		case '}', ']':
			if depth == 0 {
				return true
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return true
			}
			s.i++
		default:
			s.i++
		}
		// Every case above moved s.i on, so s.b[s.i-1] is the byte just passed.
		if depth == 0 && (s.b[s.i-1] == '"' || s.b[s.i-1] == '}' || s.b[s.i-1] == ']') {
			return true
		}
	}
	return depth == 0
}

// firstMemberValue returns the first value of a JSON object (nil if none or not an object).
func firstMemberValue(obj []byte) []byte {
	s := scanner{b: obj}
	s.space()
	if !s.take('{') {
		return nil
	}
	s.space()
	if _, ok := s.plainString(); !ok {
		// An escaped key: decode properly.
		var m map[string]json.RawMessage
		if json.Unmarshal(obj, &m) != nil {
			return nil
		}
		for _, v := range m {
			return v
		}
		return nil
	}
	s.space()
	if !s.take(':') {
		return nil
	}
	s.space()
	start := s.i
	if !s.skipValue() {
		return nil
	}
	return bytes.TrimRight(obj[start:s.i], " \t\r\n")
}

// splitObject splits a valid JSON object into its members as encoding/json decodes it into a
// map[string]json.RawMessage (a repeated key keeps its last value), the values aliasing raw
// instead of copied. It reports false for anything else (not an object, null, an escaped key),
// for the caller to ask encoding/json.
func splitObject(raw []byte) (map[string]json.RawMessage, bool) { return splitMembers(raw, nil) }

// splitArray splits a valid JSON array into its elements (aliasing raw); false for anything
// else.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	s := scanner{b: raw}
	s.space()
	if !s.take('[') {
		return nil, false
	}
	out := []json.RawMessage{}
	s.space()
	if s.take(']') {
		return out, true
	}
	for {
		s.space()
		start := s.i
		if !s.skipValue() {
			return nil, false
		}
		out = append(out, bytes.TrimRight(raw[start:s.i], " \t\r\n"))
		s.space()
		if s.take(']') {
			return out, true
		}
		if !s.take(',') {
			return nil, false
		}
	}
}

// isNull: the raw value is the literal null.
func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// rawObject is json.Unmarshal(raw, &map[string]json.RawMessage), nil on error: the shapes'
// probes look into nested values this way. Valid JSON with plain keys is split without
// encoding/json's copies; anything else is decoded by encoding/json itself. valid says raw
// lies in a document json.Valid accepted already (every value in one is valid), so that
// nested probes do not check it again.
func rawObject(raw []byte, valid bool) map[string]json.RawMessage {
	if valid || json.Valid(raw) {
		if m, ok := splitObject(raw); ok {
			return m
		}
	}
	return unmarshalOrZero[map[string]json.RawMessage](raw)
}

// objectList is json.Unmarshal(raw, &[]map[string]json.RawMessage), nil on error (split as
// rawObject).
func objectList(raw []byte, valid bool) []map[string]json.RawMessage {
	if valid || json.Valid(raw) {
		if elems, ok := splitArray(raw); ok {
			out := make([]map[string]json.RawMessage, 0, len(elems))
			for _, e := range elems {
				m, ok := splitObject(e)
				if !ok && !isNull(e) {
					return unmarshalOrZero[[]map[string]json.RawMessage](raw)
				}
				out = append(out, m)
			}
			return out
		}
	}
	return unmarshalOrZero[[]map[string]json.RawMessage](raw)
}

// objectMap is json.Unmarshal(raw, &map[string]map[string]json.RawMessage), nil on error (split
// as rawObject).
func objectMap(raw []byte, valid bool) map[string]map[string]json.RawMessage {
	if valid || json.Valid(raw) {
		if members, ok := splitObject(raw); ok {
			out := make(map[string]map[string]json.RawMessage, len(members))
			for k, v := range members {
				m, ok := splitObject(v)
				if !ok && !isNull(v) {
					return unmarshalOrZero[map[string]map[string]json.RawMessage](raw)
				}
				out[k] = m
			}
			return out
		}
	}
	return unmarshalOrZero[map[string]map[string]json.RawMessage](raw)
}

// unmarshalOrZero is raw decoded into a T by encoding/json, the zero T on any error: what the
// splitters fall back to.
func unmarshalOrZero[T any](raw []byte) T {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		var zero T
		return zero
	}
	return v
}
