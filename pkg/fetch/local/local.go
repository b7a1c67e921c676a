// Package local reads checkpoint files copied off a node: a directory laid out like the kubelet
// root dir, a tar or tar.gz of one, or single files. It is the offline sibling of fetch: it
// knows paths and size caps, not formats.
package local

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// Limits cap what is read, so a hostile copy cannot eat memory.
type Limits struct {
	MaxFileBytes  int64
	MaxTotalBytes int64
}

// DefaultLimits: real checkpoints are kilobytes.
var DefaultLimits = Limits{MaxFileBytes: 64 << 20, MaxTotalBytes: 256 << 20}

// Read reads the wanted relative paths from a directory or a tar/tar.gz archive of one, into a
// snapshot with Source, Files (relative to the root dir), Oversized and TempFiles set.
func Read(src string, want []string, lim Limits) (*fetch.Snapshot, error) {
	info, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return readDir(src, want, lim)
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readArchive(src, f, want, lim)
}

func readDir(dir string, want []string, lim Limits) (*fetch.Snapshot, error) {
	snap := &fetch.Snapshot{Source: dir, Files: map[string][]byte{}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var total int64
	for _, rel := range want {
		b, err := readCapped(root, rel, lim.MaxFileBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, errTooLarge):
			snap.Oversized = append(snap.Oversized, rel)
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, rel), err)
		}
		if total += int64(len(b)); total > lim.MaxTotalBytes {
			return nil, fmt.Errorf("%s: checkpoint files exceed %d MiB in total", dir, lim.MaxTotalBytes>>20)
		}
		snap.Files[rel] = b
	}
	for _, sub := range dirsOf(want) {
		entries, err := fs.ReadDir(root.FS(), sub)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if isTempFile(e.Name()) && e.Type().IsRegular() {
				snap.TempFiles = append(snap.TempFiles, path.Join(sub, e.Name()))
			}
		}
	}
	sort.Strings(snap.TempFiles)
	return snap, nil
}

var errTooLarge = errors.New("over the size cap")

// readCapped reads one file inside root (os.Root refuses paths and symlinks leaving it).
func readCapped(root *os.Root, rel string, max int64) ([]byte, error) {
	// Stat before opening: opening a FIFO (or some devices) blocks until a writer shows up.
	if info, err := root.Stat(rel); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return readAllCapped(f, max)
}

func readAllCapped(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// readArchive reads a tar (optionally gzip'd) of a kubelet root dir. Entry names may carry any
// leading directories ("var/lib/kubelet/cpu_manager_state", "./cpu_manager_state"): a wanted
// file is matched by its path relative to the root dir, as a suffix on path boundaries.
func readArchive(name string, r io.Reader, want []string, lim Limits) (*fetch.Snapshot, error) {
	br := bufio.NewReader(r)
	var tr *tar.Reader
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer gz.Close()
		tr = tar.NewReader(gz)
	} else {
		tr = tar.NewReader(br)
	}
	snap := &fetch.Snapshot{Source: name, Files: map[string][]byte{}}
	var total int64
	seen := map[string]bool{} // read or oversized: a second copy is a duplicate either way
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not a readable tar archive: %w", name, err)
		}
		clean := path.Clean("/" + strings.ReplaceAll(hdr.Name, "\\", "/"))
		if isTempFile(path.Base(clean)) && hdr.Typeflag == tar.TypeReg {
			snap.TempFiles = append(snap.TempFiles, strings.TrimPrefix(clean, "/"))
			continue
		}
		rel := matchWanted(clean, want)
		if rel == "" || hdr.Typeflag != tar.TypeReg {
			continue // only regular files at known paths are read: links and devices are skipped
		}
		if seen[rel] {
			return nil, fmt.Errorf("%s: %s appears twice", name, rel)
		}
		seen[rel] = true
		b, err := readAllCapped(tr, lim.MaxFileBytes)
		if errors.Is(err, errTooLarge) {
			snap.Oversized = append(snap.Oversized, rel)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, rel, err)
		}
		if total += int64(len(b)); total > lim.MaxTotalBytes {
			return nil, fmt.Errorf("%s: checkpoint files exceed %d MiB in total", name, lim.MaxTotalBytes>>20)
		}
		snap.Files[rel] = b
	}
	sort.Strings(snap.TempFiles)
	return snap, nil
}

func matchWanted(clean string, want []string) string {
	for _, rel := range want {
		if clean == "/"+rel || strings.HasSuffix(clean, "/"+rel) {
			return rel
		}
	}
	return ""
}

// ReadFile reads one file with the per-file cap.
func ReadFile(p string, lim Limits) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readAllCapped(f, lim.MaxFileBytes)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s is larger than the %d MiB cap for a checkpoint; not read", p, lim.MaxFileBytes>>20)
	}
	return b, err
}

// isTempFile: the kubelet's file store writes ".<random digits>" and renames it into place.
func isTempFile(name string) bool {
	return len(name) > 1 && name[0] == '.' && strings.Trim(name[1:], "0123456789") == ""
}

func dirsOf(rels []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rels {
		d := path.Dir(r)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
