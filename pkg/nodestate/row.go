package nodestate

import (
	"encoding/json"
	"fmt"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// FileRow is one row of verify: one file of one node with the decoder's Report, or, when the
// file was never decoded, why not (NotDecoded), or, for all of a node's files, the monitor's
// sound answer (Monitor, verify --all-nodes). Exactly one of the three is set.
type FileRow struct {
	Node       string
	Report     *decode.Report
	NotDecoded *NotDecoded
	Monitor    *MonitorAnswer
	// Source is where a fleet read's row came from, and how old it is (verify --all-nodes).
	Source *Provenance
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
	// Their causes: the few words a row's sentence has room for.
	CauseOversized = fmt.Sprintf("over the %d MiB cap; not read", decode.MaxFileSize>>20)
	CauseTempFile  = "temp file of an interrupted write; safe to delete"
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
	return FileRow{Node: node, NotDecoded: &NotDecoded{Reason: Oversized, File: file, Kind: kind, Cause: CauseOversized, Error: MsgOversized}}
}

// TempFileRow is the row of a leftover temp file.
func TempFileRow(node, file string) FileRow {
	return FileRow{Node: node, NotDecoded: &NotDecoded{Reason: TempFile, File: file, Cause: CauseTempFile, Error: MsgTempFile}}
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
	switch {
	case r.Report != nil:
		return r.Report.File
	case r.Monitor != nil:
		return "-"
	}
	return r.NotDecoded.File
}

// Kind is the row's file kind ("" when not known).
func (r FileRow) Kind() decode.Kind {
	switch {
	case r.Report != nil:
		return r.Report.Kind
	case r.Monitor != nil:
		return ""
	}
	return r.NotDecoded.Kind
}

// Verdict is the report's verdict; a row never decoded is unreadable, or not-read when nothing
// is wrong with it (a temp file, a node skipped by design).
func (r FileRow) Verdict() decode.Verdict {
	switch {
	case r.Report != nil:
		return r.Report.Verdict
	case r.Monitor != nil:
		return decode.Valid // only a sound answer is a row
	}
	switch r.NotDecoded.Reason {
	case TempFile, NodeSkipped:
		return decode.NotRead
	}
	return decode.Unreadable
}

// Kubelet is the kubelet the verdict is for ("" when not decoded).
func (r FileRow) Kubelet() string {
	if r.Report == nil {
		return ""
	}
	return r.Report.Reader
}

// Why is the short reason a file is not valid: the cause, else the error.
func (r FileRow) Why() string {
	cause, err := "", ""
	switch {
	case r.Report != nil:
		cause, err = r.Report.Cause, r.Report.Error
	case r.Monitor != nil:
		cause = r.Monitor.Message
	default:
		cause, err = r.NotDecoded.Cause, r.NotDecoded.Error
	}
	if cause != "" {
		return cause
	}
	return err
}

// Model is the decoded model, zero when there is none.
func (r FileRow) Model() decode.Model {
	if r.Report == nil {
		return decode.Model{}
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
	Monitor *MonitorAnswer `json:"monitor,omitempty"`
	Source  *Provenance    `json:"source,omitempty"`
}

// MarshalJSON writes the node and the report's fields, or their not-decoded equivalents.
func (r FileRow) MarshalJSON() ([]byte, error) {
	switch {
	case r.Report != nil:
		return json.Marshal(struct {
			Node string `json:"node,omitempty"`
			*decode.Report
			Source *Provenance `json:"source,omitempty"`
		}{r.Node, r.Report, r.Source})
	case r.Monitor != nil:
		return json.Marshal(notDecodedJSON{Node: r.Node, File: r.File(), Verdict: r.Verdict(), Cause: r.Monitor.Message, Monitor: r.Monitor, Source: r.Source})
	}
	n := r.NotDecoded
	return json.Marshal(notDecodedJSON{Node: r.Node, File: n.File, Kind: n.Kind, Verdict: r.Verdict(), Error: n.Error, Cause: n.Cause, Source: r.Source})
}
