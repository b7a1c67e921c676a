package decode

import (
	"bytes"
	"hash/crc32"
	"hash/fnv"
	"sync"

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

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// spewText appends the kubelet's "%#v" text of obj to buf.
func spewText(buf *bytes.Buffer, obj any) {
	hashPrinter.Fprintf(buf, "%#v", obj)
}

// rewrite replaces a Go type name in the hashed text, as the kubelet does when a layout became a
// distinct type but must keep hashing under its old name.
type rewrite struct {
	From, To string
	All      bool // every occurrence; otherwise only the first (strings.Replace n=1)
}

func applyRewrites(text []byte, rws []rewrite) []byte {
	for _, rw := range rws {
		n := 1
		if rw.All {
			n = -1
		}
		text = bytes.Replace(text, []byte(rw.From), []byte(rw.To), n)
	}
	return text
}

// hashRewritten hashes text with the rewrites applied. The common case, one type name renamed
// at its first occurrence, hashes the pieces around it instead of copying the text.
func hashRewritten(text []byte, rws []rewrite) uint64 {
	if len(rws) != 1 || rws[0].All {
		return fnv32a(applyRewrites(text, rws))
	}
	from := []byte(rws[0].From)
	i := bytes.Index(text, from)
	if i < 0 {
		return fnv32a(text)
	}
	return fnv32a(text[:i], []byte(rws[0].To), text[i+len(from):])
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
