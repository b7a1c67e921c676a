package cmdutil

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// notesShown is how many node names a note said of several nodes lists.
const notesShown = 3

// Notes holds a fan-out's per-node notes on stderr ("node a: skipped ..."), so that a note that
// repeats across nodes is said once, with the count and the first few node names, instead of
// once per node: 1,000 nodes without a kubelet config would otherwise print 2,000 lines that
// say two things. With -v=1 or more every note is printed as it comes, as before.
type Notes struct {
	w     io.Writer
	each  bool
	mu    sync.Mutex
	order []string
	byKey map[string]*noteGroup
}

type noteGroup struct {
	line  string // the first node's line
	nodes []string
}

// NewNotes returns the notes of a command writing to w; -v (klog verbosity 1 or more) prints
// each note at once.
func NewNotes(w io.Writer) *Notes {
	return &Notes{w: w, each: klog.V(1).Enabled(), byKey: map[string]*noteGroup{}}
}

// Addf adds a note about node; the line names it as "node NAME". A note about no node (files
// read offline) is printed at once.
func (n *Notes) Addf(node, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if n.each || node == "" {
		fmt.Fprintln(n.w, line)
		return
	}
	key := replaceName(line, node, "\x00")
	n.mu.Lock()
	defer n.mu.Unlock()
	g := n.byKey[key]
	if g == nil {
		g = &noteGroup{line: line}
		n.byKey[key] = g
		n.order = append(n.order, key)
	}
	g.nodes = append(g.nodes, node)
}

// Flush prints the notes held, each once, in the order first seen: a note of one node as it
// was added; a note of several as "N nodes (a, b, c, ...)" in place of "node NAME", and NODE in
// place of the name elsewhere in it.
func (n *Notes) Flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	grouped := false
	for _, key := range n.order {
		g := n.byKey[key]
		if len(g.nodes) == 1 {
			fmt.Fprintln(n.w, g.line)
			continue
		}
		grouped = true
		sort.Strings(g.nodes)
		names := strings.Join(g.nodes[:min(notesShown, len(g.nodes))], ", ")
		if len(g.nodes) > notesShown {
			names += ", ..."
		}
		who := fmt.Sprintf("%d nodes (%s)", len(g.nodes), names)
		line := strings.Replace(key, "node \x00", who, 1)
		if line == key { // the line does not say "node NAME": name them up front
			line = who + ": " + key
		}
		fmt.Fprintln(n.w, strings.ReplaceAll(line, "\x00", "NODE"))
	}
	if grouped {
		fmt.Fprintln(n.w, "(a note said of several nodes is printed once; -v=1 prints it for each)")
	}
	n.order, n.byKey = nil, map[string]*noteGroup{}
}

// replaceName replaces name in s where it stands as a whole node name, not inside a longer
// one (node "a" is not replaced in "a-1" nor in "data").
func replaceName(s, name, with string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, name)
		if i < 0 {
			break
		}
		end := i + len(name)
		if (i == 0 || !nameByte(s[i-1])) && (end == len(s) || !nameByte(s[end]) || s[end] == '.' && (end+1 == len(s) || !nameByte(s[end+1]))) {
			b.WriteString(s[:i] + with)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// nameByte reports a byte that can be part of a node name (a DNS subdomain).
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}
