package admit

import (
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// The fleet's last line: a node admits the pods only if it admits every one; one refusal makes
// it refuse, whatever else is not judged; a pod not judged and none refused: could not judge. A
// yes without the node-resource predicate (a fleet read from published states, a copy) says so.
func TestAdmitSummary(t *testing.T) {
	unweighed := map[string]bool{"u": true, "v": true}
	node := func(name string, starts bool, verdicts ...string) render.AdmitResult {
		r := render.AdmitResult{Node: name}
		r.KubeletStart.Starts = starts
		r.NodeResourcesChecked = !unweighed[name]
		for _, v := range verdicts {
			r.Admissions = append(r.Admissions, nodestate.Admission{Pod: "p", Verdict: v, Admitted: v == nodestate.AdmissionAdmitted})
		}
		return r
	}
	yes, no, unknown := nodestate.AdmissionAdmitted, nodestate.AdmissionRefused, nodestate.AdmissionNotJudged
	for _, tc := range []struct {
		nodes []render.AdmitResult
		want  string
	}{
		{[]render.AdmitResult{node("a", true, yes, yes), node("b", true, no, yes), node("c", true, yes, unknown)},
			"1 of 3 nodes admit the pods: a; 1 refuses; 1 could not judge: c"},
		{[]render.AdmitResult{node("a", true, unknown, no), node("b", false), node("d", true, unknown), node("c", true, unknown, unknown), {Node: "e", Error: "exec failed"}},
			"no node of 5 admits the pods; 2 refuse; 2 could not judge: c, d; 1 not read"},
		{[]render.AdmitResult{node("b", true, yes), node("a", true, yes)}, "2 of 2 nodes admit the pods: a, b"},
		{[]render.AdmitResult{node("v", true, yes), node("a", true, yes), node("u", true, yes), node("c", true, no)},
			"3 of 4 nodes admit the pods: a, u, v (the node-resource predicate not replayed on u, v); 1 refuses"},
		{[]render.AdmitResult{node("v", true, yes), node("u", true, yes), node("c", true, no)},
			"2 of 3 nodes admit the pods (their resource managers; the node-resource predicate not replayed): u, v; 1 refuses"},
	} {
		var s admitSummary
		for _, n := range tc.nodes {
			s.add(n)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// Not judged (4) only where nothing worse happened: a refusal (1) or a node not read (2) wins.
func TestAdmitExitCode(t *testing.T) {
	for _, tc := range []struct {
		worst     int
		notJudged bool
		want      int
	}{
		{cmdutil.ExitOK, false, cmdutil.ExitOK},
		{cmdutil.ExitOK, true, cmdutil.ExitNotJudged},
		{cmdutil.ExitNotValid, true, cmdutil.ExitNotValid},
		{cmdutil.ExitUnreadable, true, cmdutil.ExitUnreadable},
		{cmdutil.ExitNotValid, false, cmdutil.ExitNotValid},
	} {
		if got := exitCode(tc.worst, tc.notJudged); got != tc.want {
			t.Errorf("exitCode(%d, %v) = %d, want %d", tc.worst, tc.notJudged, got, tc.want)
		}
	}
	if cmdutil.ExitNotJudged != 4 {
		t.Errorf("ExitNotJudged = %d: the documented code is 4", cmdutil.ExitNotJudged)
	}
}
