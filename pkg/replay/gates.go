package replay

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/version"
)

// gateSpan is one feature gate over a range of releases: its default, and whether it is locked
// to it (GA), as each release's pkg/features/kube_features.go declares it.
type gateSpan struct {
	Gate         string
	Since, Until string // [Since, Until); Until "" = still there
	Default      bool
	Locked       bool
}

// knownGates are the gates the CPU and memory managers read at start. A gate doctor does not
// list here is assumed to exist (doctor cannot tell), and said so.
var knownGates = []gateSpan{
	{Gate: "CPUManager", Since: "1.25", Until: "1.26", Default: true},
	{Gate: "CPUManager", Since: "1.26", Until: "1.33", Default: true, Locked: true},
	{Gate: "MemoryManager", Since: "1.25", Until: "1.32", Default: true},
	{Gate: "MemoryManager", Since: "1.32", Until: "1.36", Default: true, Locked: true},
	{Gate: "CPUManagerPolicyOptions", Since: "1.25", Until: "1.33", Default: true},
	{Gate: "CPUManagerPolicyOptions", Since: "1.33", Default: true, Locked: true},
	{Gate: GateCPUAlphaOptions, Since: "1.25", Default: false},
	{Gate: GateCPUBetaOptions, Since: "1.25", Default: true},
	{Gate: "InPlacePodVerticalScalingExclusiveCPUs", Since: "1.32", Default: false},
	{Gate: GatePodLevelResourceManagers, Since: "1.36", Default: false},
	{Gate: GatePodLevelResources, Since: "1.32", Until: "1.34", Default: false},
	{Gate: GatePodLevelResources, Since: "1.34", Default: true},
	{Gate: GatePodLevelResourcesFixQOS, Since: "1.37", Default: true},
	{Gate: GateTopologyAlphaOptions, Since: "1.26", Default: false},
	{Gate: GateTopologyBetaOptions, Since: "1.26", Until: "1.28", Default: false},
	{Gate: GateTopologyBetaOptions, Since: "1.28", Default: true},
	{Gate: GateTopologyOptions, Since: "1.26", Until: "1.28", Default: false},
	{Gate: GateTopologyOptions, Since: "1.28", Until: "1.32", Default: true},
	{Gate: GateTopologyOptions, Since: "1.32", Until: "1.37", Default: true, Locked: true},
}

// gateAt returns the gate's span at v, and whether doctor knows the gate at all.
func gateAt(name string, v *version.Version) (span *gateSpan, known bool) {
	for i := range knownGates {
		g := &knownGates[i]
		if g.Gate != name {
			continue
		}
		known = true
		if !v.LessThan(version.MustParseGeneric(g.Since)) && (g.Until == "" || v.LessThan(version.MustParseGeneric(g.Until))) {
			return g, true
		}
	}
	return nil, known
}

// setGates is the kubelet's feature-gate SetFromMap: an unknown gate, or a locked gate set
// against its lock, stops the kubelet. It returns the gates doctor could not judge.
func setGates(gates map[string]bool, v *version.Version) (unjudged []string, err error) {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		span, known := gateAt(n, v)
		switch {
		case !known:
			unjudged = append(unjudged, n)
		case span == nil:
			return nil, fmt.Errorf("unrecognized feature gate: %s", n)
		case span.Locked && gates[n] != span.Default:
			return nil, fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", n, gates[n], span.Default)
		}
	}
	return unjudged, nil
}

// gateOn is a gate's value at v: as set, else its default there.
func (e *env) gate(name string) bool {
	if on, ok := e.gates[name]; ok {
		return on
	}
	if span, _ := gateAt(name, e.version); span != nil {
		return span.Default
	}
	return gateDefaults[name]
}
