package fetch

import (
	"slices"
	"strconv"
	"strings"
)

// A StderrDump is a text section a script prints from the node in the same exec as the files'
// tar (one exec is one API request and one runtime exec on the node): the machine's sysfs, the
// device plugin sockets, the CDI specs. The exec sends it on stderr, so stdout stays one clean
// tar. Package fetch only carries it: the script and its parser belong to the package that
// reads it (nodestate passes machine's and nodefs'; fetch knows neither).
type StderrDump struct {
	// Header is the section's first line, which its Script prints first and which keys
	// Snapshot.Dumps; End is its last line.
	Header, End string
	// Script prints the section on its standard output; its errors are dropped. A section
	// without one (PodResources: sh cannot speak gRPC) is not printed by ReaderShell.
	Script string
	// ReaderSection asks ReaderBinary's node reader for the section (its --section value,
	// nodelocal.SectionArg); its name, before any "=", asks ShellReaderScript. A section
	// without one is printed by neither reader.
	ReaderSection string
	// Max bounds the bytes kept of it.
	Max int
}

// ShellReaderScript is the shell reader's one script, the same text for every read, so that the
// exec policy (package deploy) can admit exactly it: each section of sections runs when its
// --section=NAME (ShellSectionArg) is among the arguments, its output on stderr and its errors
// dropped, before collectScript tars the other arguments that are files.
func ShellReaderScript(sections []StderrDump) string {
	var b strings.Builder
	for _, d := range sections {
		if d.Script != "" && d.ReaderSection != "" {
			b.WriteString(ShellSectionArg(d) + ") { " + d.Script + "; } >&2 2>/dev/null;; ")
		}
	}
	if b.Len() == 0 {
		return collectScript
	}
	return "for nodestate_arg; do case $nodestate_arg in " + b.String() + "esac; done; " + collectScript
}

// ShellSectionArg is the argument that asks ShellReaderScript for d: its reader section's name
// (the script holds its directories).
func ShellSectionArg(d StderrDump) string {
	name, _, _ := strings.Cut(d.ReaderSection, "=")
	return sectionFlag + name
}

// binarySectionArg is the argument that asks ReaderBinary's node reader for d.
func binarySectionArg(d StderrDump) string { return sectionFlag + d.ReaderSection }

// sectionFlag starts the argument that asks either reader for a section.
const sectionFlag = "--section="

// ShellReaderCommand is the exec command of ReaderShell: script (ShellReaderScript of every
// section the reads may ask for) asked for dumps' sections and the tar of paths, each path with
// a "./" prefix so that none can be read as an option by test or tar.
func ShellReaderCommand(script string, paths []string, dumps []StderrDump) []string {
	cmd := []string{"sh", "-c", script, "sh"}
	for _, d := range dumps {
		if d.Script != "" && d.ReaderSection != "" {
			cmd = append(cmd, ShellSectionArg(d))
		}
	}
	for _, p := range paths {
		cmd = append(cmd, "./"+p)
	}
	return cmd
}

// NodeReadCommand is the exec command of ReaderBinary: the node reader (hidden command
// node-read of the plugin's binary) asked for the dumps' sections and the tar of paths. It
// answers as ShellReaderCommand does: the sections and then CollectEnd on stderr, the tar on
// stdout. The paths come after "--", so none can be read as a flag.
func NodeReadCommand(paths []string, dumps []StderrDump) []string {
	cmd := []string{ReaderPath, NodeReadVerb}
	for _, d := range dumps {
		if d.ReaderSection != "" {
			cmd = append(cmd, binarySectionArg(d))
		}
	}
	return append(append(cmd, "--"), paths...)
}

// NodeReadVerb is the node reader's command name in the plugin's binary.
const NodeReadVerb = "node-read"

// NodeReadPodCommand is the debug pod's own command under ReaderBinary: the node reader waiting
// out the pod's deadline, as `sleep` does under ReaderShell (the image has no sleep). Unlike
// sleep as PID 1, it ends at once on SIGTERM, when the pod is deleted.
func NodeReadPodCommand(seconds int64) []string {
	return []string{ReaderPath, NodeReadVerb, "--sleep=" + strconv.FormatInt(seconds, 10)}
}

// splitDumps takes each dump out of the exec's stderr: the section from its header line to its
// end line (or to the end of stderr if cut), keyed by header, and the rest, which is tar's.
func splitDumps(stderr string, dumps []StderrDump) (map[string][]byte, string) {
	var got map[string][]byte
	for _, d := range dumps {
		start := strings.Index(stderr, d.Header)
		if start < 0 {
			continue
		}
		end := len(stderr)
		if i := strings.Index(stderr[start:], "\n"+d.End); i >= 0 {
			end = start + i + 1 + len(d.End)
		}
		if got == nil {
			got = map[string][]byte{}
		}
		got[d.Header] = []byte(stderr[start:end])
		stderr = stderr[:start] + stderr[end:]
	}
	return got, stderr
}

// ReadAllowlist is every exec a debug pod's reads may run, as the exec policy (package deploy)
// admits it: each reader's fixed words, and besides them only these arguments.
type ReadAllowlist struct {
	ShellScript string   // ReaderShell's one script (ShellReaderScript of every section)
	Sections    []string // every --section argument of either reader
	Paths       []string // every path read, relative to the kubelet root dir
}

// ReadsOf is the allowlist of the reads that may ask for sections and paths.
func ReadsOf(sections []StderrDump, paths []string) ReadAllowlist {
	r := ReadAllowlist{ShellScript: ShellReaderScript(sections), Paths: slices.Clone(paths)}
	for _, d := range sections {
		if d.ReaderSection == "" {
			continue
		}
		r.Sections = append(r.Sections, binarySectionArg(d))
		if d.Script != "" && ShellSectionArg(d) != r.Sections[len(r.Sections)-1] {
			r.Sections = append(r.Sections, ShellSectionArg(d))
		}
	}
	return r
}
