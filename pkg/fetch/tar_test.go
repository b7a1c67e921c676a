package fetch

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is one tar entry for a hand-built archive.
type entry struct {
	name string
	body string
	typ  byte  // tar.TypeReg if zero
	size int64 // header size if > 0 (to lie about it)
}

func makeTar(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o600, Typeflag: e.typ, Size: int64(len(e.body))}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
			hdr.Linkname = "/etc/shadow"
		}
		if e.size > 0 {
			hdr.Size = e.size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil && e.size == 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil && !errors.Is(err, tar.ErrWriteTooLong) {
		// A lying header leaves the writer short; the truncated bytes are what we want.
		t.Logf("closing tar: %v", err)
	}
	return buf.Bytes()
}

var want3 = []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint"}

func TestReadTar(t *testing.T) {
	good := makeTar(t,
		entry{name: "./cpu_manager_state", body: `{"policyName":"none"}`},
		entry{name: "device-plugins/kubelet_internal_checkpoint", body: "{}"},
	)
	files, missing, err := ReadTar(bytes.NewReader(good), want3, TarLimits{})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string][]byte{
		"cpu_manager_state":                          []byte(`{"policyName":"none"}`),
		"device-plugins/kubelet_internal_checkpoint": []byte("{}"),
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"memory_manager_state"}, missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
}

// The collect script sends nothing when no requested file exists.
func TestReadTarEmptyStream(t *testing.T) {
	files, missing, err := ReadTar(bytes.NewReader(nil), want3, TarLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 0 || !cmp.Equal(missing, want3) {
		t.Errorf("got files %v, missing %v; want none, all", files, missing)
	}
}

func TestReadTarHostile(t *testing.T) {
	many := make([]entry, 0, 20)
	manyWant := make([]string, 0, 20)
	for i := range 20 {
		name := fmt.Sprintf("f%02d", i)
		many = append(many, entry{name: name, body: strings.Repeat("z", 100)})
		manyWant = append(manyWant, name)
	}
	truncated := makeTar(t, entry{name: "cpu_manager_state", body: strings.Repeat("x", 4096)})
	truncated = truncated[:700]

	tests := []struct {
		name    string
		tar     []byte
		want    []string
		lim     TarLimits
		problem string // substring of the error
		tooBig  bool
	}{
		{name: "entry beyond the per-file cap", tar: makeTar(t, entry{name: "cpu_manager_state", body: strings.Repeat("x", 2048)}),
			lim: TarLimits{MaxFileSize: 1024}, problem: "limit per file", tooBig: true},
		{name: "header claims a huge size", tar: makeTar(t, entry{name: "cpu_manager_state", body: "x", size: 1 << 40}),
			problem: "limit per file", tooBig: true},
		{name: "many tiny files beyond the total cap", tar: makeTar(t, many...), want: manyWant,
			lim: TarLimits{MaxTotalSize: 1000}, problem: "total", tooBig: true},
		{name: "dot-dot", tar: makeTar(t, entry{name: "../cpu_manager_state", body: "x"}), problem: `".."`},
		{name: "dot-dot resolving inside", tar: makeTar(t, entry{name: "device-plugins/../cpu_manager_state", body: "x"}), problem: `".."`},
		{name: "absolute", tar: makeTar(t, entry{name: "/var/lib/kubelet/cpu_manager_state", body: "x"}), problem: "absolute"},
		{name: "symlink", tar: makeTar(t, entry{name: "cpu_manager_state", typ: tar.TypeSymlink}), problem: "link"},
		{name: "hardlink", tar: makeTar(t, entry{name: "cpu_manager_state", typ: tar.TypeLink}), problem: "link"},
		{name: "device", tar: makeTar(t, entry{name: "cpu_manager_state", typ: tar.TypeChar}), problem: "not a regular file"},
		{name: "directory", tar: makeTar(t, entry{name: "device-plugins/", typ: tar.TypeDir}), problem: "not a regular file"},
		{name: "fifo", tar: makeTar(t, entry{name: "cpu_manager_state", typ: tar.TypeFifo}), problem: "not a regular file"},
		{name: "duplicate", tar: makeTar(t, entry{name: "cpu_manager_state", body: "a"}, entry{name: "./cpu_manager_state", body: "b"}),
			problem: "twice"},
		{name: "not requested", tar: makeTar(t, entry{name: "etc/shadow", body: "x"}), problem: "not requested"},
		{name: "truncated", tar: truncated, problem: "truncated"},
		{name: "garbage", tar: bytes.Repeat([]byte("garbage!"), 100), problem: "bad archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = want3
			}
			files, _, err := ReadTar(bytes.NewReader(tt.tar), want, tt.lim)
			if err == nil {
				t.Fatalf("ReadTar accepted it: %v", files)
			}
			var ae *ArchiveError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v, want *ArchiveError", err, err)
			}
			if !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("error %q does not mention %q", err, tt.problem)
			}
			if got := errors.Is(err, ErrTooLarge); got != tt.tooBig {
				t.Errorf("errors.Is(err, ErrTooLarge) = %v, want %v", got, tt.tooBig)
			}
		})
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "node-1")
	files := map[string][]byte{
		"cpu_manager_state":                          []byte("cpu"),
		"device-plugins/kubelet_internal_checkpoint": []byte("dev"),
	}
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != string(body) {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, body)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode().Perm(), err)
		}
	}

	// An existing file keeps no looser mode.
	p := filepath.Join(dir, "cpu_manager_state")
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, map[string][]byte{"cpu_manager_state": []byte("again")}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten file mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestWriteFilesStaysInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink already in dir must not lead a write out of it.
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../escape", "/abs/escape", "link/escape", "a/../../escape"} {
		if err := WriteFiles(dir, map[string][]byte{name: []byte("x")}); err == nil {
			t.Errorf("WriteFiles accepted %q", name)
		}
	}
	for _, d := range []string{base, outside} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() != "out" && e.Name() != "outside" {
				t.Errorf("file written outside dir: %s", filepath.Join(d, e.Name()))
			}
		}
	}
}

// A tar cut anywhere (inside a header, inside a file, between two entries, inside the
// end-of-archive marker) is refused as truncated: never a file judged from part of its bytes,
// nor a file reported missing because the stream stopped before it.
// TestReadTarCutAtMarkerBlocks cuts the stream at every 512-byte boundary from the end of the
// last entry to past the end-of-archive marker: without both zero blocks archive/tar still
// ends cleanly (io.EOF), so only ReadTar's count of the marker tells a cut stream from a whole
// one. Zero blocks after the marker (tar's record padding) are accepted wherever they stop.
func TestReadTarCutAtMarkerBlocks(t *testing.T) {
	full := makeTar(t, entry{name: "./cpu_manager_state", body: strings.Repeat("c", 700)},
		entry{name: "./memory_manager_state", body: "m"})
	const block = 512
	marker := len(full) - 2*block // archive/tar's writer ends with exactly the two zero blocks
	if marker%block != 0 || !bytes.Equal(full[marker:], make([]byte, 2*block)) {
		t.Fatalf("the archive does not end with two zero blocks at %d (%d bytes)", marker, len(full))
	}
	padded := append(bytes.Clone(full), make([]byte, 10240-len(full)%10240)...)
	for n := marker; n <= len(padded); n += block {
		files, missing, err := ReadTar(bytes.NewReader(padded[:n]), want3, TarLimits{})
		if n < marker+2*block {
			var ae *ArchiveError
			if !errors.As(err, &ae) || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "no end-of-archive marker") {
				t.Errorf("cut at %d (%d zero blocks of the marker): files %d, missing %v, err %v; want a truncated archive", n, (n-marker)/block, len(files), missing, err)
			}
			continue
		}
		if err != nil || len(files) != 2 {
			t.Errorf("cut at %d (marker whole, %d blocks of padding): files %d, err %v; want both files", n, (n-marker)/block-2, len(files), err)
		}
	}
}

func TestReadTarTruncated(t *testing.T) {
	full := makeTar(t, entry{name: "./cpu_manager_state", body: strings.Repeat("c", 700)},
		entry{name: "./memory_manager_state", body: strings.Repeat("m", 512)},
		entry{name: "./device-plugins/kubelet_internal_checkpoint", body: "d"})
	if _, _, err := ReadTar(bytes.NewReader(full), want3, TarLimits{}); err != nil {
		t.Fatalf("the whole archive: %v", err)
	}
	// Entry boundaries: 512 (header) + 1024 (700 padded), + 512 + 512, + 512 + 512, then the marker.
	cuts := []int{1, 511, 512, 800, 1536, 1537, 2048, 2560, 3072, 3584, 3585, 4096 - 1}
	for n := 1; n < len(full); n += 97 {
		cuts = append(cuts, n)
	}
	for _, n := range cuts {
		if n >= 3584+1024 {
			continue // past the marker: only padding is cut
		}
		files, missing, err := ReadTar(bytes.NewReader(full[:n]), want3, TarLimits{})
		var ae *ArchiveError
		if !errors.As(err, &ae) || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d of %d: files %d, missing %v, err %v; want a truncated archive", n, len(full), len(files), missing, err)
		}
	}
}
