// Package nodefs reads what the node's filesystem says beside the checkpoints: the device
// plugin sockets under device-plugins/ and the CDI spec files (/etc/cdi, /var/run/cdi). Each
// comes as a text section a shell script prints (from the debug pod, or the collect script on
// the node); this package holds the scripts and their parsers. The sections come from a node
// we do not trust to be healthy: every parser is size-capped and fuzzed.
package nodefs

import (
	"fmt"
	"sort"
	"strings"
)

// End closes every section.
const End = "@@end"

// Sockets section: the sockets in device-plugins/ by name, one a line.
//
//	@@nodestate-device-plugin-sockets v1
//	kubelet.sock
//	nvidia-gpu.sock
//	@@end
const (
	SocketsHeader = "@@nodestate-device-plugin-sockets v1"
	// SocketsDir is where the kubelet's device manager listens (kubelet.sock) and where each
	// device plugin puts the socket it registers with; relative to the kubelet root dir, as the
	// device checkpoint beside it.
	SocketsDir    = "device-plugins"
	KubeletSocket = "kubelet.sock"
	MaxSockets    = 4096
	// MaxSocketsBytes bounds the section.
	MaxSocketsBytes = 256 << 10
)

// SocketsScript prints the section, run in the kubelet root dir. A name with a newline would
// break the one-a-line framing: such entries are left out (no plugin names its socket so).
const SocketsScript = `echo "` + SocketsHeader + `"; nl='
'; for f in ` + SocketsDir + `/* ` + SocketsDir + `/.[!.]*; do case "$f" in *"$nl"*) continue;; esac; ` +
	`[ -S "$f" ] && echo "${f#` + SocketsDir + `/}"; done; echo "` + End + `"`

// Sockets are the socket names found, sorted.
type Sockets struct {
	Names []string
}

// ParseSockets reads the sockets section.
func ParseSockets(b []byte) (Sockets, error) {
	var s Sockets
	lines, err := section(b, SocketsHeader, MaxSocketsBytes)
	if err != nil {
		return s, err
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if l == "" || seen[l] {
			continue
		}
		if strings.ContainsAny(l, "/\x00") {
			return Sockets{}, fmt.Errorf("sockets section: %q is not a file name", truncate(l))
		}
		if len(s.Names) == MaxSockets {
			return Sockets{}, fmt.Errorf("sockets section: over %d sockets", MaxSockets)
		}
		seen[l] = true
		s.Names = append(s.Names, l)
	}
	sort.Strings(s.Names)
	return s, nil
}

// section returns the lines between header and End, refusing a section over max bytes, without
// its header or cut short.
func section(b []byte, header string, max int) ([]string, error) {
	if len(b) > max {
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit", header, len(b), max)
	}
	text := string(b)
	i := strings.Index(text, header+"\n")
	if i < 0 {
		return nil, fmt.Errorf("no %q header", header)
	}
	body := text[i+len(header)+1:]
	j := strings.Index("\n"+body, "\n"+End)
	if j < 0 {
		return nil, fmt.Errorf("%s: cut short (no %q)", header, End)
	}
	body = body[:j]
	if body == "" {
		return nil, nil
	}
	return strings.Split(strings.TrimSuffix(body, "\n"), "\n"), nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
