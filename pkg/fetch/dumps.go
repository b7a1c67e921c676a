package fetch

import (
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
	// nodelocal.SectionArg). A section without one is not printed by ReaderBinary.
	ReaderSection string
	// Max bounds the bytes kept of it.
	Max int
}

// dumpsScript runs each dump's script, its output to stderr and its errors dropped, before
// collectScript.
func dumpsScript(dumps []StderrDump) string {
	var b strings.Builder
	for _, d := range dumps {
		if d.Script != "" {
			b.WriteString("{ " + d.Script + "; } >&2 2>/dev/null; ")
		}
	}
	return b.String() + collectScript
}

// CollectDumpsCommand is CollectCommand that also prints dumps on stderr.
func CollectDumpsCommand(paths []string, dumps []StderrDump) []string {
	cmd := CollectCommand(paths)
	cmd[2] = dumpsScript(dumps)
	return cmd
}

// NodeReadCommand is the exec command of ReaderBinary: the node reader (hidden command
// node-read of the plugin's binary) asked for the dumps' sections and the tar of paths. It
// answers as CollectDumpsCommand does: the sections and then CollectEnd on stderr, the tar on
// stdout. The paths come after "--", so none can be read as a flag.
func NodeReadCommand(paths []string, dumps []StderrDump) []string {
	cmd := []string{ReaderPath, NodeReadVerb}
	for _, d := range dumps {
		if d.ReaderSection != "" {
			cmd = append(cmd, "--section="+d.ReaderSection)
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
