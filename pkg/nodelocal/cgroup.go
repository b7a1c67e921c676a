package nodelocal

import (
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
)

// cgroupCut is the line cgroup.Script prints when it stops at cgroup.MaxDirs directories.
const cgroupCut = "@@cut"

// Bounds of the walk, as cgroup.Script's find: kubepods trees up to 4 levels under the cpuset
// tree's root, at most 8 of them, each walked 3 levels deep.
const (
	maxRoots     = 8
	maxRootDepth = 4
	maxTreeDepth = 3
	// maxCgroupFile bounds one cpuset file's read (the parser skips lines over 16 KiB).
	maxCgroupFile = 64 << 10
)

// CgroupDump prints what cgroup.Script prints for the cgroup filesystem mounted at mount, from
// Go: the same hierarchy test, the same kubepods trees, bounds and lines. It never follows a
// symlink nor leaves the filesystem of the cpuset tree.
func CgroupDump(mount string) []byte { return cgroupDump(mount, cgroup.MaxDirs) }

func cgroupDump(mount string, maxDirs int) []byte {
	var b bytes.Buffer
	b.WriteString(cgroup.Header + "\n")
	h, root, ok := hierarchyAt(mount)
	if !ok {
		b.WriteString("@hierarchy 0\n" + cgroup.End + "\n")
		return b.Bytes()
	}
	b.WriteString("@hierarchy " + strconv.Itoa(h.Version) + "\n")
	dev, _ := deviceOf(root)
	n := 0
	isTree := func(rel string) bool { return strings.HasPrefix(path.Base(rel), "kubepods") }
	walkDirs(root, ".", dev, maxRootDepth, isTree, maxRoots, func(tree string) bool {
		cut := false
		walkDirs(root, tree, dev, maxTreeDepth, nil, 0, func(d string) bool {
			if n++; n > maxDirs {
				b.WriteString(cgroupCut + "\n")
				cut = true
				return false
			}
			b.WriteString("=" + d + "\n")
			for _, f := range []string{h.CPUs, h.EffectiveCPUs, h.Mems} {
				grepAll(&b, d+"/"+f, filepath.Join(root, filepath.FromSlash(d), f))
			}
			return true
		})
		return !cut
	})
	b.WriteString(cgroup.End + "\n")
	return b.Bytes()
}

// hierarchyAt tells the cgroup version as the script does: cgroup.controllers at the mount is
// v2, a cpuset directory v1 (or a hybrid mount); anything else shows no cpuset tree.
func hierarchyAt(mount string) (cgroup.Hierarchy, string, bool) {
	if fi, err := os.Stat(mount); err != nil || !fi.IsDir() {
		return cgroup.Hierarchy{}, "", false
	}
	v2, v1 := cgroup.Hierarchies[0], cgroup.Hierarchies[1]
	if fi, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil && fi.Mode().IsRegular() {
		return v2, mount, true
	}
	if fi, err := os.Stat(filepath.Join(mount, v1.Root)); err == nil && fi.IsDir() {
		return v1, filepath.Join(mount, v1.Root), true
	}
	return cgroup.Hierarchy{}, "", false
}

// walkDirs visits the directories under root/start as find's "-xdev -maxdepth N -type d" does,
// in name order. With match nil it visits every one, start first; with match, only those it
// matches below start, without descending into them (-prune), and at most limit of them (head
// -n). visit returns false to stop the walk.
func walkDirs(root, start string, dev uint64, maxDepth int, match func(rel string) bool, limit int, visit func(rel string) bool) {
	matched := 0
	var walk func(rel string, depth int) bool
	walk = func(rel string, depth int) bool {
		switch {
		case match == nil:
			if !visit(rel) {
				return false
			}
		case depth > 0 && match(rel):
			if matched++; matched > limit {
				return false
			}
			return visit(rel)
		}
		if depth >= maxDepth {
			return true
		}
		full := filepath.Join(root, filepath.FromSlash(rel))
		if d, ok := deviceOf(full); !ok || d != dev {
			return true // -xdev: listed, not descended
		}
		entries, err := os.ReadDir(full) // sorted by name
		if err != nil {
			return true
		}
		for _, e := range entries {
			// A symlink to a directory is no directory to find -type d.
			if e.IsDir() && !walk(rel+"/"+e.Name(), depth+1) {
				return false
			}
		}
		return true
	}
	walk(start, 0)
}

// grepAll prints grep -Hs ” FILE: one "name:line" per line of the file (none for an empty
// file or one that cannot be read).
func grepAll(b *bytes.Buffer, name, file string) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCgroupFile))
	if err != nil || len(data) == 0 {
		return
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		b.WriteString(name + ":" + line + "\n")
	}
}
