package render

import (
	"bytes"
	"encoding/json"
	"io"
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

// A fleet printed node by node as results come (FleetWriter) reads as the fleet printed whole:
// the same bytes in json, yaml and doctor's blocks; in tables, one header and every row.
func TestFleetWriterMatchesWholeFleet(t *testing.T) {
	var doctor []DoctorResult
	if err := json.Unmarshal([]byte(`[
		{"node": "node-a", "kubeletStart": {"starts": true, "phase": "ok", "kubelet": "v1.37.1", "cpu": {"policy": "static", "phase": "ok"}, "memory": {"policy": "None", "phase": "ok"}}, "findings": []},
		{"node": "node-b", "error": "the debug pod did not start"},
		{"node": "node-c", "kubeletStart": {"phase": "not-predicted"}, "findings": [{"severity": "warning", "check": "stale-pod", "file": "cpu_manager_state", "entry": "pod/app", "message": "a pod that is gone", "fix": "nothing: the kubelet drops it"}]}
	]`), &doctor); err != nil {
		t.Fatal(err)
	}
	admit := []AdmitResult{
		{Node: "node-a", Error: "no kubelet config: give --kubelet-config"},
		{Node: "node-b", Error: "no kubelet config: give --kubelet-config"},
	}
	for _, format := range []Format{Table, Wide, JSON, YAML} {
		o := Options{Format: format, ShowNode: true}
		check := func(name string, whole, streamed string) {
			t.Helper()
			if format == JSON || format == YAML || format == Table && name == "doctor" {
				if whole != streamed {
					t.Errorf("%s -o %q: streamed\n%s\nwant\n%s", name, format, streamed, whole)
				}
				return
			}
			// Tables stream on fixed widths: the same header once and the same cells.
			if strings.Join(strings.Fields(whole), " ") != strings.Join(strings.Fields(streamed), " ") {
				t.Errorf("%s -o %q: streamed\n%s\nwant\n%s", name, format, streamed, whole)
			}
		}
		check("doctor", printWhole(t, o, DoctorFindings, doctor), printFleet(t, o, DoctorListKind, DoctorFindings, doctor))
		if format != Wide { // admit prints no wide table
			check("admit", printWhole(t, o, Admit, admit), printFleet(t, o, AdmitListKind, Admit, admit))
		}
	}
	// Nothing added: an empty list of the kind, as printing no result whole.
	var whole, streamed bytes.Buffer
	if _, err := printStructured(&whole, Options{Format: JSON}, AdmitListKind, []AdmitResult(nil)); err != nil {
		t.Fatal(err)
	}
	if err := NewFleetWriter(&streamed, Options{Format: JSON, ShowNode: true}, AdmitListKind, Admit).Close(); err != nil {
		t.Fatal(err)
	}
	if whole.String() != streamed.String() {
		t.Errorf("empty: %q, want %q", streamed.String(), whole.String())
	}
}

func printWhole[T any](t *testing.T, o Options, print func(io.Writer, Options, []T) error, items []T) string {
	t.Helper()
	var b bytes.Buffer
	if err := print(&b, o, items); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func printFleet[T any](t *testing.T, o Options, kind string, print func(io.Writer, Options, []T) error, items []T) string {
	t.Helper()
	var b bytes.Buffer
	fw := NewFleetWriter(&b, o, kind, print)
	fw.NodeWidth = 6
	for _, it := range items {
		if err := fw.Add(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
