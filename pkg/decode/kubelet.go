package decode

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Kubelet identifies a reader: a kubelet version and the feature gates it runs with.
type Kubelet struct {
	Version *version.Version
	Gates   map[string]bool
}

// WithConfigGates is this kubelet once its config file's feature gates are merged in, as the
// kubelet merges them at start: the config's, then its own command-line gates, which win.
func (k Kubelet) WithConfigGates(config map[string]bool) Kubelet {
	gates := make(map[string]bool, len(config)+len(k.Gates))
	for name, on := range config {
		gates[name] = on
	}
	for name, on := range k.Gates {
		gates[name] = on
	}
	k.Gates = gates
	return k
}

// ParseKubelet parses a kubelet version such as "v1.36.4", "1.36" or a node's
// status.nodeInfo.kubeletVersion ("v1.30.2-eks-1234", "v1.29.3+k3s1"). A suffix of known gate
// names ("v1.36.4+PodLevelResourceManagers") turns those gates on, as in the vectors' labels.
func ParseKubelet(s string, gates map[string]bool) (Kubelet, error) {
	k := Kubelet{Gates: map[string]bool{}}
	for name, on := range gates {
		k.Gates[name] = on
	}
	base := strings.TrimSpace(s)
	// parts[1:] are the "+" suffixes: none when there is no "+", and then nothing changes.
	if parts := strings.Split(base, "+"); allKnownGates(parts[1:]) {
		base = parts[0]
		for _, g := range parts[1:] {
			k.Gates[g] = true
		}
	}
	v, err := version.ParseGeneric(base)
	if err != nil {
		return Kubelet{}, fmt.Errorf("invalid kubelet version %q: want vMAJOR.MINOR[.PATCH], e.g. v1.36.4", s)
	}
	// ParseGeneric drops pre-releases; keep "1.38.0-alpha.0" ordered before 1.38.0, but not
	// vendor suffixes such as "-eks-1234", which are the release itself.
	if sv, serr := version.ParseSemantic(strings.TrimPrefix(base, "v")); serr == nil && isUpstreamPreRelease(sv.PreRelease()) {
		v = sv.WithBuildMetadata("")
	} else {
		v = version.MajorMinor(v.Major(), v.Minor()).WithPatch(v.Patch())
	}
	k.Version = v
	return k, nil
}

func isUpstreamPreRelease(pre string) bool {
	for _, p := range []string{"alpha.", "beta.", "rc."} {
		if strings.HasPrefix(pre, p) {
			return true
		}
	}
	return false
}

func allKnownGates(names []string) bool {
	for _, n := range names {
		if _, known := GateAt(n, nil); !known {
			return false
		}
	}
	return true
}

// Gate reports whether a feature gate is on for this kubelet.
func (k Kubelet) Gate(name string) bool {
	if on, ok := k.Gates[name]; ok {
		return on
	}
	return GateDefault(name, k.Version)
}

// String renders the kubelet like the vectors' reader labels: "v1.36.4+PodLevelResourceManagers".
func (k Kubelet) String() string {
	if k.Version == nil {
		return ""
	}
	s := fmt.Sprintf("v%d.%d.%d", k.Version.Major(), k.Version.Minor(), k.Version.Patch())
	if pre := k.Version.PreRelease(); pre != "" {
		s += "-" + pre
	}
	var on []string
	for name, enabled := range k.Gates {
		if enabled && name != GateInPlacePodVerticalScalingExclusiveCPUs {
			on = append(on, name)
		}
	}
	sort.Strings(on)
	for _, g := range on {
		s += "+" + g
	}
	return s
}

// A span is the kubelets [since, until) (an open bound is nil), optionally only those with a
// feature gate on or off. Bounds are parsed once, when the tables are built.
type span struct {
	since, until *version.Version
	gate         string
	gateOn       bool
}

func parseBound(v string) *version.Version {
	if v == "" {
		return nil
	}
	// A pre-release bound ("1.38.0-beta.0") is ordered as ParseKubelet orders the readers.
	if strings.Contains(v, "-") {
		return version.MustParseSemantic(v)
	}
	return version.MustParseGeneric(v)
}

// between is [since, until); since and from are [since, ∞); every is all kubelets.
func between(since, until string) span {
	return span{since: parseBound(since), until: parseBound(until)}
}
func from(since string) span { return span{since: parseBound(since)} }

var every = span{}

// withGate and withoutGate restrict a span to kubelets with the gate on, or off.
func (s span) withGate(g string) span    { s.gate, s.gateOn = g, true; return s }
func (s span) withoutGate(g string) span { s.gate, s.gateOn = g, false; return s }

func (s span) containsVersion(v *version.Version) bool {
	return (s.since == nil || !v.LessThan(s.since)) && (s.until == nil || v.LessThan(s.until))
}

func (s span) has(k Kubelet) bool {
	return s.containsVersion(k.Version) && (s.gate == "" || k.Gate(s.gate) == s.gateOn)
}
