package gen

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
)

// The AllocResp corpus: responses that pin every boundary of the unmarshal rules, for the
// oracle of ../allocresp (each era's real Unmarshal on each input, no device manager around it).
// Systematic rather than random: seeds, and around each seed every prefix, every single-byte
// substitution by edge values, lengths at the remaining bytes and at int overflow, varints of
// 9-11 bytes, field numbers at the protobuf and int32 limits, fields inserted at every position,
// and groups nested near google.golang.org/protobuf's recursion limit.

// AllocRespSeeds are the cases of pkg/decode's TestAllocRespRules, byte for byte, after a
// compact response with every field of ContainerAllocateResponse (short strings), which stands
// for the long ones in the byte-by-byte mutations, and one with unknown fields everywhere.
func AllocRespSeeds() [][]byte {
	testGood := cat(envEntry("NVIDIA_VISIBLE_DEVICES", "GPU-0"), mount("/usr/local/nvidia", "/opt/nvidia", true),
		deviceSpec("/dev/nvidia0", "/dev/nvidia0", "rw"), annotation("example.com/gpu", "0"))
	over64 := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	eleven := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	return [][]byte{
		cat(envEntry("K", "V"), mount("/c", "/h", true), deviceSpec("/c", "/h", "rw"), annotation("a", "b"), cdiDevice("x")),
		// Unknown fields in every message and map entry, where the skips' bounds are checked.
		cat(str(9, "u"), bytesField(1, cat(str(1, "k"), str(3, "x"), str(2, "v"))), bytesField(2, cat(str(4, "x"), str(1, "/c"))),
			bytesField(5, str(2, "y")), bytesField(4, cat(tag(3, 0), []byte{1}, str(1, "a")))),
		testGood, nil, testGood[:30],
		cat(tag(1, 0), []byte{7}),
		bytesField(2, str(3, "x")),
		cat(tag(5, 0), []byte{1}),
		bytesField(5, []byte{0x0a, 0x05, 'a'}),
		bytesField(2, str(2, "/mnt/\xff")),
		bytesField(1, cat(str(1, "K"), str(2, "caf\xe9"))),
		bytesField(1, cat(tag(1, 0), []byte{0}, str(2, "v"))),
		bytesField(1, cat(str(1, "A"), tag(3, 4), str(2, "B"))),
		cat(testGood, tag(9, 4)),
		cat(tag(0, 0), []byte{1}),
		cat(tag(1<<29, 0), []byte{1}),
		cat(tag(1<<31, 0), []byte{1}),
		bytesField(2, cat(tag(3, 0), over64)),
		bytesField(2, cat(tag(3, 0), eleven)),
		cat(tag(9, 3), tag(1, 0), []byte{5}, tag(9, 4)),
		cat(tag(9, 3), tag(1, 0), []byte{5}, tag(8, 4)),
		cat(tag(9, 3), tag(1, 0), []byte{5}),
		tag(9, 6),
		cat(tag(2, 2), varint(1<<63)),
		cat(tag(1, 2), []byte{2}, tag(1, 2), []byte{2}, tag(9, 2), []byte{0}),
	}
}

// substitutes are the values put at every position of a seed: tags of fields 0 and 1 of every
// wire type, the known fields' bytes tags, and the varint edges.
var substitutes = []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
	0x12, 0x1a, 0x22, 0x2a, 0x4b, 0x4c, 0x7f, 0x80, 0x81, 0xff}

// shortSeed is the longest seed mutated byte by byte (longer ones get the structural mutations).
const shortSeed = 64

// AllocRespCorpus is the corpus: the seeds and real responses (as the kubelet's writers wrote
// them) with their mutations, the device vectors' corpus, every one- and two-byte input with a
// tag first, and deep groups. Inputs appear once, in the order made.
func AllocRespCorpus(real [][]byte) [][]byte {
	var c corpus
	for _, s := range append(AllocRespSeeds(), real...) {
		c.add(s)
		for k := 0; k < len(s); k++ {
			c.add(s[:k])
		}
		if len(s) <= shortSeed {
			for i := range s {
				for _, v := range substitutes {
					m := bytes.Clone(s)
					m[i] = v
					c.add(m)
				}
			}
		}
		if fields, ok := parseFields(s); ok {
			c.structural(s, fields)
		}
	}
	for _, e := range Corpus().Entries {
		c.add(e.AllocResp)
	}
	for b0 := 0; b0 < 256; b0++ {
		c.add([]byte{byte(b0)})
	}
	for _, b0 := range append(seq(0x00, 0x2f), seq(0x48, 0x4f)...) {
		for b1 := 0; b1 < 256; b1++ {
			c.add([]byte{b0, byte(b1)})
		}
	}
	// Unknown groups nested n deep, at the top and in an env entry: protowire's recursion limit
	// (10000) refuses 10002; gogo has no limit (1.2 recurses, 1.3 counts).
	for _, n := range []int{10001, 10002} {
		g := cat(bytes.Repeat(tag(9, 3), n), bytes.Repeat(tag(9, 4), n))
		c.add(g)
		c.add(bytesField(1, cat(str(1, "k"), g)))
	}
	return c.inputs
}

func seq(from, to byte) []byte {
	var s []byte
	for b := int(from); b <= int(to); b++ {
		s = append(s, byte(b))
	}
	return s
}

type corpus struct {
	inputs [][]byte
	seen   map[string]bool
}

func (c *corpus) add(b []byte) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[string(b)] {
		c.seen[string(b)] = true
		c.inputs = append(c.inputs, bytes.Clone(b))
	}
}

// wireField is one field of a seed as written, so that a mutation can change its tag or length
// and write the rest again, the enclosing lengths recomputed.
type wireField struct {
	tag     []byte // the tag varint as written
	wt      byte
	size    []byte       // wire type 2: the length varint (nil: the content's length, minimal)
	value   []byte       // the value, or wire type 2's content when kids is nil
	kids    []*wireField // wire type 2 whose content parses as fields of the schema's messages
	start   int          // offsets in the seed: the tag, the content (wire type 2), the end
	content int
	end     int
}

// readVarint reads a varint of at most ten bytes: its value and length (0: none).
func readVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// parseFields splits b at base into fields; ok is false unless it parses to its end. A bytes
// field's content is split too when it parses as fields numbered 1-5 of wire types 0 and 2
// (a message or a map entry of the schema), else kept whole.
func parseFields(b []byte) ([]*wireField, bool) { return parseAt(b, 0, len(b)) }

func parseAt(b []byte, from, to int) ([]*wireField, bool) {
	var fields []*wireField
	for i := from; i < to; {
		t, n := readVarint(b[i:to])
		if n == 0 || t>>3 == 0 {
			return nil, false
		}
		f := &wireField{tag: b[i : i+n], wt: byte(t & 7), start: i}
		i += n
		switch f.wt {
		case 0:
			_, n = readVarint(b[i:to])
			if n == 0 {
				return nil, false
			}
		case 1:
			n = 8
		case 5:
			n = 4
		case 3, 4:
			n = 0
		case 2:
			l, m := readVarint(b[i:to])
			if m == 0 || l > uint64(to-i-m) {
				return nil, false
			}
			f.size = b[i : i+m]
			i += m
			n = int(l)
			f.content = i
			if kids, ok := parseAt(b, i, i+n); ok && schemaLike(kids) {
				f.kids = kids
			}
		default:
			return nil, false
		}
		if i+n > to {
			return nil, false
		}
		f.value = b[i : i+n]
		i += n
		f.end = i
		fields = append(fields, f)
	}
	return fields, true
}

func schemaLike(fields []*wireField) bool {
	for _, f := range fields {
		if t, _ := readVarint(f.tag); t>>3 > 5 || (f.wt != 0 && f.wt != 2) {
			return false
		}
	}
	return len(fields) > 0
}

// encodeFields writes fields; a wire type 2 field whose size is nil gets its content's length.
func encodeFields(fields []*wireField) []byte {
	var out []byte
	for _, f := range fields {
		out = append(out, f.tag...)
		value := f.value
		if f.kids != nil {
			value = encodeFields(f.kids)
		}
		if f.wt == 2 {
			if f.size != nil {
				out = append(out, f.size...)
			} else {
				out = binary.AppendUvarint(out, uint64(len(value)))
			}
		}
		out = append(out, value...)
	}
	return out
}

// padVarint is v written in exactly width bytes (continuation bytes of zeros; width > 10
// writes more than a varint may have).
func padVarint(v uint64, width int) []byte {
	b := binary.AppendUvarint(nil, v)
	for len(b) < width {
		b[len(b)-1] |= 0x80
		b = append(b, 0)
	}
	return b
}

// insertions are fields put before every field and at the end of every message (written as
// they are, as a tag).
var insertions = [][]byte{tag(9, 4), cat(tag(9, 3), tag(9, 4)), cat(tag(9, 1), make([]byte, 8)), cat(tag(9, 5), make([]byte, 4)),
	cat(tag(9, 2), []byte{0}), cat(tag(9, 0), []byte{0x80, 0x01}), cat(tag(0, 0), []byte{0}), tag(9, 6), tag(9, 7)}

// bigNumbers are field numbers at the limits: protobuf's maximum (2^29-1), int32's, uint32's,
// and the largest a 64-bit tag holds.
var bigNumbers = []uint64{1<<29 - 1, 1 << 29, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 32, 1<<61 - 1}

// structural adds the mutations of each field of a parsed seed s (nested ones too). A changed
// tag or padded varint keeps the enclosing lengths right; a changed length value is written in
// place, the rest of s as is.
func (c *corpus) structural(s []byte, top []*wireField) {
	var walk func(fields *[]*wireField, msgStart, msgEnd int)
	walk = func(fields *[]*wireField, msgStart, msgEnd int) {
		// A field put before each field and at the end of the message.
		for at := 0; at <= len(*fields); at++ {
			for _, ins := range insertions {
				saved := *fields
				*fields = slices.Insert(slices.Clone(saved), at, &wireField{tag: ins})
				c.add(encodeFields(top))
				*fields = saved
			}
		}
		for _, f := range *fields {
			t, _ := readVarint(f.tag)
			edit := func(change func()) {
				saved := *f
				change()
				c.add(encodeFields(top))
				*f = saved
			}
			for _, w := range []int{9, 10, 11} {
				edit(func() { f.tag = padVarint(t, w) })
			}
			for _, num := range bigNumbers {
				edit(func() { f.tag = binary.AppendUvarint(nil, num<<3|uint64(f.wt)) })
			}
			for wt := uint64(0); wt < 8; wt++ {
				edit(func() { f.tag = binary.AppendUvarint(nil, t&^7|wt) })
			}
			switch f.wt {
			case 0:
				v, _ := readVarint(f.value)
				for _, w := range []int{9, 10, 11} {
					edit(func() { f.value = padVarint(v, w) })
				}
				for _, last := range []byte{0x01, 0x02, 0x7f} {
					edit(func() { f.value = append(bytes.Repeat([]byte{0xff}, 9), last) })
				}
			case 2:
				n := uint64(len(f.value))
				for _, w := range []int{9, 10, 11} {
					edit(func() { f.size = padVarint(n, w) })
				}
				c.lengths(s, f, msgStart, msgEnd)
				if f.kids != nil {
					walk(&f.kids, f.content, f.end)
				}
			}
		}
	}
	walk(&top, 0, len(s))
}

// lengths adds s with f's length set to each value at a boundary: its content's, the rest of
// the enclosing message's and of s's, each -1, exact and +1; the ends at which the index after
// it overflows int, counted from s's start (the whole response: gogo's map entries), the
// enclosing message's (gogo's nested Unmarshal) and f's own tag (skipApi's slice); and the
// values that are negative as an int.
func (c *corpus) lengths(s []byte, f *wireField, msgStart, msgEnd int) {
	sizeStart := f.content - len(f.size)
	with := func(n uint64) []byte { return cat(s[:sizeStart], binary.AppendUvarint(nil, n), s[f.content:]) }
	// after is the index after the length when it is written as n.
	after := func(n uint64) int { return sizeStart + len(binary.AppendUvarint(nil, n)) }
	for _, rest := range []func(n uint64) int{
		func(uint64) int { return len(f.value) },
		func(n uint64) int { return msgEnd - after(n) },
		func(n uint64) int { return len(with(n)) - after(n) },
	} {
		for d := -1; d <= 1; d++ {
			// The width of n can change the rest: settle it.
			n := uint64(max(0, rest(0)+d))
			for k := 0; k < 3; k++ {
				n = uint64(max(0, rest(n)+d))
			}
			c.add(with(n))
		}
	}
	for _, base := range []int{0, msgStart, f.start} {
		for _, end := range []uint64{math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxInt64 + 2} {
			n := end - uint64(after(end)-base)
			n = end - uint64(after(n)-base)
			c.add(with(n))
		}
	}
	for _, n := range []uint64{math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64} {
		c.add(with(n))
	}
}
