// Package render prints decoded checkpoints: kubectl-style tables, or json/yaml for scripts.
// It knows the decode models and writers, nothing of files, pods or clusters: names of pods come
// in through the PodNames interface.
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
}

// List is the json/yaml envelope of every command's rows.
type List[T any] struct {
	Kind  string `json:"kind"`
	Items []T    `json:"items"`
}

// printStructured prints items as json or yaml; it reports false for table formats.
func printStructured[T any](w io.Writer, o Options, kind string, items []T) (bool, error) {
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
