package decode

import (
	"bytes"
	"hash/crc32"
	"hash/fnv"
	"io"

	"github.com/davecgh/go-spew/spew"
)

// hashPrinter is the kubelet's DeepHashObject printer (pkg/util/hash; k8s.io/utils/dump.ForHash
// from 1.28 on, whose extra options do not affect "%#v"): the hashed text is identical in every
// kubelet release.
var hashPrinter = spew.ConfigState{
	Indent:                  " ",
	SortKeys:                true,
	DisableMethods:          true,
	SpewKeys:                true,
	DisablePointerAddresses: true,
	DisableCapacities:       true,
}

// spewInto streams the kubelet's "%#v" text of obj into w, with the rewrites applied. go-spew's
// own formatter produces the text; it writes straight into w through a fmt.State, so the text
// (hundreds of KB for a large node) is never built in memory just to be hashed.
func spewInto(w io.Writer, obj any, rws []rewrite) {
	var renamers []*renamer
	for i := len(rws) - 1; i >= 0; i-- {
		r := &renamer{w: w, from: []byte(rws[i].From), to: []byte(rws[i].To), all: rws[i].All}
		renamers = append([]*renamer{r}, renamers...)
		w = r
	}
	hashPrinter.NewFormatter(obj).Format(sharpV{w}, 'v')
	for _, r := range renamers {
		r.flush()
	}
}

// sharpV is the fmt.State of "%#v" (types shown) writing to an io.Writer.
type sharpV struct{ io.Writer }

func (sharpV) Width() (int, bool)     { return 0, false }
func (sharpV) Precision() (int, bool) { return 0, false }
func (sharpV) Flag(c int) bool        { return c == '#' }

// rewrite replaces a Go type name in the hashed text, as the kubelet does when a layout became a
// distinct type but must keep hashing under its old name.
type rewrite struct {
	From, To string
	All      bool // every occurrence; otherwise only the first (strings.Replace n=1)
}

// renamer applies one rewrite to a stream: it holds back only the bytes that could still start
// a match, so it works whatever the write boundaries.
type renamer struct {
	w        io.Writer
	from, to []byte
	all      bool
	done     bool
	pending  []byte
}

func (r *renamer) Write(b []byte) (int, error) {
	if r.done {
		return r.w.Write(b)
	}
	r.pending = append(r.pending, b...)
	for {
		i := bytes.Index(r.pending, r.from)
		if i < 0 {
			break
		}
		r.w.Write(r.pending[:i])
		r.w.Write(r.to)
		r.pending = r.pending[i+len(r.from):]
		if !r.all {
			r.done = true
			r.w.Write(r.pending)
			r.pending = nil
			return len(b), nil
		}
	}
	if keep := len(r.from) - 1; len(r.pending) > keep {
		r.w.Write(r.pending[:len(r.pending)-keep])
		r.pending = append([]byte(nil), r.pending[len(r.pending)-keep:]...)
	}
	return len(b), nil
}

func (r *renamer) flush() {
	r.w.Write(r.pending)
	r.pending = nil
}

func fnv32a(parts ...[]byte) uint64 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write(p)
	}
	return uint64(h.Sum32())
}

// stringPrefix is what spew prints before a string value: "%#v" of a string s is "(string)"+s,
// raw, so hashing the prefix then the bytes equals hashing spew's text without building it.
var stringPrefix = []byte("(string)")

func crc32IEEE(b []byte) uint64 { return uint64(crc32.ChecksumIEEE(b)) }
