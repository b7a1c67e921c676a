package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		width      int
		want       string
	}{
		{"fits", "a b c", 20, "> a b c\n"},
		{"breaks between words", "aaa bbb ccc ddd", 10, "> aaa bbb\n. ccc ddd\n"},
		{"exactly the width", "aaaa bbb", 10, "> aaaa bbb\n"},
		{"a word longer than a line has its own", "a " + strings.Repeat("x", 12) + " b", 10, "> a\n. xxxxxxxxxxxx\n. b\n"},
		{"runs of space and newlines collapse", "a \n  b", 10, "> a b\n"},
		{"counts runes, not bytes", "ééé ééé ééé", 9, "> ééé ééé\n. ééé\n"},
	} {
		var b strings.Builder
		wrap(&b, tc.width, "> ", ". ", tc.text)
		if b.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

func TestWidth(t *testing.T) {
	t.Setenv("COLUMNS", "")
	if got := Width(&bytes.Buffer{}); got != DefaultWidth {
		t.Errorf("not a terminal: %d, want %d", got, DefaultWidth)
	}
	t.Setenv("COLUMNS", "132")
	if got := Width(&bytes.Buffer{}); got != 132 {
		t.Errorf("COLUMNS=132: %d", got)
	}
	t.Setenv("COLUMNS", "wide")
	if got := Width(&bytes.Buffer{}); got != DefaultWidth {
		t.Errorf("COLUMNS=wide: %d, want %d", got, DefaultWidth)
	}
}

// TestDoctorFindingsFit: every message and fix line fits the width (no word here is longer
// than a line; the one-line heads are short, and not wrapped), the message and fix are all
// there, and several nodes get a section each.
func TestDoctorFindingsFit(t *testing.T) {
	long := strings.Repeat("the kubelet refuses this file because of a reason ", 6)
	results := []DoctorResult{
		{Node: "a", DoctorPrediction: doctor.Result{
			KubeletStart: doctor.KubeletStart{Kubelet: "v1.37.1", Prediction: replay.Prediction{Phase: replay.PhaseCPUStart, Error: long}, Fix: &doctor.Fix{Text: "drain the node, then delete the file " + long}},
			Findings:     []doctor.Finding{{Severity: doctor.SeverityWarning, Check: "stale-pod", File: "cpu_manager_state", Entry: "pod p", Message: long}},
		}},
		{Node: "b", Error: "the debug pod did not start"},
	}
	for _, width := range []int{40, 80, 200} {
		t.Setenv("COLUMNS", strconv.Itoa(width))
		out := printed(t, func(b *bytes.Buffer) error { return DoctorFindings(b, Options{ShowNode: true}, results) })
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if strings.HasPrefix(l, "    ") && utf8.RuneCountInString(l) > width {
				t.Errorf("width %d: line of %d: %q", width, utf8.RuneCountInString(l), l)
			}
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{
			"Node: a error kubelet-start cpu_manager_state cpumanager.Start kubelet v1.37.1 will not start: " + strings.TrimSpace(long),
			"Fix: drain the node, then delete the file " + strings.TrimSpace(long),
			"warning stale-pod cpu_manager_state pod p " + strings.TrimSpace(long),
			"Node: b error read the debug pod did not start",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("width %d: lacks %q:\n%s", width, want, out)
			}
		}
	}
	// -o wide is the table, one row per finding.
	out := printed(t, func(b *bytes.Buffer) error { return DoctorFindings(b, Options{Format: Wide}, results[:1]) })
	if rs := rows(out); len(rs) != 3 || rs[0][0] != "SEVERITY" {
		t.Errorf("wide: %q", rs)
	}
}

// TestDoctorJSONRestartOutlook: -o json carries the restart outlook pod by pod beside the
// findings (the e2e compares it with the real kubelet), and leaves it out where there is none.
func TestDoctorJSONRestartOutlook(t *testing.T) {
	atRisk := nodestate.PodAtRisk{Pod: "ml/trainer", WaitsOn: []string{"nvidia.com/gpu"}, Reason: "UnexpectedAdmissionError",
		Message: "Allocate failed", StatusMessage: "Pod was rejected: Allocate failed", Owner: "ReplicaSet"}
	with := DoctorResult{Node: "a", RestartOutlook: []nodestate.RestartOutlook{{Kind: "reboot", Pods: 2, AtRisk: []nodestate.PodAtRisk{atRisk}}}}
	var b bytes.Buffer
	if err := Doctor(&b, Options{Format: JSON}, []DoctorResult{with}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		RestartOutlook []nodestate.RestartOutlook `json:"restartOutlook"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(got.RestartOutlook) != 1 || len(got.RestartOutlook[0].AtRisk) != 1 || !reflect.DeepEqual(got.RestartOutlook[0].AtRisk[0], atRisk) {
		t.Errorf("restartOutlook: %+v\n%s", got.RestartOutlook, b.String())
	}
	b.Reset()
	if err := Doctor(&b, Options{Format: JSON}, []DoctorResult{{Node: "a"}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "restartOutlook") {
		t.Errorf("no outlook, yet printed:\n%s", b.String())
	}
}
