package decode

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// scanObject must agree with encoding/json on every object it accepts.
func TestScanObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { "a" : 1 , "B":"x\"}y" ,"c":[1,{"d":"]"}],"e":{"f":null}} `,
		`{"policyName":"static","entries":{"u":{"c":"1-2"}},"checksum":12}`,
		`{"a":true,"b":false,"c":null,"d":-1.5e3}`,
		`{"":1,"b":{"":"x"}}`, // an empty key is a plain string too
	} {
		got, ok := scanObject([]byte(in))
		if !ok {
			t.Fatalf("%s: not scanned", in)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, want %d", in, len(got), len(want))
		}
		for k, v := range want {
			if string(got[strings.ToLower(k)]) != string(v) {
				t.Errorf("%s: member %s = %s, want %s", in, k, got[strings.ToLower(k)], v)
			}
		}
	}
	for _, in := range []string{`[]`, `"x"`, `{"a":1} x`, `{"a\u0062":1}`, `{"\u0062":1}`, `{"a":"unterminated}`, `{`,
		`{"a":"x" "b":1}`, `{"a":{} "b":1}`, `{"a":[] "b":1}`} {
		if _, ok := scanObject([]byte(in)); ok {
			t.Errorf("%s: scanned, want fallback", in)
		}
	}
}

// encoding/json refuses a document nested deeper than 10000 levels, the object itself being
// one: the scanner falls back (so that encoding/json reports it) exactly where it refuses.
func TestScanObjectNestingLimit(t *testing.T) {
	for _, depth := range []int{maxNesting - 1, maxNesting} {
		in := []byte(`{"a":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
		_, scanned := scanObject(in)
		var m map[string]json.RawMessage
		valid := json.Unmarshal(in, &m) == nil
		if scanned != valid {
			t.Errorf("value nested %d deep: scanned %v, encoding/json accepts %v", depth, scanned, valid)
		}
	}
}

// firstMemberValue is the value of the first member as written, whatever the key.
func TestFirstMemberValue(t *testing.T) {
	for in, want := range map[string]string{
		`{"c1":"0-3","c2":"4"}`: `"0-3"`,
		`{"":{"x":1} ,"b":2}`:   `{"x":1}`,
		` { "k" : [1,"]"] } `:   `[1,"]"]`,
		`{"\u0063":"1"}`:        `"1"`, // an escaped key: encoding/json decodes it
		`{}`:                    ``,
		`["c1"]`:                ``,
	} {
		if got := string(firstMemberValue([]byte(in))); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func FuzzScanObject(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,"]"]},"c":"\\\"","d": 2 }`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := scanObject(raw)
		var want map[string]json.RawMessage
		if !ok || json.Unmarshal(raw, &want) != nil {
			return // not scanned (encoding/json takes over) or not JSON (the layout decode says so)
		}
		folded := map[string]json.RawMessage{}
		for k, v := range want {
			if _, dup := folded[strings.ToLower(k)]; dup {
				return // keys differing only in case: both parsers keep one, not necessarily the same
			}
			folded[strings.ToLower(k)] = v
		}
		if len(folded) != len(got) {
			t.Fatalf("%d members, want %d", len(got), len(folded))
		}
		for k, v := range folded {
			if string(got[k]) != string(v) {
				t.Fatalf("member %s: %q, want %q", k, got[k], v)
			}
		}
	})
}

// The probes' splitters are encoding/json's map and slice decodes, value for value, on any input.
func FuzzSplitAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":{"b":[1,"]"]},"c":"\\\"","d": 2 }`, `[{"x":1},null,{"y":[2]}]`, `{"k":{"x":1},"n":null}`,
		`[{"a":1},2]`, `{"k":3}`, `null`, `[]`, `{}`, `{"a":1,"a":2}`, `[{"\u0061":1}]`, ` [ { "a" : "}" } ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var wantObject map[string]json.RawMessage
		if json.Unmarshal(raw, &wantObject) != nil {
			wantObject = nil
		}
		// valid=true only where the caller knows it (inside a document json.Valid accepted).
		for _, valid := range []bool{false, json.Valid(raw)} {
			if got := rawObject(raw, valid); !reflect.DeepEqual(got, wantObject) {
				t.Fatalf("rawObject(valid=%v): %q, want %q", valid, got, wantObject)
			}
			if got, want := objectList(raw, valid), unmarshalOrZero[[]map[string]json.RawMessage](raw); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0 && (got == nil) == (want == nil)) {
				t.Fatalf("objectList(valid=%v): %q, want %q", valid, got, want)
			}
			if got, want := objectMap(raw, valid), unmarshalOrZero[map[string]map[string]json.RawMessage](raw); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0 && (got == nil) == (want == nil)) {
				t.Fatalf("objectMap(valid=%v): %q, want %q", valid, got, want)
			}
		}
	})
}
