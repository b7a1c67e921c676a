package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// VerifyListKind is the kind of verify's json/yaml list (see ListWriter).
const VerifyListKind = "CheckpointVerificationList"

// Verify prints one row per file: its format, the verdict, and a sentence saying what was
// checked, by which kubelet, and what it means. -o wide trades the sentence for the facts behind
// it (the kubelet, the rule id that accepted the file, each checksum with its values when they
// differ) so that a row fits a 160-column terminal; -o json has everything, the kubelet's error
// word for word included.
func Verify(w io.Writer, o Options, rows []nodestate.FileRow) error {
	if done, err := printStructured(w, o, VerifyListKind, rows); done {
		return err
	}
	headers := []string{"FILE", "FORMAT", "VERDICT", "MEANING"}
	widths := []int{42, 13, 14}
	if o.Format == Wide {
		headers = []string{"FILE", "FORMAT", "VERDICT", "KUBELET", "RULE", "DETAIL"}
		// Streamed live rows line up on these widths; narrow enough to keep a row within 160
		// columns (a rarer longer cell, "unknown-format", only shifts its own row).
		widths = []int{42, 13, 10, 8, 11}
	}
	if o.Sources {
		// AGE and FROM before the last, free-text column.
		last := len(headers) - 1
		headers = append(headers[:last:last], "AGE", "FROM", headers[last])
		widths = append(widths, 5, 10)
	}
	t := newTable(w, o, headers...).fixedWidths(widths...)
	add := func(row nodestate.FileRow, cells ...string) {
		if o.Sources {
			last := len(cells) - 1
			from := "-"
			if row.Source != nil {
				from = string(row.Source.From)
			}
			cells = append(cells[:last:last], row.Source.Age(), from, cells[last])
		}
		t.add(row.Node, cells...)
	}
	for _, row := range rows {
		r := row.Report
		if r == nil {
			// Never decoded (a file over the cap, a temp file, a node not read), or answered by
			// the monitor's condition: why, or what it says.
			if o.Format == Wide {
				add(row, row.File(), "", string(row.Verdict()), "", "", text.OneLine(row.Why()))
			} else {
				add(row, row.File(), "", string(row.Verdict()), text.OneLine(row.Why()))
			}
			continue
		}
		if o.Format == Wide {
			// A rule id equal to the format id would only repeat the FORMAT cell.
			rule, _, _ := strings.Cut(r.Rule, " (")
			if rule != "" && rule == r.Format {
				rule = "= format"
			}
			detail := checksumValues(r)
			if n := len(r.Dropped); n > 0 {
				detail += fmt.Sprintf("; %d %s dropped", n, text.Plural(n, "entry", "entries"))
			}
			if r.Reader == "" {
				detail = Meaning(r) // not judged by a kubelet: why
			}
			add(row, r.File, r.Format, string(r.Verdict), r.Reader, rule, detail)
			continue
		}
		add(row, r.File, r.Format, string(r.Verdict), Meaning(r))
	}
	t.render()
	return nil
}

// fieldName is a checksum's JSON field as a sentence names it: "checksum" for the device
// file's "Checksum" too, so that one file does not read differently from the next.
func fieldName(c nodestate.ChecksumResult) string {
	if c.Field == "" {
		return ""
	}
	return strings.ToLower(c.Field[:1]) + c.Field[1:]
}

// checksumValues is -o wide's DETAIL of a judged file: each checksum ok, 0 (accepted unverified), or its
// stored/computed values when they differ.
func checksumValues(r *nodestate.Report) string {
	var parts []string
	for _, c := range r.Checksums {
		switch {
		case c.ZeroAccepted:
			parts = append(parts, fieldName(c)+" 0 (accepted)")
		case c.Match:
			parts = append(parts, fieldName(c)+" ok")
		default:
			parts = append(parts, fmt.Sprintf("%s %d/%d", fieldName(c), c.Stored, c.Computed))
		}
	}
	if len(parts) == 0 && r.Kind == nodestate.KindDRAHealth && r.Verdict != nodestate.NotRead {
		return "none (no checksum)"
	}
	return strings.Join(parts, "; ")
}

// Meaning is the sentence of a file's row: what was checked, by which kubelet, and what it means.
func Meaning(r *nodestate.Report) string {
	if r.Reader == "" {
		// Not judged by a kubelet: a node that could not be read, a temp file, an unknown file.
		if r.Cause != "" {
			return text.OneLine(r.Cause)
		}
		return text.OneLine(r.Error)
	}
	k := "kubelet " + r.Reader
	var matched, mismatched []string
	zero := false
	for _, c := range r.Checksums {
		switch {
		case c.ZeroAccepted:
			zero = true
		case c.Match:
			matched = append(matched, fieldName(c))
		default:
			mismatched = append(mismatched, fieldName(c))
		}
	}
	var s string
	switch r.Verdict {
	case nodestate.Valid:
		switch {
		case len(r.Checksums) == 0:
			s = "no checksum to check; the JSON parses: " + k + " loads it"
		case zero:
			s = "checksum is 0, which " + k + " accepts unverified: it restores the file"
		case len(mismatched) == 0:
			s = checked(matched) + ": " + k + " restores it"
		default:
			s = checked(matched) + ": " + k + " restores it; " + strings.Join(mismatched, ", ") + " does not match"
			if b := r.Breaks; b != nil {
				if b.Older != "" {
					s += ": a downgrade to " + b.Older + " or older would refuse it"
				}
				if b.Newer != "" {
					if b.Older != "" {
						s += ", and"
					} else {
						s += ":"
					}
					s += " an upgrade to " + b.Newer + " or newer would refuse it"
				}
			}
		}
		s += droppedClause(r)
	case nodestate.Corrupt, nodestate.Unreadable:
		refuses := k + " refuses it"
		if r.Verdict == nodestate.Unreadable {
			refuses = k + " cannot decode it"
		}
		switch {
		case len(mismatched) > 0:
			s = strings.Join(mismatched, ", ") + " does not match: " + refuses
			if r.Cause != "" {
				s += " (" + text.OneLine(r.Cause) + ")"
			}
		case len(matched) > 0 && r.ReadBy != "":
			// Intact, refused all the same: the judge reads the format another way, or not at all.
			s = checked(matched) + ", but " + refuses + ": " + r.Format + " files are read by kubelet " + r.ReadBy
		default:
			s = refuses + ": " + text.OneLine(firstOf(r.Cause, r.Error))
		}
	case nodestate.NotRead:
		s = k + " does not read this file"
		if r.WrittenBy != "" {
			s += " (written by kubelet " + r.WrittenBy + ")"
		}
	default:
		s = text.OneLine(r.Error)
	}
	if r.Apart && r.WrittenBy != "" {
		s += "; left by kubelet " + r.WrittenBy + ", never rewritten since"
	}
	if r.Refused != nil {
		s += "; " + r.Refused.Effect
	}
	return s
}

// droppedClause says which entries a restore that accepts the file skips (the device manager's
// entries whose allocResp it cannot unmarshal, or that a later entry replaces); -o json has them
// all, with the kubelet's error.
func droppedClause(r *nodestate.Report) string {
	if len(r.Dropped) == 0 {
		return ""
	}
	d := r.Dropped[0]
	why := d.Error
	if d.ReplacedBy != nil {
		why = fmt.Sprintf("replaced by entry %d", *d.ReplacedBy)
	}
	s := fmt.Sprintf(", but skips %d %s (pod %s container %s %s: %s",
		len(r.Dropped), text.Plural(len(r.Dropped), "device entry", "device entries"), d.PodUID, d.ContainerName, d.ResourceName, why)
	if len(r.Dropped) > 1 {
		s += fmt.Sprintf("; and %d more", len(r.Dropped)-1)
	}
	return s + "): their devices count as free"
}

// checked says which checksums matched: "both checksums match", "dataChecksum matches".
func checked(fields []string) string {
	switch len(fields) {
	case 0:
		return "no checksum matches"
	case 1:
		return fields[0] + " matches"
	case 2:
		return "both checksums match"
	}
	return "all checksums match"
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
