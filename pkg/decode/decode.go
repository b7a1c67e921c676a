// Package decode recognises the kubelet's checkpoint files, verifies their checksums with the
// exact rule of the kubelet era that wrote them, predicts what any kubelet version would make of
// them, and decodes them into version-neutral models. It is a pure library: bytes in, report out;
// it knows nothing of clusters, files on disk or flags.
package decode

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// MaxFileSize caps what Decode reads: real checkpoints are kilobytes, a hostile one must not
// make the plugin eat memory.
const MaxFileSize = 64 << 20

// DefaultRootDir is the kubelet's default --root-dir, used in the kubelet's error texts.
const DefaultRootDir = "/var/lib/kubelet"

// Options tune Decode.
type Options struct {
	// Kubelet, when set, is the reader to judge for ("would this kubelet accept the file?").
	// Unset, each file is judged by the last kubelet release that writes its format.
	Kubelet *Kubelet
	// RootDir is the kubelet root dir shown in error texts (default /var/lib/kubelet).
	RootDir string
}

// A Parsed is one checkpoint file read once: its format is detected on the first ask, and
// Format and Decode share the JSON parse, the layouts decoded and the checksums computed, so a
// node's files are parsed once although the release that judges them is chosen from their
// formats first.
type Parsed struct {
	kind     Kind
	raw      []byte
	in       *input
	doc      *shapeDoc
	perr     error
	era      *era
	detected bool
}

// Parse reads one checkpoint file of the given kind; nothing is decoded until asked.
func Parse(kind Kind, raw []byte) *Parsed {
	return &Parsed{kind: kind, raw: raw}
}

// Kind is the kind the file was parsed as.
func (p *Parsed) Kind() Kind { return p.kind }

// detect parses the JSON and names the layout era, once.
func (p *Parsed) detect() *era {
	if !p.detected {
		p.detected = true
		p.in = newInput(p.raw)
		var top jsonObject
		if top, p.perr = parseObject(p.raw); p.perr == nil {
			p.doc = &shapeDoc{top: top, raw: p.raw}
			p.era = detectEra(p.kind, p.in, p.doc)
		}
	}
	return p.era
}

// Format is the format Decode reports for the file ("" when none is known): what
// ChooseWritingRelease needs, without judging the file for any kubelet.
func (p *Parsed) Format() string {
	if _, known := ParseKind(string(p.kind)); !known || len(p.raw) > MaxFileSize {
		return ""
	}
	if files[p.kind].Unchecked {
		return erasOf(p.kind)[0].ID
	}
	if e := p.detect(); e != nil {
		return e.ID
	}
	return ""
}

// Decode judges one checkpoint file of the given kind.
func Decode(kind Kind, raw []byte, opts Options) *Report {
	return Parse(kind, raw).Decode(opts)
}

// Decode judges the file.
func (p *Parsed) Decode(opts Options) *Report {
	kind, raw := p.kind, p.raw
	rep := &Report{File: PathOf(kind), Kind: kind}
	if opts.RootDir == "" {
		opts.RootDir = DefaultRootDir
	}
	if len(raw) > MaxFileSize {
		rep.Verdict = Unreadable
		rep.Error = fmt.Sprintf("file is %d bytes, over the %d MiB cap; not decoded", len(raw), MaxFileSize>>20)
		return rep
	}
	if _, ok := ParseKind(string(kind)); !ok {
		rep.Verdict = UnknownFormat
		rep.Error = fmt.Sprintf("%q is not a checkpoint file nodestate knows", kind)
		return rep
	}
	if files[kind].Unchecked {
		return decodeUnchecked(rep, raw, opts)
	}
	return p.decodeChecksummed(rep, opts)
}

// decodeUnchecked judges a file without a checksum (dra_health_state): the reader decodes it into
// its own layout, nothing else, so the verdicts are valid or unreadable.
func decodeUnchecked(rep *Report, raw []byte, opts Options) *Report {
	newest := erasOf(rep.Kind)[0]
	reader := opts.Kubelet
	if reader == nil {
		reader = index.home[newest]
	}
	rep.Format, rep.Reader = newest.ID, reader.String()
	rep.Notes = append(rep.Notes, string(rep.Kind)+" carries no checksum: only its JSON is checked")
	attempts := attemptsOf(index, rep.Kind, *reader)
	if len(attempts) == 0 {
		rep.Verdict, rep.Error = NotRead, notReadError
		return rep
	}
	res := attempts[0].run(newInput(raw), *reader)
	if res.err != nil {
		rep.Verdict, rep.Error, rep.Cause = Unreadable, res.err.Error(), res.err.Error()
		rep.Refused = refusedOf(rep.Kind, *reader)
		return rep
	}
	rep.Verdict, rep.Decoded = Valid, modelOf(res.layoutModel())
	return rep
}

func (p *Parsed) decodeChecksummed(rep *Report, opts Options) *Report {
	f, in, perr := p.detect(), p.in, p.perr
	reader := opts.Kubelet
	switch {
	case f != nil:
		rep.Format = f.ID
		rep.WrittenBy, rep.ReadBy = WrittenBy(rep.Kind, f.ID), ReadBy(rep.Kind, f.ID)
		if reader == nil {
			reader = index.home[f]
		}
	case reader == nil:
		rep.Verdict, rep.Error = Unreadable, "not JSON: "+errText(perr)
		if perr == nil || isTypeError(perr) {
			rep.Verdict, rep.Error = UnknownFormat, "JSON, but not a "+string(rep.Kind)+" checkpoint of any known kubelet version"
		}
		return rep
	}
	rep.Reader = reader.String()

	out := simulate(rep.Kind, in, *reader, opts.RootDir)
	rep.Verdict, rep.Error, rep.Cause = out.verdict, out.err, out.cause
	if out.verdict == Corrupt || out.verdict == Unreadable {
		rep.Refused = refusedOf(rep.Kind, *reader)
		if out.refusal != nil {
			rep.Refused = out.refusal
		}
	}
	if out.verdict == Valid {
		rep.Rule = out.result.rule.ID
		if out.result.zeroAccepted {
			rep.Rule += " (stored checksum 0, accepted unverified)"
		}
		rep.Decoded = modelOf(out.model)
		// Only when that layout really loses something: newer kubelets read older files through
		// newer layouts that keep everything (DRA, pod allocation files).
		if f != nil && out.result.layout != f.Layout && !keeps(out.result.layout, f.Layout) && !reflect.DeepEqual(rep.Decoded.Any(), bestEffortModel(f, in)) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("kubelet %s reads this %s file through an older layout (%s): fields that layout lacks are dropped", reader, f.ID, out.result.rule.ID))
		}
		if out.result.note != "" {
			rep.Notes = append(rep.Notes, out.result.note)
		}
		if len(out.dropped) > 0 {
			rep.Dropped = out.dropped
			rep.Notes = append(rep.Notes, droppedNote(*reader, out.dropped, len(out.model.(*DeviceState).PodDeviceEntries)))
		}
	}
	if f != nil {
		rep.Checksums = checksumResults(f, in, *reader)
		if rep.Decoded.IsZero() {
			rep.Decoded = modelOf(bestEffortModel(f, in))
		}
		if out.restoreFailed {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the file is intact (its checksums match), but kubelet %s's restore refuses its content", reader))
		} else if (rep.Verdict == Corrupt || rep.Verdict == Unreadable) && allMatch(rep.Checksums) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the file is intact (its %s checksum matches): kubelet %s refuses it because it reads the %s format differently", f.ID, reader, f.ID))
		}
		mismatch := false
		for _, c := range rep.Checksums {
			if !c.Match && !c.ZeroAccepted && len(rep.Checksums) > 1 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s does not match: %s would reject this file", c.Field, c.Readers))
				mismatch = true
			}
		}
		if mismatch && rep.Verdict == Valid {
			rep.Breaks = breaksOf(rep.Kind, in, *reader, opts.RootDir)
		}
	}
	return rep
}

// checksumResults recomputes every checksum the era carries.
func checksumResults(f *era, in *input, reader Kubelet) []ChecksumResult {
	v, err := in.decode(f.Layout)
	if err != nil {
		return nil
	}
	out := make([]ChecksumResult, 0, len(f.Sums))
	for i, c := range f.Sums {
		stored, computed := c.Rule.stored(v), in.checksum(f.Layout, c.Rule)
		out = append(out, ChecksumResult{
			Field: c.Field, Rule: c.Rule.ID, Algorithm: string(c.Rule.Algorithm),
			Stored: stored, Computed: computed, Match: stored == computed,
			ZeroAccepted: stored != computed && c.Rule.zeroAccepted(stored, reader),
			Readers:      index.prose[f][i],
		})
	}
	return out
}

// bestEffortModel decodes a file that was not accepted, so an operator can still see what it
// says (render marks it as not valid).
func bestEffortModel(f *era, in *input) any {
	v, err := in.decode(f.Layout)
	if err != nil {
		return nil
	}
	var payload any
	if f.Layout.payload != nil {
		p, err := f.Layout.payload(v)
		if err != nil {
			return nil
		}
		payload = p
	}
	return f.Layout.model(v, payload)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func isTypeError(err error) bool {
	_, ok := err.(*json.UnmarshalTypeError)
	return ok
}

func allMatch(cs []ChecksumResult) bool {
	for _, c := range cs {
		if !c.Match {
			return false
		}
	}
	return len(cs) > 0
}

// breaksOf replays the other releases' restore paths (gates at their defaults) on a file reader
// accepts, for the nearest ones on either side that refuse it as corrupted: a checksum they
// check does not match (a release that cannot parse the layout at all is another story).
func breaksOf(kind Kind, in *input, reader Kubelet, rootDir string) *Breaks {
	b := &Breaks{}
	for _, v := range releases {
		k := Kubelet{Version: v, Gates: map[string]bool{}}
		if v.Major() == reader.Version.Major() && v.Minor() == reader.Version.Minor() {
			continue
		}
		out := simulate(kind, in, k, rootDir)
		if out.verdict != Corrupt {
			continue
		}
		if v.LessThan(reader.Version) {
			b.Older = minorOf(k)
		} else if b.Newer == "" {
			b.Newer = minorOf(k)
		}
	}
	if *b == (Breaks{}) {
		return nil
	}
	return b
}
