package local

import (
	"archive/tar"
	"bytes"
	"path"
	"testing"
)

// FuzzReadArchive feeds arbitrary bytes as a --from-dir archive: it must never panic, and what
// it returns must respect the caps and name only wanted files.
func FuzzReadArchive(f *testing.F) {
	f.Add(makeTar(f, false, reg("var/lib/kubelet/cpu_manager_state", `{"policyName":"none","defaultCpuSet":"","checksum":1}`), reg("./.123", "t")))
	f.Add(makeTar(f, true, reg("memory_manager_state", "{}"), reg("device-plugins/kubelet_internal_checkpoint", "{}")))
	f.Add(makeTar(f, false, reg("cpu_manager_state", string(bytes.Repeat([]byte("x"), 100)))))
	f.Add(makeTar(f, false, entry{name: "cpu_manager_state", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"}, reg("../../dra_manager_state", "d")))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte{})
	lim := Limits{MaxFileBytes: 64, MaxTotalBytes: 128}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := readArchive("fuzz.tar", bytes.NewReader(data), want, lim)
		if err != nil {
			if snap != nil {
				t.Fatalf("snapshot with an error: %v", err)
			}
			return
		}
		var total int64
		for rel, b := range snap.Files {
			if !wanted[rel] {
				t.Fatalf("unwanted file %q", rel)
			}
			if int64(len(b)) > lim.MaxFileBytes {
				t.Fatalf("%s: %d bytes over the per-file cap", rel, len(b))
			}
			total += int64(len(b))
		}
		if total > lim.MaxTotalBytes {
			t.Fatalf("%d bytes over the total cap", total)
		}
		seen := map[string]bool{}
		for _, rel := range snap.Oversized {
			if !wanted[rel] || seen[rel] {
				t.Fatalf("oversized %q: unwanted or listed twice", rel)
			}
			if _, ok := snap.Files[rel]; ok {
				t.Fatalf("%s both read and oversized", rel)
			}
			seen[rel] = true
		}
		for _, p := range snap.TempFiles {
			if !isTempFile(path.Base(p)) || path.IsAbs(p) || path.Clean(p) != p || p == ".." || len(p) > 2 && p[:3] == "../" {
				t.Fatalf("temp file %q", p)
			}
		}
	})
}
