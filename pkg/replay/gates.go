package replay

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// setGates is the kubelet's feature-gate SetFromMap: an unknown gate, or a locked gate set
// against its lock, stops the kubelet. It returns the gates doctor could not judge.
func setGates(gates map[string]bool, v *version.Version) (unjudged []string, err error) {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		span, known := decode.GateAt(n, v)
		switch {
		case !known:
			unjudged = append(unjudged, n)
		case span == nil || span.Removed:
			return nil, fmt.Errorf("unrecognized feature gate: %s", n)
		case span.Locked && gates[n] != span.Default:
			return nil, fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", n, gates[n], span.Default)
		}
	}
	return unjudged, nil
}

// gate is a gate's value at v: as set, else its default there.
func (e *env) gate(name string) bool {
	if on, ok := e.gates[name]; ok {
		return on
	}
	return decode.GateDefault(name, e.version)
}
