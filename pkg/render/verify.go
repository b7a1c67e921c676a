package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// FileRow is one row of verify: one file of one node with the decoder's Report, or, when the
// file was never decoded, why not (NotDecoded). Exactly one of the two is set.
type FileRow struct {
	Node       string
	Report     *decode.Report
	NotDecoded *NotDecoded
}

// NotDecodedReason is why a row has no decoder report.
type NotDecodedReason string

// The reasons a file (or a whole node) has no report.
const (
	Oversized      NotDecodedReason = "oversized"       // over the per-file cap: not read
	TempFile       NotDecodedReason = "temp-file"       // a leftover temp file, which no kubelet reads
	NodeUnreadable NotDecodedReason = "node-unreadable" // the node could not be read at all
	NodeSkipped    NotDecodedReason = "node-skipped"    // the node is not read by design (Windows)
)

// The messages of the not-decoded rows that do not come from an error.
var (
	MsgOversized = fmt.Sprintf("larger than the %d MiB cap for a checkpoint; not read", decode.MaxFileSize>>20)
	MsgTempFile  = "leftover temp file of an interrupted kubelet write; the kubelet ignores it and it is safe to delete"
)

// NotDecoded is a row's state when there is no report.
type NotDecoded struct {
	Reason NotDecodedReason
	File   string      // the file, or "-" for a whole node
	Kind   decode.Kind // the file's kind when known by its name
	Cause  string      // the few words the table has room for
	Error  string      // the whole explanation
}

// OversizedRow is the row of a file over the size cap; its kind lets the show commands warn
// about (and count) an oversized file of theirs.
func OversizedRow(node, file string, kind decode.Kind) FileRow {
	return FileRow{Node: node, NotDecoded: &NotDecoded{Reason: Oversized, File: file, Kind: kind, Cause: MsgOversized, Error: MsgOversized}}
}

// TempFileRow is the row of a leftover temp file.
func TempFileRow(node, file string) FileRow {
	return FileRow{Node: node, NotDecoded: &NotDecoded{Reason: TempFile, File: file, Error: MsgTempFile}}
}

// NodeFailedRow is the row of a node that was not read: a short reason in the table, the
// whole explanation with its fix in -o wide and json. skipped marks a node not read by design.
func NodeFailedRow(node string, skipped bool, short, explanation string) FileRow {
	reason := NodeUnreadable
	if skipped {
		reason = NodeSkipped
	}
	return FileRow{Node: node, NotDecoded: &NotDecoded{Reason: reason, File: "-", Cause: short, Error: explanation}}
}

// File is the row's file ("-" for a node that was not read).
func (r FileRow) File() string {
	if r.Report != nil {
		return r.Report.File
	}
	return r.NotDecoded.File
}

// Kind is the row's file kind ("" when not known).
func (r FileRow) Kind() decode.Kind {
	if r.Report != nil {
		return r.Report.Kind
	}
	return r.NotDecoded.Kind
}

// Verdict is the report's verdict; a row never decoded is unreadable, or not-read when nothing
// is wrong with it (a temp file, a node skipped by design).
func (r FileRow) Verdict() decode.Verdict {
	if r.Report != nil {
		return r.Report.Verdict
	}
	switch r.NotDecoded.Reason {
	case TempFile, NodeSkipped:
		return decode.NotRead
	}
	return decode.Unreadable
}

// Reader is the kubelet the verdict is for ("" when not decoded).
func (r FileRow) Reader() string {
	if r.Report == nil {
		return ""
	}
	return r.Report.Reader
}

// Why is the short reason a file is not valid: the cause, else the error.
func (r FileRow) Why() string {
	cause, err := "", ""
	if r.Report != nil {
		cause, err = r.Report.Cause, r.Report.Error
	} else {
		cause, err = r.NotDecoded.Cause, r.NotDecoded.Error
	}
	if cause != "" {
		return cause
	}
	return err
}

// Decoded is the decoded model, nil when there is none.
func (r FileRow) Decoded() any {
	if r.Report == nil {
		return nil
	}
	return r.Report.Decoded
}

// notDecodedJSON is a not-decoded row on the wire: the report's fields that apply, so scripts
// read every row alike.
type notDecodedJSON struct {
	Node    string         `json:"node,omitempty"`
	File    string         `json:"file"`
	Kind    decode.Kind    `json:"kind"`
	Format  string         `json:"format"`
	Verdict decode.Verdict `json:"verdict"`
	Reader  string         `json:"reader"`
	Error   string         `json:"error,omitempty"`
	Cause   string         `json:"cause,omitempty"`
}

// MarshalJSON writes the node and the report's fields, or their not-decoded equivalents.
func (r FileRow) MarshalJSON() ([]byte, error) {
	if r.Report != nil {
		return json.Marshal(struct {
			Node string `json:"node,omitempty"`
			*decode.Report
		}{r.Node, r.Report})
	}
	n := r.NotDecoded
	return json.Marshal(notDecodedJSON{Node: r.Node, File: n.File, Kind: n.Kind, Verdict: r.Verdict(), Error: n.Error, Cause: n.Cause})
}

// VerifyListKind is the kind of verify's json/yaml list (see ListWriter).
const VerifyListKind = "CheckpointVerificationList"

// Verify prints one row per file: its format, verdict and checksums.
func Verify(w io.Writer, o Options, rows []FileRow) error {
	if done, err := printStructured(w, o, VerifyListKind, rows); done {
		return err
	}
	headers := []string{"FILE", "FORMAT", "VERDICT", "CHECKSUMS", "DETAIL"}
	if o.Format == Wide {
		headers = append(headers, "KUBELET", "STORED/COMPUTED", "ERROR")
	}
	t := newTable(w, o, headers...).fixedWidths(42, 13, 14, 42, 90, 34, 45)
	for _, r := range rows {
		var cells []string
		if rep := r.Report; rep != nil {
			cells = []string{rep.File, rep.Format, string(rep.Verdict), checksumSummary(rep.Kind, rep.Verdict, rep.Checksums), detail(rep)}
			if o.Format == Wide {
				cells = append(cells, rep.Reader, storedComputed(rep), oneLine(rep.Error))
			}
		} else {
			n := r.NotDecoded
			cells = []string{n.File, "", string(r.Verdict()), checksumSummary(n.Kind, r.Verdict(), nil), oneLine(r.Why())}
			if o.Format == Wide {
				cells = append(cells, "", "", oneLine(n.Error))
			}
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}

// checksumSummary says, per stored checksum, whether it matched: "dataChecksum ok, checksum MISMATCH".
func checksumSummary(kind decode.Kind, verdict decode.Verdict, checksums []decode.ChecksumResult) string {
	var parts []string
	for _, c := range checksums {
		state := "ok"
		switch {
		case c.ZeroAccepted:
			state = "0-accepted"
		case !c.Match:
			state = "MISMATCH"
		}
		parts = append(parts, c.Field+" "+state)
	}
	if len(parts) == 0 && kind == decode.KindDRAHealth && verdict != decode.NotRead {
		return "none (no checksum)"
	}
	return strings.Join(parts, ", ")
}

// detail is the short why: the rule that accepted the file, or the cause it was refused.
func detail(r *decode.Report) string {
	if r.Verdict == decode.Valid {
		parts := []string{}
		if r.Rule != "" {
			parts = append(parts, r.Rule)
		}
		if len(r.Notes) > 0 {
			parts = append(parts, r.Notes[0])
		}
		return strings.Join(parts, "; ")
	}
	if r.Cause != "" {
		return oneLine(r.Cause)
	}
	return oneLine(r.Error)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// storedComputed lists "stored/computed" per checksum, for -o wide.
func storedComputed(r *decode.Report) string {
	var parts []string
	for _, c := range r.Checksums {
		parts = append(parts, fmt.Sprintf("%d/%d", c.Stored, c.Computed))
	}
	return strings.Join(parts, ", ")
}
