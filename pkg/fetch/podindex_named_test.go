package fetch

import "testing"

// An earlier debug pod, named only by a 1.38+ V2 file: in the namespace Fetch used, with the
// prefix the admission policy requires. Nothing before Fetch sets the namespace.
func TestDebugPodNamed(t *testing.T) {
	var none *PodIndex
	if none.DebugPodNamed("kubectl-nodestate", "nodestate-n1-x") {
		t.Error("nil index named a debug pod")
	}
	ix := NewPodIndex(nil)
	if ix.DebugPodNamed("kubectl-nodestate", "nodestate-n1-x") {
		t.Error("index without DebugNamespace named a debug pod")
	}
	ix.DebugNamespace = "kubectl-nodestate"
	for _, tc := range []struct {
		ns, name string
		want     bool
	}{
		{"kubectl-nodestate", "nodestate-n1-95ll2", true},
		{"kubectl-nodestate", "web", false},
		{"default", "nodestate-n1-95ll2", false},
	} {
		if got := ix.DebugPodNamed(tc.ns, tc.name); got != tc.want {
			t.Errorf("DebugPodNamed(%q, %q) = %v, want %v", tc.ns, tc.name, got, tc.want)
		}
	}
}
