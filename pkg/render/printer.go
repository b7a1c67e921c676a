// Package render prints what nodestate returns: kubectl-style tables, or json/yaml for scripts.
// It knows nodestate's results and writers, and imports no engine (the layering test checks):
// names of pods come in through the PodNames interface.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"sigs.k8s.io/yaml"
)

// Format is an output format, as in kubectl's -o.
type Format string

// The output formats.
const (
	Table Format = ""
	Wide  Format = "wide"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// Formats lists the accepted -o values.
var Formats = []string{string(Wide), string(JSON), string(YAML)}

// ParseFormat validates an -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, Wide, JSON, YAML:
		return f, nil
	}
	return "", fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", s, strings.Join(Formats, ","))
}

// Options tune the printers.
type Options struct {
	Format   Format
	NoHeader bool
	// ShowNode adds a NODE column (more than one node, or a live node).
	ShowNode bool
	// Stream prints a table in blocks as nodes complete: columns get fixed widths (NodeWidth
	// for NODE) so the blocks line up; set NoHeader after the first block.
	Stream    bool
	NodeWidth int
	// Continued marks a later block of a streamed output (see FleetWriter): the blocks of
	// doctor's default format are set apart by a blank line.
	Continued bool
	// Sources adds AGE and FROM columns: how old each row's answer is and where it came from
	// (a fleet read answered from node conditions or debug pods).
	Sources bool
	// Devices shows admit's DEVICES column from the first block on: the pods ask for
	// device-plugin resources (a streamed table cannot add a column later).
	Devices bool
	// List, when set, receives json/yaml items instead of a whole list being printed per call:
	// a command streaming many nodes prints each node's items into it (see ListWriter).
	List *ListWriter[any]
}

// List is the json/yaml envelope of every command's rows.
type List[T any] struct {
	Kind  string `json:"kind"`
	Items []T    `json:"items"`
}

// printStructured prints items as json or yaml; it reports false for table formats.
func printStructured[T any](w io.Writer, o Options, kind string, items []T) (bool, error) {
	if o.List != nil && (o.Format == JSON || o.Format == YAML) {
		if o.List.kind == "" {
			o.List.kind = kind
		}
		for _, it := range items {
			if err := o.List.Add(it); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if items == nil {
		items = []T{}
	}
	list := List[T]{Kind: kind, Items: items}
	switch o.Format {
	case JSON:
		b, err := json.MarshalIndent(list, "", "    ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(w, string(b))
		return true, err
	case YAML:
		b, err := yaml.Marshal(list)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// ListWriter writes the json/yaml List envelope of printStructured incrementally, items as
// they come, so a command reading many nodes need not hold every node's items (and models)
// until the end. The bytes are those printStructured writes for all the items at once: each
// item is rendered inside a one-item List and cut out of it, so it gets the same indentation
// (and yaml line folding) as in the whole list.
type ListWriter[T any] struct {
	w      io.Writer
	format Format
	kind   string
	n      int
}

// NewListWriter returns a ListWriter for o's format, or nil for table formats. kind may be ""
// when the printer the ListWriter is passed to (as Options.List) names it.
func NewListWriter[T any](w io.Writer, o Options, kind string) *ListWriter[T] {
	if o.Format != JSON && o.Format != YAML {
		return nil
	}
	return &ListWriter[T]{w: w, format: o.Format, kind: kind}
}

// jsonItemsOpen and jsonItemsClose surround the items in MarshalIndent's output of a List.
const (
	jsonItemsOpen  = "\n    \"items\": [\n"
	jsonItemsClose = "\n    ]\n}"
)

// Add writes items.
func (l *ListWriter[T]) Add(items ...T) error {
	for _, item := range items {
		one := List[T]{Kind: l.kind, Items: []T{item}}
		var text string
		switch l.format {
		case JSON:
			b, err := json.MarshalIndent(one, "", "    ")
			if err != nil {
				return err
			}
			s := string(b)
			start, end := strings.Index(s, jsonItemsOpen), strings.LastIndex(s, jsonItemsClose)
			if start < 0 || end < start {
				return fmt.Errorf("render: unexpected json list layout")
			}
			item := s[start+len(jsonItemsOpen) : end]
			switch {
			case l.n == 0:
				text = s[:start] + jsonItemsOpen + item
			default:
				text = ",\n" + item
			}
		case YAML:
			b, err := yaml.Marshal(one)
			if err != nil {
				return err
			}
			s := string(b)
			const open = "items:\n"
			end := strings.LastIndex(s, "kind: ")
			if !strings.HasPrefix(s, open) || end < 0 {
				return fmt.Errorf("render: unexpected yaml list layout")
			}
			text = s[len(open):end]
			if l.n == 0 {
				text = open + text
			}
		}
		if _, err := io.WriteString(l.w, text); err != nil {
			return err
		}
		l.n++
	}
	return nil
}

// Empty reports whether nothing was added yet.
func (l *ListWriter[T]) Empty() bool { return l.n == 0 }

// Close ends the list.
func (l *ListWriter[T]) Close() error {
	var tail string
	switch {
	case l.format == JSON && l.n == 0:
		b, err := json.MarshalIndent(List[T]{Kind: l.kind, Items: []T{}}, "", "    ")
		if err != nil {
			return err
		}
		tail = string(b) + "\n"
	case l.format == JSON:
		tail = jsonItemsClose + "\n"
	case l.n == 0:
		b, err := yaml.Marshal(List[T]{Kind: l.kind, Items: []T{}})
		if err != nil {
			return err
		}
		tail = string(b)
	default:
		b, err := yaml.Marshal(struct {
			Kind string `json:"kind"`
		}{l.kind})
		if err != nil {
			return err
		}
		tail = string(b)
	}
	_, err := io.WriteString(l.w, tail)
	return err
}

// FleetWriter prints a fleet's results as each node's comes in, so that nothing is held until
// the end and memory stays flat with the number of nodes: json and yaml items go into one List
// written as it grows (ListWriter: the same bytes as the whole list printed at once, so the
// output stays one valid document), table rows in blocks on fixed column widths
// (Options.Stream), the header once. print is the command's printer of a slice of results.
type FleetWriter[T any] struct {
	// NodeWidth is the NODE column's width, set before the first Add (the longest node name).
	NodeWidth int
	w         io.Writer
	o         Options
	print     func(io.Writer, Options, []T) error
	n         int
}

// NewFleetWriter returns a FleetWriter printing with print in o's format; kind names the
// json/yaml List.
func NewFleetWriter[T any](w io.Writer, o Options, kind string, print func(io.Writer, Options, []T) error) *FleetWriter[T] {
	o.Stream = true
	o.List = NewListWriter[any](w, o, kind)
	return &FleetWriter[T]{w: w, o: o, print: print}
}

// Add prints one node's results (verify's rows, doctor's one answer); none prints nothing.
func (f *FleetWriter[T]) Add(items ...T) error {
	if len(items) == 0 {
		return nil
	}
	o := f.o
	o.NodeWidth = f.NodeWidth
	if f.n > 0 {
		o.NoHeader, o.Continued = true, true
	}
	f.n++
	return f.print(f.w, o, items)
}

// Close ends the json/yaml List (an empty one when nothing was added).
func (f *FleetWriter[T]) Close() error {
	if f.o.List == nil {
		return nil
	}
	return f.o.List.Close()
}

// table is a kubectl-looking table: no borders, left aligned, three spaces between columns.
type table struct {
	w       io.Writer
	headers []string
	rows    [][]string
	o       Options
	// widths pads columns (after NODE) when streaming; the last column is never padded.
	widths []int
}

func newTable(w io.Writer, o Options, headers ...string) *table {
	if o.ShowNode {
		headers = append([]string{"NODE"}, headers...)
	}
	return &table{w: w, headers: headers, o: o}
}

// add appends a row; node is dropped when the NODE column is not shown.
func (t *table) add(node string, cells ...string) {
	if t.o.ShowNode {
		cells = append([]string{node}, cells...)
	}
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	t.rows = append(t.rows, cells)
}

// fixedWidths sets the streaming widths of the columns after NODE.
func (t *table) fixedWidths(w ...int) *table {
	if t.o.Stream {
		t.widths = w
		if t.o.ShowNode {
			t.widths = append([]int{t.o.NodeWidth}, w...)
		}
	}
	return t
}

func (t *table) pad(cells []string) []string {
	for i := range cells {
		if i < len(t.widths) && i < len(cells)-1 && len(cells[i]) < t.widths[i] {
			cells[i] += strings.Repeat(" ", t.widths[i]-len(cells[i]))
		}
	}
	return cells
}

func (t *table) render() {
	if t.widths != nil {
		t.headers = t.pad(t.headers)
		for i := range t.rows {
			t.rows[i] = t.pad(t.rows[i])
		}
	}
	var buf bytes.Buffer
	defer func() { writeTrimmed(t.w, buf.Bytes()) }()
	tw := tablewriter.NewWriter(&buf)
	if !t.o.NoHeader {
		tw.SetHeader(t.headers)
	}
	tw.SetAutoWrapText(false)
	tw.SetAutoFormatHeaders(false)
	tw.SetHeaderAlignment(tablewriter.ALIGN_LEFT)
	tw.SetAlignment(tablewriter.ALIGN_LEFT)
	tw.SetCenterSeparator("")
	tw.SetColumnSeparator("")
	tw.SetRowSeparator("")
	tw.SetHeaderLine(false)
	tw.SetBorder(false)
	tw.SetTablePadding("   ")
	tw.SetNoWhiteSpace(true)
	tw.AppendBulk(t.rows)
	tw.Render()
}

// writeTrimmed drops the padding tablewriter leaves at the end of each line.
func writeTrimmed(w io.Writer, b []byte) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		trimmed := bytes.TrimRight(line, " \n")
		if len(trimmed) > 0 || len(line) > 0 && line[0] == '\n' {
			w.Write(append(trimmed, '\n'))
		}
	}
}
