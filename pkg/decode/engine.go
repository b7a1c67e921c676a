package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
)

// algorithm is how a checksum is computed from the decoded value.
type algorithm string

const (
	// algSpewFNV: fnv32a over the spew "%#v" text of the decoded Go value (checksum.New).
	algSpewFNV algorithm = "fnv32a(spew)"
	// algStringFNV: fnv32a over spew of a string field, i.e. "(string)"+data.
	algStringFNV algorithm = "fnv32a((string)+data)"
	// algCRC32: CRC-32 (IEEE) of a string field's bytes (DRA 1.31+).
	algCRC32 algorithm = "crc32-ieee(data)"
)

// A checksumRule is how one kubelet era computes one stored checksum: which Go value it decodes
// into, which field it hashes, which field it zeroes first, which type names it rewrites.
type checksumRule struct {
	ID        string
	Algorithm algorithm
	// Field is the Go field of the layout holding the stored checksum.
	Field string
	// Hashed is the Go field hashed; empty hashes the whole decoded pointer.
	Hashed string
	// HashedPointer hashes a pointer to the Hashed field (an embedded older layout).
	HashedPointer bool
	// Zeroed is the Go field set to zero while hashing (the stored checksum itself).
	Zeroed string
	// Convert, when set, hashes the value it derives from the decoded one instead (1.28-1.30
	// re-hash a DRA checkpoint rebuilt as the 1.27 layout, without its resource handles).
	Convert  func(v any) any
	Rewrites []rewrite
	// ZeroOK lists the readers that accept a stored 0 without verifying (nil: none).
	ZeroOK *versionRange
}

// A layout is a Go value a kubelet decodes the file into (a mirror of its checkpoint type).
type layout struct {
	// New returns a pointer pre-initialised exactly as the kubelet's reader does (an absent key
	// keeps that value, and it is part of the hashed text).
	New func() any
	// Payload decodes the embedded data document once the checksum passed (nil: none).
	Payload func(v any) (any, error)
	// PayloadError formats a payload error the way that kubelet words it.
	PayloadError string
	// PayloadAfterVerify decodes the payload only once the checksum passed (else before).
	PayloadAfterVerify bool
	// Model turns the decoded value (and payload) into the version-neutral model.
	Model func(v, payload any) any
}

// An attempt is one GetCheckpoint call of a reader: decode into Layout, then accept if any rule
// verifies.
type attempt struct {
	Layout *layout
	Rules  []*checksumRule
	// Note is said of every file this attempt accepts.
	Note string
	// Authoritative, when set, stops the fallback if this attempt fails while the file carries
	// the attempt's own fields (1.37's "could not load v4 checkpoint: ...").
	Authoritative *authority
}

type authority struct {
	Prefix  string
	Applies func(v any) bool
}

var errCorrupted = errors.New("checkpoint is corrupted")

// attemptResult is what one attempt made of the file.
type attemptResult struct {
	layout         *layout
	value, payload any
	rule           *checksumRule
	zeroAccepted   bool
	note           string
	err            error
	in             *input
	// keptFrom is the failed first attempt whose decoded fields the kubelet keeps (see
	// readerRow.MigratesIntoFirst).
	keptFrom *attemptResult
}

func (a *attempt) run(in *input, k Kubelet, names map[string]string) attemptResult {
	res := attemptResult{layout: a.Layout, in: in, note: a.Note}
	var err error
	if res.value, err = in.decode(a.Layout); err != nil {
		res.err = renameJSONError(err, names)
		return res
	}
	// 1.37's UnmarshalCheckpoint decodes the data document before the checksum is verified;
	// DRA decodes it only after the whole checkpoint loaded.
	if a.Layout.Payload != nil && !a.Layout.PayloadAfterVerify {
		if res.err = res.decodePayload(); res.err != nil {
			return res
		}
	}
	if res.err = res.verify(a.Rules, k); res.err != nil {
		return res
	}
	if a.Layout.Payload != nil && a.Layout.PayloadAfterVerify {
		res.err = res.decodePayload()
	}
	return res
}

func (r *attemptResult) decodePayload() error {
	p, err := r.layout.Payload(r.value)
	if err != nil {
		return &payloadError{fmt.Errorf(r.layout.PayloadError, err)}
	}
	r.payload = p
	return nil
}

// verify accepts the decoded value if any rule's checksum matches (or a 0 it lets through).
func (r *attemptResult) verify(rules []*checksumRule, k Kubelet) error {
	for _, rule := range rules {
		stored := fieldUint(r.value, rule.Field)
		if stored == 0 && rule.ZeroOK != nil && rule.ZeroOK.contains(k.Version) {
			r.rule, r.zeroAccepted = rule, true
			return nil
		}
		if r.in.checksum(r.layout, rule) == stored {
			r.rule = rule
			return nil
		}
	}
	return errCorrupted
}

// compute recomputes the checksum of the decoded value v.
func (r *checksumRule) compute(v any) uint64 {
	switch r.Algorithm {
	case algStringFNV:
		return fnv32a(stringPrefix, []byte(fieldString(v, r.Hashed)))
	case algCRC32:
		return crc32IEEE([]byte(fieldString(v, r.Hashed)))
	}
	h := fnv.New32a()
	r.writeText(h, v)
	return uint64(h.Sum32())
}

// text returns the exact text the kubelet feeds to the hash.
func (r *checksumRule) text(v any) string {
	switch r.Algorithm {
	case algStringFNV:
		return string(stringPrefix) + fieldString(v, r.Hashed)
	case algCRC32:
		return fieldString(v, r.Hashed)
	}
	var buf bytes.Buffer
	r.writeText(&buf, v)
	return buf.String()
}

// writeText prints the spew text with the stored checksum zeroed, as the kubelet does
// (zero the field, hash, restore it).
func (r *checksumRule) writeText(w io.Writer, v any) {
	if r.Zeroed != "" {
		f := reflect.ValueOf(v).Elem().FieldByName(r.Zeroed)
		saved := f.Uint()
		f.SetUint(0)
		defer f.SetUint(saved)
	}
	target := v
	if r.Convert != nil {
		target = r.Convert(v)
	} else if r.Hashed != "" {
		f := reflect.ValueOf(v).Elem().FieldByName(r.Hashed)
		if r.HashedPointer {
			f = f.Addr()
		}
		target = f.Interface()
	}
	spewInto(w, target, r.Rewrites)
}

// fieldUint reads an unsigned field (a checksum) of the struct v points to, by Go field name.
func fieldUint(v any, name string) uint64 {
	return reflect.ValueOf(v).Elem().FieldByName(name).Uint()
}

func fieldString(v any, name string) string {
	return reflect.ValueOf(v).Elem().FieldByName(name).String()
}

// renameJSONError gives encoding/json's "Go struct field X.f" the name that struct had in the
// judged kubelet release (the mirrors use one name per layout).
func renameJSONError(err error, names map[string]string) error {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		if to, ok := names[ute.Struct]; ok {
			renamed := *ute
			renamed.Struct = to
			return &renamed
		}
	}
	return err
}

// input is one file being judged. Detection, every reader attempt and the checksum report look
// at the same layouts, so each layout is decoded, and each checksum computed, at most once.
type input struct {
	raw       []byte
	decoded   map[*layout]decodedLayout
	checksums map[ruleOnLayout]uint64
}

type decodedLayout struct {
	v   any
	err error
}

type ruleOnLayout struct {
	l *layout
	r *checksumRule
}

func newInput(raw []byte) *input {
	return &input{raw: raw, decoded: map[*layout]decodedLayout{}, checksums: map[ruleOnLayout]uint64{}}
}

// decode returns the file decoded into l, as the kubelet's reader would decode it.
func (in *input) decode(l *layout) (any, error) {
	d, ok := in.decoded[l]
	if !ok {
		d.v = l.New()
		d.err = json.Unmarshal(in.raw, d.v)
		in.decoded[l] = d
	}
	return d.v, d.err
}

// checksum recomputes rule over the file decoded into l.
func (in *input) checksum(l *layout, r *checksumRule) uint64 {
	key := ruleOnLayout{l, r}
	sum, ok := in.checksums[key]
	if !ok {
		v, _ := in.decode(l)
		sum = r.compute(v)
		in.checksums[key] = sum
	}
	return sum
}

func (r attemptResult) layoutModel() any {
	model := r.layout.Model(r.value, r.payload)
	if r.keptFrom != nil {
		fillZeroFields(model, r.keptFrom.layout.Model(r.keptFrom.value, r.keptFrom.payload))
	}
	return model
}

// fillZeroFields copies into dst (a pointer to a model struct) the fields it lacks from src.
func fillZeroFields(dst, src any) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := 0; i < d.NumField(); i++ {
		if d.Field(i).IsZero() {
			d.Field(i).Set(s.Field(i))
		}
	}
}

func isJSONError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}
