package decode

import (
	"bytes"
	"encoding/json"
	"strings"
)

// scanObject splits a top-level JSON object into its members without decoding the values (a
// layout decode validates them later); keys are lower-cased. Detection only needs the keys and
// a peek into a value, and the full parse that encoding/json would do here is a third of the
// cost of verifying a large file. It reports false for anything it does not fully understand
// (escaped keys, not an object), and the caller then falls back to encoding/json.
func scanObject(raw []byte) (jsonObject, bool) {
	s := scanner{b: raw}
	s.space()
	if !s.take('{') {
		return nil, false
	}
	out := jsonObject{}
	s.space()
	if s.take('}') {
		return out, s.rest()
	}
	for {
		s.space()
		key, ok := s.plainString()
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
		out[strings.ToLower(key)] = bytes.TrimRight(raw[start:s.i], " \t\r\n")
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

// plainString reads a string without escapes.
func (s *scanner) plainString() (string, bool) {
	if !s.take('"') {
		return "", false
	}
	end := bytes.IndexByte(s.b[s.i:], '"')
	if end < 0 || bytes.IndexByte(s.b[s.i:s.i+end], '\\') >= 0 {
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
