package fetch

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// ErrTooLarge is wrapped by the *ArchiveError for an entry or archive beyond TarLimits.
var ErrTooLarge = errors.New("over the size limit")

// ArchiveError says why a tar from the node was refused. The tar comes from a container on a
// node we do not trust to be healthy, so anything but the requested regular files is refused
// rather than skipped: a surprise there means something is wrong.
type ArchiveError struct {
	Entry   string // the entry's name as stored, "" if not about one entry
	Problem string
	Err     error // ErrTooLarge, io.ErrUnexpectedEOF, ...
}

func (e *ArchiveError) Error() string {
	if e.Entry == "" {
		return "bad archive from node: " + e.Problem
	}
	return fmt.Sprintf("bad archive from node: %q: %s", e.Entry, e.Problem)
}

func (e *ArchiveError) Unwrap() error { return e.Err }

// ReadTar reads a tar stream into memory, keeping only regular files whose cleaned names are in
// want (relative paths as passed to the exec; a leading "./" is accepted). It refuses absolute
// names, "..", links, devices, directories, duplicates, names not asked for, and sizes beyond
// lim. It returns the files and the wanted paths that were absent, in want's order. An empty
// stream is a valid archive with no files: the collect command sends nothing when no requested
// file exists. ReadTar never touches the disk.
func ReadTar(r io.Reader, want []string, lim TarLimits) (map[string][]byte, []string, error) {
	lim = lim.withDefaults()
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w] = true
	}
	files := make(map[string][]byte, len(want))
	var total int64
	counted := &countingReader{r: r}
	tr := tar.NewReader(counted)
	var entriesEnd int64 // where the last entry's padded data ends in the stream
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// archive/tar also ends cleanly on a stream cut between two entries; only the
			// end-of-archive marker (two zero blocks) after the last entry proves nothing is
			// missing. A stream with no entry at all is the collect command's "no file".
			if counted.n > 0 && counted.n < entriesEnd+2*tarBlock {
				return nil, nil, &ArchiveError{Problem: "truncated (no end-of-archive marker)", Err: io.ErrUnexpectedEOF}
			}
			break
		}
		if err != nil {
			return nil, nil, readError(err)
		}
		entriesEnd = counted.n + (hdr.Size+tarBlock-1)/tarBlock*tarBlock
		name, err := entryName(hdr, wanted)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := files[name]; dup {
			return nil, nil, &ArchiveError{Entry: hdr.Name, Problem: "appears twice"}
		}
		if hdr.Size < 0 || hdr.Size > lim.MaxFileSize {
			return nil, nil, &ArchiveError{Entry: hdr.Name, Err: ErrTooLarge,
				Problem: fmt.Sprintf("%d bytes, over the %d-byte limit per file", hdr.Size, lim.MaxFileSize)}
		}
		if total += hdr.Size; total > lim.MaxTotalSize {
			return nil, nil, &ArchiveError{Entry: hdr.Name, Err: ErrTooLarge,
				Problem: fmt.Sprintf("files total over the %d-byte limit", lim.MaxTotalSize)}
		}
		// The size is capped above, so allocating it up front is safe and avoids regrowth.
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, nil, readError(err)
		}
		files[name] = data
	}
	var missing []string
	for _, w := range want {
		if _, ok := files[w]; !ok {
			missing = append(missing, w)
		}
	}
	return files, missing, nil
}

// entryName checks one header and returns the requested path it stands for.
func entryName(hdr *tar.Header, wanted map[string]bool) (string, error) {
	refuse := func(problem string) (string, error) {
		return "", &ArchiveError{Entry: hdr.Name, Problem: problem}
	}
	raw := hdr.Name
	switch {
	case raw == "":
		return refuse("empty name")
	case strings.HasPrefix(raw, "/"):
		return refuse("absolute name")
	case strings.ContainsRune(raw, '\\'):
		return refuse("backslash in name")
	}
	// Refuse ".." anywhere, even where path.Clean would resolve it back inside.
	for _, elem := range strings.Split(raw, "/") {
		if elem == ".." {
			return refuse(`".." in name`)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeSymlink, tar.TypeLink:
		return refuse("is a link; only regular files are read")
	default:
		return refuse(fmt.Sprintf("type %q is not a regular file", hdr.Typeflag))
	}
	name := path.Clean(raw)
	if !wanted[name] {
		return refuse("was not requested")
	}
	return name, nil
}

func readError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ArchiveError{Problem: "truncated", Err: err}
	}
	return &ArchiveError{Problem: err.Error(), Err: err}
}

// tarBlock is tar's block size: headers and padded file data come in blocks of it.
const tarBlock = 512

// countingReader counts the bytes read through it: archive/tar reads exactly the blocks it
// parses, so the count says how far into the stream it got.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
