package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"

	json127 "github.com/go-json-experiment/json/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/checksum"
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

// A checksumRule is how one kubelet era computes one stored checksum. Its accessors are typed
// functions bound, by the constructors below, to the Go type the kubelet decodes into.
type checksumRule struct {
	ID        string
	Algorithm algorithm
	Rewrites  []rewrite
	// ZeroOK is the readers that accept a stored 0 without verifying (nil: none).
	ZeroOK *span
	// Legacy marks a retry over the checkpoint rebuilt as an older layout (DRA 1.28-1.30).
	Legacy bool

	stored  func(v any) uint64
	subject func(v any) any    // spew: the value hashed
	zero    func(v any) func() // spew: zero the stored checksum while hashing (nil: not in the text)
	data    func(v any) string // string algorithms: the hashed string
}

// spewOf: fnv32a over the spew text of part(cp); with zeroed, the stored checksum is part of
// that text and is zeroed while hashing, as the kubelet does.
func spewOf[T, H any](id string, sum func(*T) *checksumField, part func(*T) H, zeroed bool, rw ...rewrite) *checksumRule {
	r := &checksumRule{ID: id, Algorithm: algSpewFNV, Rewrites: rw,
		stored:  func(v any) uint64 { return uint64(*sum(v.(*T))) },
		subject: func(v any) any { return part(v.(*T)) },
	}
	if zeroed {
		r.zero = func(v any) func() {
			p := sum(v.(*T))
			saved := *p
			*p = 0
			return func() { *p = saved }
		}
	}
	return r
}

// spewWhole: fnv32a over the spew text of the decoded pointer, its checksum zeroed.
func spewWhole[T any](id string, sum func(*T) *checksumField, rw ...rewrite) *checksumRule {
	return spewOf(id, sum, func(cp *T) *T { return cp }, true, rw...)
}

// dataSum: a checksum over a string field (alg is algStringFNV or algCRC32); envelope returns the
// string and the stored checksum.
func dataSum[T any](id string, alg algorithm, envelope func(*T) (string, uint64)) *checksumRule {
	return &checksumRule{ID: id, Algorithm: alg,
		stored: func(v any) uint64 { _, sum := envelope(v.(*T)); return sum },
		data:   func(v any) string { data, _ := envelope(v.(*T)); return data },
	}
}

// checksumField is the type of the stored checksums hashed through spew.
type checksumField = checksum.Checksum

func (r *checksumRule) legacy() *checksumRule { r.Legacy = true; return r }

// zeroOK returns the rule accepting a stored 0 unverified for the readers in s.
func (r *checksumRule) zeroOK(s span) *checksumRule { r.ZeroOK = &s; return r }

// zeroAccepted reports whether k accepts stored as "0, unverified" under this rule.
func (r *checksumRule) zeroAccepted(stored uint64, k Kubelet) bool {
	return stored == 0 && r.ZeroOK != nil && r.ZeroOK.has(k)
}

// A layout is a Go value a kubelet decodes the file into (a mirror of its checkpoint type).
// layoutOf builds one from typed functions.
type layout struct {
	new func() any
	// payload decodes the embedded data document (nil: none).
	payload func(v any) (any, error)
	// payloadError formats a payload error the way that kubelet words it.
	payloadError string
	// payloadAfterVerify decodes the payload only once the checksum passed (else before).
	payloadAfterVerify bool
	model              func(v, payload any) any
	// hasOwnData reports whether the decoded file carries this layout's own data document
	// (1.37+ then does not fall back to older layouts when it fails).
	hasOwnData func(v any) bool
}

// layoutSpec is a layout of checkpoint type T whose embedded data document (if any) is P.
type layoutSpec[T, P any] struct {
	// New returns a pointer pre-initialised exactly as the kubelet's reader does (an absent key
	// keeps that value, and it is part of the hashed text).
	New func() *T
	// Data returns the embedded data document (nil: the layout has none).
	Data func(*T) string
	// Payload, when set, decodes the document itself (its decoding depends on the envelope:
	// the 1.38 allocation checkpoint's version); its errors are worded as DataError says.
	Payload func(*T) (*P, error)
	// DataError words a failure to decode it (%w is the JSON error).
	DataError string
	// AfterVerify decodes the document only once the checksum passed (DRA, pod allocation).
	AfterVerify bool
	// Model turns the decoded value (and document, nil without one) into the version-neutral model.
	Model func(*T, *P) any
	// OwnData: see layout.hasOwnData.
	OwnData func(*T) bool
}

// noData is the P of layouts without a data document.
type noData struct{}

func layoutOf[T, P any](s layoutSpec[T, P]) *layout {
	l := &layout{
		new:                func() any { return s.New() },
		payloadError:       s.DataError,
		payloadAfterVerify: s.AfterVerify,
		model: func(v, payload any) any {
			p, _ := payload.(*P)
			return s.Model(v.(*T), p)
		},
	}
	if s.Payload != nil {
		l.payload = func(v any) (any, error) { return s.Payload(v.(*T)) }
	} else if s.Data != nil {
		l.payload = func(v any) (any, error) {
			p := new(P)
			return p, unmarshalPayload(s.Data(v.(*T)), p)
		}
	}
	if s.OwnData != nil {
		l.hasOwnData = func(v any) bool { return s.OwnData(v.(*T)) }
	}
	return l
}

// An attempt is one GetCheckpoint call of a reader: decode into Layout, then accept if any rule
// verifies.
type attempt struct {
	Layout *layout
	Rules  []*checksumRule
	// Note is said of every file this attempt accepts.
	Note string
	// Authoritative, when set, stops the fallback if this attempt fails while the file carries
	// the layout's own data document (1.37's "could not load v4 checkpoint: ...").
	Authoritative string
	// Quiet: when every attempt fails, this one's error is not the one reported (the device
	// manager's V1 fallback returns the V2 error).
	Quiet bool
	// Keeps: when a later attempt is accepted, the kubelet copies it into this attempt's object,
	// which keeps what this attempt decoded before its checksum failed (1.36 with
	// PodLevelResourceManagers keeps the pod-level entries of a V3 file this way).
	Keeps bool
	// Names renames mirror types in JSON errors to that release's type names.
	Names map[string]string
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
	// keptFrom is the failed first attempt whose decoded fields the kubelet keeps (attempt.Keeps).
	keptFrom *attemptResult
}

func (a *attempt) run(in *input, k Kubelet) attemptResult {
	res := attemptResult{layout: a.Layout, in: in, note: a.Note}
	var err error
	if res.value, err = in.decodeFor(a.Layout, k); err != nil {
		res.err = renameJSONError(err, a.Names)
		return res
	}
	// 1.37's UnmarshalCheckpoint decodes the data document before the checksum is verified;
	// DRA decodes it only after the whole checkpoint loaded.
	if a.Layout.payload != nil && !a.Layout.payloadAfterVerify {
		if res.err = res.decodePayload(); res.err != nil {
			return res
		}
	}
	if res.err = res.verify(a.Rules, k); res.err != nil {
		return res
	}
	if a.Layout.payload != nil && a.Layout.payloadAfterVerify {
		res.err = res.decodePayload()
	}
	return res
}

func (r *attemptResult) decodePayload() error {
	p, err := r.layout.payload(r.value)
	if err != nil {
		return &payloadError{fmt.Errorf(r.layout.payloadError, err)}
	}
	r.payload = p
	return nil
}

// verify accepts the decoded value if any rule's checksum matches (or a 0 it lets through). A
// layout without checksums (dra_health_state) is accepted once decoded.
func (r *attemptResult) verify(rules []*checksumRule, k Kubelet) error {
	if len(rules) == 0 {
		return nil
	}
	for _, rule := range rules {
		stored := rule.stored(r.value)
		if rule.zeroAccepted(stored, k) {
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
		return fnv32a(stringPrefix, []byte(r.data(v)))
	case algCRC32:
		return crc32IEEE([]byte(r.data(v)))
	}
	h := fnv.New32a()
	r.writeText(h, v)
	return uint64(h.Sum32())
}

// text returns the exact text the kubelet feeds to the hash.
func (r *checksumRule) text(v any) string {
	switch r.Algorithm {
	case algStringFNV:
		return string(stringPrefix) + r.data(v)
	case algCRC32:
		return r.data(v)
	}
	var buf bytes.Buffer
	r.writeText(&buf, v)
	return buf.String()
}

// writeText prints the spew text with the stored checksum zeroed, as the kubelet does
// (zero the field, hash, restore it).
func (r *checksumRule) writeText(w io.Writer, v any) {
	if r.zero != nil {
		defer r.zero(v)()
	}
	spewInto(w, r.subject(v), r.Rewrites)
}

// renameJSONError gives encoding/json's "Go struct field X.f" the name that struct had in the
// judged kubelet release (the mirrors use one name per layout).
func renameJSONError(err error, names map[string]string) error {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && names[ute.Struct] != "" {
		renamed := *ute
		renamed.Struct = names[ute.Struct]
		return &renamed
	}
	// No kubelet built with Go 1.27 (builtWithGo127) reads a layout under another type name.
	return err
}

// input is one file being judged. Detection, every reader attempt and the checksum report look
// at the same layouts, so each layout is decoded, and each checksum computed, at most once.
type input struct {
	raw       []byte
	decoded   map[*layout]decodedLayout
	checksums map[ruleOnLayout]uint64
	// errors127: decode's errors in the words of a kubelet built with Go 1.27 (builtWithGo127).
	errors127 map[*layout]error
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
		d.v = l.new()
		d.err = json.Unmarshal(in.raw, d.v)
		in.decoded[l] = d
	}
	return d.v, d.err
}

// decodeFor is decode by kubelet k's encoding/json. A kubelet built with Go 1.27
// (builtWithGo127) decodes the same values and fails on the same files (FuzzDecode*'s
// json127Agrees), in other words: only a failure is decoded again, for its words.
func (in *input) decodeFor(l *layout, k Kubelet) (any, error) {
	v, err := in.decode(l)
	if err == nil || !builtWithGo127.has(k) {
		return v, err
	}
	err127, ok := in.errors127[l]
	if !ok {
		if in.errors127 == nil {
			in.errors127 = map[*layout]error{}
		}
		err127 = json127.Unmarshal(in.raw, l.new())
		in.errors127[l] = err127
	}
	return v, err127
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
	model := r.layout.model(r.value, r.payload)
	if r.keptFrom != nil {
		fillZeroFields(model, r.keptFrom.layout.model(r.keptFrom.value, r.keptFrom.payload))
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
	// Only 1.36's reads keep a failed attempt's fields (attempt.Keeps): Go 1.26's errors.
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// reencode decodes into the newest type T what an older layout kept of a data document: the
// older document is a subset of T's, so nothing is lost, and what the older layout dropped stays
// absent. Both are plain JSON types the file itself decoded into, so neither step can fail.
func reencode[T any](v any) *T {
	if same, ok := v.(*T); ok {
		return same // the newest layout's own document: nothing to convert
	}
	out := new(T)
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		panic(fmt.Sprintf("re-encoding %T as %T: %v", v, out, err))
	}
	return out
}

// mapSlice converts each element (nil for none, as an append loop leaves it).
func mapSlice[E, R any](in []E, f func(E) R) []R {
	var out []R
	for _, e := range in {
		out = append(out, f(e))
	}
	return out
}
