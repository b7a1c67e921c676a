package replay

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// The kubelet's rejectPod words a refused pod's status message by release (kubelet.go:1967 in
// 1.25, :2070 in 1.26, :2647 in 1.37); the handler's message stays whole behind the prefix.
func TestRejectedStatusMessage(t *testing.T) {
	msg := "Node didn't have enough resource: cpu, requested: 1000, used: 500, capacity: 1000"
	for v, want := range map[string]string{
		"v1.25.16": "Pod " + msg,
		"v1.26.0":  "Pod was rejected: " + msg,
		"v1.37.1":  "Pod was rejected: " + msg,
		"v1.40.0":  "Pod was rejected: " + msg,
	} {
		r, ok := releaseFor(version.MustParseSemantic(v))
		if !ok {
			t.Fatalf("%s: no release row", v)
		}
		if got := r.RejectedStatusMessage(msg); got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
}
