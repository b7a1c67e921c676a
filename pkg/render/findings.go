package render

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// DefaultWidth is the width text is wrapped to when the output is not a terminal and COLUMNS
// is not set.
const DefaultWidth = 80

// Width is the width to wrap text for w: COLUMNS when set, else the terminal's width when w is
// one, else DefaultWidth.
func Width(w io.Writer) int {
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	return DefaultWidth
}

// DoctorFindings prints doctor's answer as kubectl describe prints events: one block per
// finding, its severity, check and place on one line, then the message and the fix wrapped to
// Width(w). Several nodes print one section each, headed by the node's name. json, yaml and
// wide go to Doctor.
func DoctorFindings(w io.Writer, o Options, results []DoctorResult) error {
	if o.Format != Table {
		return Doctor(w, o, results)
	}
	width := Width(w)
	var b strings.Builder
	for i, r := range results {
		indent := ""
		if o.ShowNode {
			if i > 0 || o.Continued {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "Node: %s\n", r.Node)
			indent = "  "
		}
		for j, row := range doctorRows(r) {
			if j > 0 {
				b.WriteString("\n")
			}
			writeFinding(&b, width, indent, row)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFinding writes one block: "severity  check  file  entry", then the message and the fix
// indented under it.
func writeFinding(b *strings.Builder, width int, indent string, row findingRow) {
	head := fmt.Sprintf("%-7s  %s", row.severity, row.check)
	for _, p := range []string{row.file, row.entry} {
		if p != "" {
			head += "  " + p
		}
	}
	b.WriteString(indent + head + "\n")
	body := indent + "  "
	wrap(b, width, body, body, row.message)
	if row.fix != "" {
		wrap(b, width, body+"Fix: ", body+"     ", row.fix)
	}
}

// wrap writes text's words in lines of at most width columns, the first line starting with
// first and the others with rest; a word longer than a line gets a line of its own. It writes
// into b as it goes: a finding's text is wrapped on every node of a fleet.
func wrap(b *strings.Builder, width int, first, rest, text string) {
	b.WriteString(first)
	n, empty := utf8.RuneCountInString(first), true
	restN := utf8.RuneCountInString(rest)
	for word := range strings.FieldsSeq(text) {
		wn := utf8.RuneCountInString(word)
		if !empty && n+1+wn > width {
			b.WriteString("\n")
			b.WriteString(rest)
			n, empty = restN, true
		}
		if !empty {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += wn
		empty = false
	}
	b.WriteString("\n")
}
