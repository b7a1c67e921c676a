package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Streaming a list writes exactly what printing it whole writes, for any number of items,
// nested lists, long strings (yaml folds them by column) and multi-line strings.
func TestListWriterMatchesWholeList(t *testing.T) {
	long := strings.Repeat("a long cause that yaml may fold at its line width ", 4)
	all := []nodestate.FileRow{
		{Node: "n1", Report: &decode.Report{File: "cpu_manager_state", Kind: decode.KindCPU, Format: "cpu-v2", Verdict: decode.Valid,
			Checksums: []decode.ChecksumResult{{Field: "checksum", Rule: "r", Stored: 1, Computed: 1, Match: true}}, Notes: []string{"x", "y"}}},
		{Node: "n2", Report: &decode.Report{File: "memory_manager_state", Verdict: decode.Corrupt, Cause: long, Error: "line one\nline two\n  indented"}},
		{Node: "n3", Report: &decode.Report{File: "-", Verdict: decode.Unreadable, Error: "<html> & \"quotes\""}},
	}
	for _, format := range []Format{JSON, YAML} {
		for n := 0; n <= len(all); n++ {
			items := all[:n]
			var whole, streamed bytes.Buffer
			if _, err := printStructured(&whole, Options{Format: format}, "CheckpointVerificationList", items); err != nil {
				t.Fatal(err)
			}
			lw := NewListWriter[nodestate.FileRow](&streamed, Options{Format: format}, "CheckpointVerificationList")
			for _, it := range items {
				if err := lw.Add(it); err != nil {
					t.Fatal(err)
				}
			}
			if err := lw.Close(); err != nil {
				t.Fatal(err)
			}
			if whole.String() != streamed.String() {
				t.Errorf("%s, %d items: streamed\n%s\nwant\n%s", format, n, streamed.String(), whole.String())
			}
		}
	}
	if NewListWriter[nodestate.FileRow](&bytes.Buffer{}, Options{Format: Wide}, "X") != nil {
		t.Error("a table format got a ListWriter")
	}
}

// A printer given Options.List adds its items to the one list (naming its kind) instead of
// printing a list per call.
func TestOptionsListCollectsCalls(t *testing.T) {
	a := []nodestate.FileRow{{Node: "n1", Report: &decode.Report{File: "a", Verdict: decode.Valid}}}
	b := []nodestate.FileRow{{Node: "n2", Report: &decode.Report{File: "b", Verdict: decode.Valid}}}
	for _, format := range []Format{JSON, YAML} {
		var whole, streamed bytes.Buffer
		if err := Verify(&whole, Options{Format: format}, append(append([]nodestate.FileRow{}, a...), b...)); err != nil {
			t.Fatal(err)
		}
		o := Options{Format: format}
		o.List = NewListWriter[any](&streamed, o, "")
		for _, part := range [][]nodestate.FileRow{a, b} {
			if err := Verify(&streamed, o, part); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.List.Close(); err != nil {
			t.Fatal(err)
		}
		if whole.String() != streamed.String() {
			t.Errorf("%s: streamed\n%s\nwant\n%s", format, streamed.String(), whole.String())
		}
	}
}
