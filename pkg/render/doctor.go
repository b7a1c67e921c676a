package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// DoctorResult is doctor's answer for one node, as `doctor -o json|yaml` prints it.
type DoctorResult struct {
	Node string `json:"node,omitempty"`
	nodestate.DoctorPrediction
	// RestartOutlook is what the node's pods become if it reboots and if its kubelet restarts
	// (live nodes whose kubelet starts), pod by pod; the findings say it in one line each.
	RestartOutlook []nodestate.RestartOutlook `json:"restartOutlook,omitempty"`
	// Error is why the node could not be read (then nothing else is known).
	Error string `json:"error,omitempty"`
}

// DoctorListKind is the kind of doctor's json/yaml list.
const DoctorListKind = "DoctorResultList"

// Doctor prints a table (the default format's blocks are DoctorFindings'), one row for the
// start prediction and one per finding; json and yaml print the result itself for one node
// (offline), a list for several.
func Doctor(w io.Writer, o Options, results []DoctorResult) error {
	if len(results) == 1 && !o.ShowNode && (o.Format == JSON || o.Format == YAML) {
		return printOne(w, o.Format, results[0])
	}
	if done, err := printStructured(w, o, DoctorListKind, results); done {
		return err
	}
	headers := []string{"SEVERITY", "CHECK", "FILE", "ENTRY", "MESSAGE", "FIX"}
	t := newTable(w, o, headers...).fixedWidths(8, 22, 28, 24, 80)
	for _, r := range results {
		for _, row := range doctorRows(r) {
			t.add(r.Node, row.severity, row.check, row.file, row.entry, text.OneLine(row.message), text.OneLine(row.fix))
		}
	}
	t.render()
	return nil
}

// findingRow is one line of doctor's answer: the start prediction or a finding.
type findingRow struct{ severity, check, file, entry, message, fix string }

// doctorRows is a node's answer: why it was not read, else the start row and one per finding.
func doctorRows(r DoctorResult) []findingRow {
	if r.Error != "" {
		return []findingRow{{severity: "error", check: "read", message: r.Error}}
	}
	rows := []findingRow{startRow(r.KubeletStart)}
	for _, f := range r.Findings {
		if f.Check == "kubelet-start" {
			continue // the start row says it
		}
		rows = append(rows, findingRow{string(f.Severity), f.Check, f.File, f.Entry, f.Message, f.Fix})
	}
	return rows
}

func startRow(s nodestate.KubeletStart) findingRow {
	switch {
	case s.Phase == nodestate.PhaseNotPredicted:
		return findingRow{severity: "info", check: "kubelet-start", message: "start not predicted (see the notes above)"}
	case s.Starts:
		return findingRow{severity: "ok", check: "kubelet-start", message: fmt.Sprintf("kubelet %s starts: the CPU manager (%s) and memory manager (%s) accept the state", s.Kubelet, s.CPU.Policy, s.Memory.Policy)}
	}
	file := "kubelet-config"
	switch s.Phase {
	case nodestate.PhaseCPUStart:
		file = "cpu_manager_state"
	case nodestate.PhaseMemoryStart:
		file = "memory_manager_state"
	}
	fix := ""
	if s.Fix != nil {
		fix = s.Fix.Text
	}
	msg := fmt.Sprintf("kubelet %s will not start: %s", s.Kubelet, s.Error)
	if s.Memory != nil && s.Phase == nodestate.PhaseMemoryStart && len(s.Memory.Details) > 0 {
		msg += " (" + strings.Join(s.Memory.Details, "; ") + ")"
	}
	return findingRow{"error", "kubelet-start", file, s.Phase, msg, fix}
}

func printOne(w io.Writer, f Format, r any) error {
	var b []byte
	var err error
	if f == JSON {
		b, err = json.MarshalIndent(r, "", "    ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(r)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
