package local

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// want is every checkpoint path the commands ask for (decode.Paths(), spelled out: this package
// knows paths, not formats).
var want = []string{
	"cpu_manager_state",
	"memory_manager_state",
	"device-plugins/kubelet_internal_checkpoint",
	"dra_manager_state",
	"dra_health_state",
	"pod_status_manager_state",
	"allocated_pods_state",
	"actuated_pods_state",
}

const examples = "../../../examples"

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestReadDirExample(t *testing.T) {
	dir := filepath.Join(examples, "kubelet-root")
	snap, err := Read(dir, want, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"actuated_pods_state", "allocated_pods_state", "cpu_manager_state",
		"device-plugins/kubelet_internal_checkpoint", "dra_health_state", "dra_manager_state", "memory_manager_state"}
	if got := keys(snap.Files); !reflect.DeepEqual(got, wantFiles) {
		t.Errorf("files = %q, want %q", got, wantFiles)
	}
	for rel, b := range snap.Files {
		disk, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || !bytes.Equal(b, disk) {
			t.Errorf("%s: bytes differ from the file on disk (%v)", rel, err)
		}
	}
	if len(snap.TempFiles) != 0 || len(snap.Oversized) != 0 {
		t.Errorf("temp %q, oversized %q: want none", snap.TempFiles, snap.Oversized)
	}
	if snap.Source != dir {
		t.Errorf("source = %q", snap.Source)
	}
}

func TestReadDirBrokenNodeTempFile(t *testing.T) {
	snap, err := Read(filepath.Join(examples, "broken-node"), want, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(snap.Files); len(got) != 4 {
		t.Errorf("files = %q, want 4", got)
	}
	if !reflect.DeepEqual(snap.TempFiles, []string{".482910377"}) {
		t.Errorf("temp files = %q", snap.TempFiles)
	}
}

// write creates files (relative path -> content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadDirTempFilesOnlyNextToWantedFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"cpu_manager_state":               "{}",
		".1234":                           "x",
		"device-plugins/.987":             "x",
		"device-plugins/.5x":              "not digits",
		"pods/abc/.555":                   "not next to a checkpoint",
		"plugins_registry/.4":             "x",
		"device-plugins/kubelet.sock.123": "x",
	})
	if err := os.Mkdir(filepath.Join(dir, ".42"), 0o755); err != nil { // a directory, not a temp file
		t.Fatal(err)
	}
	snap, err := Read(dir, want, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if wantTemp := []string{".1234", "device-plugins/.987"}; !reflect.DeepEqual(snap.TempFiles, wantTemp) {
		t.Errorf("temp files = %q, want %q", snap.TempFiles, wantTemp)
	}
}

func TestReadDirSymlinkOutsideIsRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	write(t, outside, map[string]string{"secret": "SECRET", "kubelet_internal_checkpoint": "SECRET"})
	for name, link := range map[string]struct{ rel, target string }{
		"file to /etc/passwd": {"cpu_manager_state", "/etc/passwd"},
		"file relative":       {"cpu_manager_state", "../" + filepath.Base(outside) + "/secret"},
		"file absolute":       {"memory_manager_state", secret},
		"directory":           {"device-plugins", outside},
	} {
		t.Run(name, func(t *testing.T) {
			parent := filepath.Dir(outside) // the relative link climbs to outside's parent
			dir, err := os.MkdirTemp(parent, "root")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			write(t, dir, map[string]string{"dra_manager_state": "{}"})
			if err := os.Symlink(link.target, filepath.Join(dir, link.rel)); err != nil {
				t.Skip("no symlinks here:", err)
			}
			snap, err := Read(dir, want, DefaultLimits)
			if err == nil {
				for rel, b := range snap.Files {
					if rel != "dra_manager_state" || bytes.Contains(b, []byte("SECRET")) || bytes.Contains(b, []byte("root:")) {
						t.Errorf("read %s through a symlink leaving the dir: %q", rel, b)
					}
				}
				return
			}
			if !strings.Contains(err.Error(), link.rel) {
				t.Errorf("error does not name the file: %v", err)
			}
			if snap != nil {
				t.Errorf("snapshot returned with an error: %+v", snap)
			}
		})
	}
}

func TestReadDirOversized(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"cpu_manager_state":    strings.Repeat("a", 100), // exactly at the cap: read
		"memory_manager_state": strings.Repeat("b", 101), // one byte over: skipped
		"dra_manager_state":    "{}",
	})
	snap, err := Read(dir, want, Limits{MaxFileBytes: 100, MaxTotalBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(snap.Files); !reflect.DeepEqual(got, []string{"cpu_manager_state", "dra_manager_state"}) {
		t.Errorf("files = %q", got)
	}
	if !reflect.DeepEqual(snap.Oversized, []string{"memory_manager_state"}) {
		t.Errorf("oversized = %q", snap.Oversized)
	}
}

func TestReadDirTotalCap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"cpu_manager_state": strings.Repeat("a", 600), "memory_manager_state": strings.Repeat("b", 600)})
	if _, err := Read(dir, want, Limits{MaxFileBytes: 1000, MaxTotalBytes: 1000}); err == nil || !strings.Contains(err.Error(), "in total") {
		t.Errorf("err = %v, want the total cap", err)
	}
	if _, err := Read(dir, want, Limits{MaxFileBytes: 1000, MaxTotalBytes: 1200}); err != nil {
		t.Errorf("exactly at the total cap: %v", err)
	}
}

func TestReadDirNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "cpu_manager_state"), 0o755); err != nil {
		t.Fatal(err)
	}
	snap, err := Read(dir, want, DefaultLimits)
	if err == nil && len(snap.Files) > 0 {
		t.Errorf("a directory was read as a file: %q", keys(snap.Files))
	}
}

func TestReadMissing(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "nope"), want, DefaultLimits)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want not-exist", err)
	}
	// A directory without any checkpoint is not an error: nothing is found.
	snap, err := Read(t.TempDir(), want, DefaultLimits)
	if err != nil || len(snap.Files) != 0 {
		t.Errorf("empty dir: %v, %v", snap, err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"at": strings.Repeat("a", 64), "over": strings.Repeat("a", 65)})
	lim := Limits{MaxFileBytes: 64, MaxTotalBytes: 64}
	if b, err := ReadFile(filepath.Join(dir, "at"), lim); err != nil || len(b) != 64 {
		t.Errorf("at the cap: %d bytes, %v", len(b), err)
	}
	b, err := ReadFile(filepath.Join(dir, "over"), lim)
	if err == nil || b != nil || !strings.Contains(err.Error(), "cap") || !strings.Contains(err.Error(), "over") {
		t.Errorf("over the cap: %d bytes, err %v", len(b), err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), lim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestIsTempFile(t *testing.T) {
	for name, want := range map[string]bool{
		".482910377": true, ".1": true, ".": false, "": false, ".a1": false, "1234": false,
		"..1": false, ".12.tmp": false, "cpu_manager_state": false, ".-1": false,
	} {
		if got := isTempFile(name); got != want {
			t.Errorf("isTempFile(%q) = %v", name, got)
		}
	}
}

// entry is one tar entry to build.
type entry struct {
	name     string
	body     string
	typeflag byte
	linkname string
}

func reg(name, body string) entry { return entry{name: name, body: body, typeflag: tar.TypeReg} }

func makeTar(t testing.TB, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *gzip.Writer
	var tw *tar.Writer
	if gz {
		w = gzip.NewWriter(&buf)
		tw = tar.NewWriter(w)
	} else {
		tw = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.linkname, Mode: 0o600, Size: int64(len(e.body))}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if e.typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// readBytes writes an archive to a file and reads it as --from-dir would.
func readBytes(t *testing.T, b []byte, lim Limits) (*fetch.Snapshot, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.tar.gz")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return Read(p, want, lim)
}

func TestReadArchivePrefixes(t *testing.T) {
	for _, gz := range []bool{false, true} {
		b := makeTar(t, gz,
			entry{name: "var/lib/kubelet/", typeflag: tar.TypeDir},
			reg("var/lib/kubelet/cpu_manager_state", "cpu"),
			reg("./memory_manager_state", "mem"),
			reg("var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", "dev"),
			reg("/abs/dra_manager_state", "dra"),
			reg(`var\lib\kubelet\allocated_pods_state`, "alloc"),
			reg("var/lib/kubelet/.4711", "temp"),
			reg("var/lib/kubelet/kubelet_internal_checkpoint", "not under device-plugins"),
			reg("var/lib/kubelet/xcpu_manager_state", "not a path boundary"),
			reg("var/lib/kubelet/cpu_manager_state.bak", "not the name"),
			reg("var/lib/kubelet/pods/uid/volumes/x", "unrelated"),
		)
		snap, err := readBytes(t, b, DefaultLimits)
		if err != nil {
			t.Fatalf("gz=%v: %v", gz, err)
		}
		wantFiles := map[string][]byte{
			"cpu_manager_state":                          []byte("cpu"),
			"memory_manager_state":                       []byte("mem"),
			"device-plugins/kubelet_internal_checkpoint": []byte("dev"),
			"dra_manager_state":                          []byte("dra"),
			"allocated_pods_state":                       []byte("alloc"),
		}
		if !reflect.DeepEqual(snap.Files, wantFiles) {
			t.Errorf("gz=%v: files = %q", gz, snap.Files)
		}
		if !reflect.DeepEqual(snap.TempFiles, []string{"var/lib/kubelet/.4711"}) {
			t.Errorf("gz=%v: temp files = %q", gz, snap.TempFiles)
		}
	}
}

// listTree lists every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	return out
}

func TestReadArchiveTraversalNamesWriteNothing(t *testing.T) {
	work := t.TempDir()
	sub := filepath.Join(work, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	archive := filepath.Join(t.TempDir(), "evil.tar")
	if err := os.WriteFile(archive, makeTar(t, false,
		reg("../../etc/cpu_manager_state", "one"),
		reg("../../../../../../../../tmp/memory_manager_state", "two"),
		entry{name: "../../dra_manager_state", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"},
		reg("../../etc/passwd", "root:x:0:0"),
	), 0o600); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, work)
	snap, err := Read(archive, want, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string][]byte{"cpu_manager_state": []byte("one"), "memory_manager_state": []byte("two")}
	if !reflect.DeepEqual(snap.Files, wantFiles) {
		t.Errorf("files = %q", snap.Files)
	}
	if after := listTree(t, work); !reflect.DeepEqual(before, after) {
		t.Errorf("reading an archive changed the disk:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := os.Lstat(filepath.Join(work, "etc")); err == nil {
		t.Error("an archive entry was extracted")
	}
}

func TestReadArchiveSkipsLinksAndDevices(t *testing.T) {
	b := makeTar(t, true,
		entry{name: "cpu_manager_state", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"},
		entry{name: "memory_manager_state", typeflag: tar.TypeLink, linkname: "etc/passwd"},
		entry{name: "dra_manager_state", typeflag: tar.TypeChar},
		entry{name: "dra_health_state", typeflag: tar.TypeFifo},
		entry{name: "allocated_pods_state", typeflag: tar.TypeDir},
		entry{name: ".123", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"},
		reg("actuated_pods_state", "ok"),
	)
	snap, err := readBytes(t, b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Files, map[string][]byte{"actuated_pods_state": []byte("ok")}) {
		t.Errorf("files = %q, want only the regular file", snap.Files)
	}
	if len(snap.TempFiles) != 0 {
		t.Errorf("a symlink was listed as a temp file: %q", snap.TempFiles)
	}
}

func TestReadArchiveDuplicates(t *testing.T) {
	for name, entries := range map[string][]entry{
		"same name":           {reg("cpu_manager_state", "a"), reg("cpu_manager_state", "b")},
		"different prefixes":  {reg("var/lib/kubelet/cpu_manager_state", "a"), reg("./cpu_manager_state", "b")},
		"oversized then read": {reg("cpu_manager_state", strings.Repeat("x", 200)), reg("old/cpu_manager_state", "b")},
		"read then oversized": {reg("cpu_manager_state", "b"), reg("old/cpu_manager_state", strings.Repeat("x", 200))},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readBytes(t, makeTar(t, false, entries...), Limits{MaxFileBytes: 100, MaxTotalBytes: 1000})
			if err == nil || !strings.Contains(err.Error(), "cpu_manager_state appears twice") {
				t.Errorf("err = %v, want a duplicate error", err)
			}
		})
	}
}

func TestReadArchiveCaps(t *testing.T) {
	lim := Limits{MaxFileBytes: 100, MaxTotalBytes: 150}
	// An oversized entry is listed and skipped; the entries after it are still read correctly.
	snap, err := readBytes(t, makeTar(t, true,
		reg("cpu_manager_state", strings.Repeat("x", 101)),
		reg("memory_manager_state", strings.Repeat("m", 100)),
		reg("dra_manager_state", "{}"),
	), lim)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Oversized, []string{"cpu_manager_state"}) {
		t.Errorf("oversized = %q", snap.Oversized)
	}
	if string(snap.Files["memory_manager_state"]) != strings.Repeat("m", 100) || string(snap.Files["dra_manager_state"]) != "{}" {
		t.Errorf("files after an oversized entry = %q", snap.Files)
	}
	// Files under the per-file cap but over the total cap together.
	_, err = readBytes(t, makeTar(t, false,
		reg("cpu_manager_state", strings.Repeat("x", 80)),
		reg("memory_manager_state", strings.Repeat("m", 80)),
	), lim)
	if err == nil || !strings.Contains(err.Error(), "in total") {
		t.Errorf("err = %v, want the total cap", err)
	}
	// Unwanted entries do not count.
	_, err = readBytes(t, makeTar(t, false,
		reg("pods/big", strings.Repeat("x", 10000)),
		reg("cpu_manager_state", strings.Repeat("x", 100)),
	), lim)
	if err != nil {
		t.Errorf("unwanted entries counted against the caps: %v", err)
	}
}

func TestReadArchiveBroken(t *testing.T) {
	valid := makeTar(t, false, reg("cpu_manager_state", strings.Repeat("c", 700)), reg("memory_manager_state", "{}"))
	validGz := makeTar(t, true, reg("cpu_manager_state", strings.Repeat("c", 700)), reg("memory_manager_state", "{}"))
	json, err := os.ReadFile(filepath.Join(examples, "kubelet-root", "cpu_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"truncated in a header":     valid[:100],
		"truncated in file data":    valid[:512+300],
		"truncated second header":   valid[:512+1024+200],
		"truncated gzip":            validGz[:len(validGz)/2],
		"gzip magic then garbage":   append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte("garbage"), 100)...),
		"text":                      []byte("hello, this is not an archive\n"),
		"a checkpoint, not a dir":   json,
		"corrupt header checksum":   append(append([]byte{}, valid[:148]...), append([]byte("99999999"), valid[156:]...)...),
		"gzip of something not tar": gzipOf(t, []byte(strings.Repeat("not a tar ", 100))),
	} {
		t.Run(name, func(t *testing.T) {
			snap, err := readBytes(t, b, DefaultLimits)
			if err == nil {
				t.Fatalf("no error; snapshot %+v", snap)
			}
			if !strings.Contains(err.Error(), "node.tar.gz") {
				t.Errorf("error does not name the archive: %v", err)
			}
		})
	}
}

func gzipOf(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestReadArchiveOfExample(t *testing.T) {
	// The tar of a real kubelet dir reads the same as the dir itself.
	dir := filepath.Join(examples, "broken-node")
	fromDir, err := Read(dir, want, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var entries []entry
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		entries = append(entries, reg("./"+filepath.ToSlash(rel), string(b)))
		return err
	})
	fromTar, err := readBytes(t, makeTar(t, true, entries...), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromDir.Files, fromTar.Files) || !reflect.DeepEqual(fromDir.TempFiles, fromTar.TempFiles) {
		t.Errorf("dir and tar differ:\ndir %q %q\ntar %q %q", keys(fromDir.Files), fromDir.TempFiles, keys(fromTar.Files), fromTar.TempFiles)
	}
}
