package nodelocal

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// socketsSection prints nodefs.SocketsScript's section for the kubelet root dir: the sockets
// in device-plugins/ (a symlink to one counts, as for test -S), a name with a newline left out.
func socketsSection(rootDir string) []byte {
	var b bytes.Buffer
	b.WriteString(nodefs.SocketsHeader + "\n")
	dir := filepath.Join(rootDir, nodefs.SocketsDir)
	entries, _ := os.ReadDir(dir)
	// The script's two globs: * (no dot names), then .[!.]*.
	for _, dotted := range []bool{false, true} {
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") != dotted || strings.HasPrefix(name, "..") || strings.Contains(name, "\n") {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode()&os.ModeSocket != 0 {
				b.WriteString(name + "\n")
			}
		}
	}
	b.WriteString(nodefs.End + "\n")
	return b.Bytes()
}

// cdiSection prints nodefs.CDIScript's section for the spec dirs: each dir's *.json then
// *.yaml regular files, framed by their size; one over nodefs.MaxSpecBytes is named, not read.
func cdiSection(dirs []string) []byte {
	var b bytes.Buffer
	b.WriteString(nodefs.CDIHeader + "\n")
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, ext := range []string{".json", ".yaml"} {
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ext) {
					continue
				}
				p := filepath.Join(d, e.Name())
				data, size, ok := readSpec(p)
				switch {
				case !ok:
				case data == nil:
					b.WriteString("@@big " + d + "/" + e.Name() + " " + strconv.FormatInt(size, 10) + "\n")
				default:
					b.WriteString("@@file " + d + "/" + e.Name() + " " + strconv.Itoa(len(data)) + "\n")
					b.Write(data)
					b.WriteString("\n")
				}
			}
		}
	}
	b.WriteString(nodefs.End + "\n")
	return b.Bytes()
}

// readSpec reads a regular file (through a symlink, as test -f) of at most nodefs.MaxSpecBytes;
// a larger one returns no data and its size.
func readSpec(p string) (data []byte, size int64, ok bool) {
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, false
	}
	data, err = io.ReadAll(io.LimitReader(f, nodefs.MaxSpecBytes+1))
	if err != nil {
		return nil, 0, false
	}
	if len(data) > nodefs.MaxSpecBytes {
		return nil, max(fi.Size(), int64(len(data))), true
	}
	if data == nil {
		data = []byte{}
	}
	return data, int64(len(data)), true
}

// sysfsDump prints machine.SysfsScript's dump from sysRoot (the host's /sys) and procRoot: the
// same files, each non-empty line as "path:line", the paths as the script names them.
func sysfsDump(sysRoot, procRoot string) []byte {
	var b bytes.Buffer
	b.WriteString(machine.SysfsHeader + "\n")
	system := filepath.Join(sysRoot, "devices", "system")
	// grep -Hs . over the script's globs, in its order: relative to /sys/devices/system.
	for _, glob := range []string{"cpu/online", "cpu/offline", "cpu/cpu[0-9]*/topology/core_id", "cpu/cpu[0-9]*/topology/physical_package_id",
		"cpu/cpu[0-9]*/cache/index3/id", "node/node[0-9]*/cpulist", "node/node[0-9]*/distance", "node/node[0-9]*/hugepages/hugepages-*kB/nr_hugepages"} {
		grepGlob(&b, system, glob, "", "")
	}
	grepGlob(&b, filepath.Join(sysRoot, "kernel", "mm", "hugepages"), "hugepages-*kB/nr_hugepages", "/sys/kernel/mm/hugepages/", "")
	grepGlob(&b, system, "node/node[0-9]*/meminfo", "", "MemTotal")
	grepGlob(&b, procRoot, "meminfo", "/proc/", "MemTotal")
	b.WriteString(machine.SysfsEnd + "\n")
	return b.Bytes()
}

// maxSysfsFile bounds one sysfs or procfs file's read.
const maxSysfsFile = 64 << 10

// grepGlob prints, for every file matching glob under dir (sorted, as the shell expands it),
// the lines holding want (any non-empty line when want is ""), named prefix+its path.
func grepGlob(b *bytes.Buffer, dir, glob, prefix, want string) {
	grepLines(b, dir, glob, prefix, func(line string) bool {
		return line != "" && (want == "" || strings.Contains(line, want))
	})
}

// grepLines prints, for every file matching glob under dir (sorted, as the shell expands it),
// the lines keep keeps, named prefix+its path.
func grepLines(b *bytes.Buffer, dir, glob, prefix string, keep func(line string) bool) {
	matches, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(glob)))
	for _, m := range matches {
		rel, err := filepath.Rel(dir, m)
		if err != nil {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(io.LimitReader(f, maxSysfsFile))
		f.Close()
		for _, line := range strings.Split(string(data), "\n") {
			if !keep(line) {
				continue
			}
			b.WriteString(prefix + filepath.ToSlash(rel) + ":" + line + "\n")
		}
	}
}
