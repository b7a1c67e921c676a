package cgroup

import (
	"strconv"
	"strings"
)

// The host's cgroup filesystem, and where the debug pod mounts it (read-only, a hostPath: no
// new RBAC).
const (
	HostPath  = "/sys/fs/cgroup"
	MountPath = "/host/sys/fs/cgroup"
)

// The dump is what Script prints: a header, the hierarchy found, then for every directory of
// the kubepods trees a "=<dir>" line and a "<dir>/<file>:<content>" line per cpuset file (grep
// -H with an empty pattern prints an empty file's one empty line too). Paths are relative to
// the cpuset tree's root:
//
//	@@nodestate-cgroup v1
//	@hierarchy 1
//	=./kubepods/pod0f6c.../4a5b...
//	./kubepods/pod0f6c.../4a5b.../cpuset.cpus:1
//	./kubepods/pod0f6c.../4a5b.../cpuset.effective_cpus:1
//	./kubepods/pod0f6c.../4a5b.../cpuset.mems:0
//	@@cut                 (only when more than MaxDirs directories were found)
//	@@end
const (
	Header  = "@@nodestate-cgroup v1"
	End     = "@@end"
	cutLine = "@@cut"
)

// Bounds: the script stops after MaxDirs directories (a kubepods tree deeper than kubepods/
// <qos>/<pod>/<container> is not walked), and Parse refuses a dump over MaxBytes. A node with
// 250 pods of 4 containers has about 1,500 directories and 1 MiB of dump.
const (
	MaxDirs     = 8192
	MaxBytes    = 6 << 20
	maxRoots    = 8 // kubepods trees (one per kubelet cgroup root)
	maxRootDeep = 4 // how deep under the cpuset tree a kubepods tree may start (cgroupRoot)
	maxLine     = 16 << 10
)

// Script prints the dump of the cgroup filesystem mounted at mount on its standard output. It
// runs in a subshell (the caller's working directory is kept), never fails, and never follows
// a symlink or leaves the filesystem (-xdev): a hostile tree costs at most MaxDirs greps.
func Script(mount string) string { return script(mount, MaxDirs) }

func script(mount string, maxDirs int) string {
	v2, v1 := Hierarchies[0], Hierarchies[1]
	return `echo '` + Header + `'; (` +
		`if ! cd ` + shellQuote(mount) + ` 2>/dev/null; then v=0; ` +
		`elif [ -f cgroup.controllers ]; then v=2 e=` + v2.EffectiveCPUs + `; ` +
		`elif cd ` + v1.Root + ` 2>/dev/null; then v=1 e=` + v1.EffectiveCPUs + `; ` +
		`else v=0; fi; echo "@hierarchy $v"; ` +
		`[ "$v" = 0 ] || find . -xdev -maxdepth ` + strconv.Itoa(maxRootDeep) + ` -type d -name 'kubepods*' -prune 2>/dev/null | head -n ` + strconv.Itoa(maxRoots) + ` | ` +
		`while IFS= read -r k; do find "$k" -xdev -maxdepth 3 -type d 2>/dev/null; done | ` +
		`{ n=0; while IFS= read -r d; do n=$((n+1)); if [ $n -gt ` + strconv.Itoa(maxDirs) + ` ]; then echo '` + cutLine + `'; break; fi; ` +
		`printf '=%s\n' "$d"; grep -Hs '' "$d/` + v2.CPUs + `" "$d/$e" "$d/` + v2.Mems + `"; done; }); ` +
		`echo '` + End + `'`
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
