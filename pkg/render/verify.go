package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// FileResult is one file's report on one node, as verify prints it.
type FileResult struct {
	Node string `json:"node,omitempty"`
	*decode.Report
}

// VerifyListKind is the kind of verify's json/yaml list (see ListWriter).
const VerifyListKind = "CheckpointVerificationList"

// Verify prints one row per file: its format, verdict and checksums.
func Verify(w io.Writer, o Options, results []FileResult) error {
	if done, err := printStructured(w, o, VerifyListKind, results); done {
		return err
	}
	headers := []string{"FILE", "FORMAT", "VERDICT", "CHECKSUMS", "DETAIL"}
	if o.Format == Wide {
		headers = append(headers, "KUBELET", "STORED/COMPUTED", "ERROR")
	}
	t := newTable(w, o, headers...).fixedWidths(42, 13, 14, 42, 90, 34, 45)
	for _, r := range results {
		cells := []string{r.File, r.Format, string(r.Verdict), checksumSummary(r.Report), detail(r.Report)}
		if o.Format == Wide {
			cells = append(cells, r.Reader, storedComputed(r.Report), oneLine(r.Error))
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}

// checksumSummary says, per stored checksum, whether it matched: "dataChecksum ok, checksum MISMATCH".
func checksumSummary(r *decode.Report) string {
	var parts []string
	for _, c := range r.Checksums {
		state := "ok"
		switch {
		case c.ZeroAccepted:
			state = "0-accepted"
		case !c.Match:
			state = "MISMATCH"
		}
		parts = append(parts, c.Field+" "+state)
	}
	if len(parts) == 0 && r.Kind == decode.KindDRAHealth && r.Verdict != decode.NotRead {
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
