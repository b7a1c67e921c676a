package cgroup

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Dump is a parsed dump: the cpuset tree's directories and their files' contents.
type Dump struct {
	// Version is the cgroup version of the cpuset tree; 0 when the node showed none.
	Version int
	// Dirs maps a directory (relative to the cpuset tree's root, without "./") to its files.
	Dirs map[string]*Dir
	// Cut: the node had more than MaxDirs directories; the rest were not read.
	Cut bool
	// Skipped counts lines that were neither a directory nor a file of one listed before.
	Skipped int
}

// Dir is one cgroup directory: the cpuset files it had, by name, with their content (the
// trailing newline removed).
type Dir struct {
	Files map[string]string
}

// Parse reads a dump (Script's output). It refuses a dump over MaxBytes, a cut one (no end
// marker) or more than MaxDirs directories; it skips (and counts) lines it does not understand
// and lines over 16 KiB.
func Parse(text []byte) (*Dump, error) {
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("cgroup dump: %d bytes, over the %d-byte limit", len(text), MaxBytes)
	}
	d := &Dump{Dirs: map[string]*Dir{}}
	state := 0 // 0 before the header, 1 inside, 2 after the end
	seenHierarchy := false
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case len(line) > maxLine:
			d.Skipped++
		case state == 0 && line == Header:
			state = 1
		case state != 1, line == "":
		case line == End:
			state = 2
		case line == cutLine:
			d.Cut = true
		case strings.HasPrefix(line, "@hierarchy "):
			v, err := strconv.Atoi(strings.TrimPrefix(line, "@hierarchy "))
			if _, ok := HierarchyOf(v); (!ok && v != 0) || err != nil || seenHierarchy {
				return nil, fmt.Errorf("cgroup dump line %d: unexpected %q", i+1, truncate(line))
			}
			d.Version, seenHierarchy = v, true
		case strings.HasPrefix(line, "="):
			dir, ok := clean(line[1:])
			if !ok {
				d.Skipped++
				continue
			}
			if _, dup := d.Dirs[dir]; !dup {
				if len(d.Dirs) >= MaxDirs {
					return nil, fmt.Errorf("cgroup dump: more than %d directories", MaxDirs)
				}
				d.Dirs[dir] = &Dir{Files: map[string]string{}}
			}
		default:
			// A cpuset file's content never holds ':', a directory's name may: cut at the last.
			// A line that is not a file of a directory listed before (a name with a newline, a
			// file of many lines) is skipped, not trusted.
			colon := strings.LastIndexByte(line, ':')
			if colon < 0 {
				d.Skipped++
				continue
			}
			p, ok := clean(line[:colon])
			dir, listed := d.Dirs[path.Dir(p)]
			if !ok || !listed {
				d.Skipped++
				continue
			}
			if _, dup := dir.Files[path.Base(p)]; dup {
				d.Skipped++
				continue
			}
			dir.Files[path.Base(p)] = strings.TrimSpace(line[colon+1:])
		}
	}
	switch {
	case state == 0:
		return nil, fmt.Errorf("cgroup dump: no %q header", Header)
	case state == 1:
		return nil, fmt.Errorf("cgroup dump: cut short (no %q)", End)
	case !seenHierarchy:
		return nil, fmt.Errorf("cgroup dump: no @hierarchy line")
	}
	return d, nil
}

// clean turns find's "./a/b" into "a/b" ("." for the root); anything else is refused.
func clean(p string) (string, bool) {
	if p != "." && !strings.HasPrefix(p, "./") {
		return "", false
	}
	c := path.Clean(p)
	if strings.HasPrefix(c, "../") || c == ".." {
		return "", false
	}
	return c, true
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
