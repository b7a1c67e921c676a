package decode

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/version"
)

// The one table of kubelet releases and feature gates: decode's eras (eras.go) and doctor's
// start rules key on the versions parsed here, once. A release that changes no format and no
// rule is one row of releases (plus its vectors); see docs/adding-a-kubelet-release.md.

// releases are the newest patch release of each minor the vectors cover: the candidates for an
// era's home reader (the newest one writing the era and reading it back by its own rule).
var releases = parseReleases("v1.17.17", "v1.18.20", "v1.19.16", "v1.20.15", "v1.21.14", "v1.22.5", "v1.25.16",
	"v1.27.16", "v1.28.15", "v1.29.15", "v1.30.14", "v1.31.14", "v1.32.13", "v1.33.13", "v1.34.10", "v1.35.8",
	"v1.36.4", "v1.37.1")

// preReleases are builds before a release (a beta, an rc) that write a format no release
// writes yet: only such an era's home reader comes from them (HomeKubelet and the release
// judging a node's files stay releases). Drop one when its release joins releases.
// Oldest first. A release day's build (an rc) joins them once the vectors hold its reads, so
// that Unchecked stops saying it of its nodes.
var preReleases = []*version.Version{version.MustParseSemantic("1.38.0-beta.0")}

// builtWithGo127 are the kubelets built with Go 1.27 (1.38's go.mod asks for it), whose
// encoding/json is json/v2 underneath (Go 1.27's default GOEXPERIMENT=jsonv2): the same values,
// other words for the same errors (a type error names the root type and the path with array
// indices: "Data.Data.PodDeviceEntries.0.DeviceIDs"). github.com/go-json-experiment/json v1.27.2
// is that code outside the standard library (its v1 package, compared with go1.27.3's).
var builtWithGo127 = from("1.38.0-beta.0")

// HomeKubelet is the newest release the table knows: it judges files whose formats it writes
// when nothing else names a kubelet. Tests name it so, not by its number.
var HomeKubelet = "v" + releases[len(releases)-1].String()

// Release parses a release of the tables ("1.25"), once, where the table is built.
func Release(v string) *version.Version { return version.MustParseGeneric(v) }

// A GateSpan is one feature gate over the releases [Since, Until) (Until nil: still there), as
// each release's pkg/features/kube_features.go declares it.
type GateSpan struct {
	Gate         string
	Since, Until *version.Version
	Default      bool
	// Locked: GA; setting it against Default stops the kubelet.
	Locked bool
	// Removed: the gate is gone (setting it stops the kubelet), its feature always Default.
	Removed bool
}

// Gates are the feature gates the checkpoint readers and the CPU and memory managers' start
// read, by release. A gate not listed is unknown here (doctor assumes it exists, and says so).
var Gates = []GateSpan{
	{Gate: "CPUManager", Since: Release("1.25"), Until: Release("1.26"), Default: true},
	{Gate: "CPUManager", Since: Release("1.26"), Until: Release("1.33"), Default: true, Locked: true},
	{Gate: "CPUManager", Since: Release("1.33"), Default: true, Removed: true},
	{Gate: "MemoryManager", Since: Release("1.25"), Until: Release("1.32"), Default: true},
	{Gate: "MemoryManager", Since: Release("1.32"), Until: Release("1.36"), Default: true, Locked: true},
	{Gate: "MemoryManager", Since: Release("1.36"), Default: true, Removed: true},
	{Gate: "CPUManagerPolicyOptions", Since: Release("1.25"), Until: Release("1.33"), Default: true},
	{Gate: "CPUManagerPolicyOptions", Since: Release("1.33"), Default: true, Locked: true},
	{Gate: GateCPUManagerPolicyAlphaOptions, Since: Release("1.25"), Default: false},
	{Gate: GateCPUManagerPolicyBetaOptions, Since: Release("1.25"), Default: true},
	{Gate: GateInPlacePodVerticalScalingExclusiveCPUs, Since: Release("1.32"), Default: false},
	{Gate: GatePodLevelResourceManagers, Since: Release("1.36"), Default: false},
	// What the resource managers read at admission (pkg/replay).
	{Gate: GatePodLevelResources, Since: Release("1.32"), Until: Release("1.34"), Default: false},
	{Gate: GatePodLevelResources, Since: Release("1.34"), Default: true},
	{Gate: GatePodLevelResourcesFixKubeletQOSClass, Since: Release("1.37"), Default: true},
	{Gate: GateTopologyManagerPolicyAlphaOptions, Since: Release("1.26"), Default: false},
	{Gate: GateTopologyManagerPolicyBetaOptions, Since: Release("1.26"), Until: Release("1.28"), Default: false},
	{Gate: GateTopologyManagerPolicyBetaOptions, Since: Release("1.28"), Default: true},
	{Gate: GateTopologyManagerPolicyOptions, Since: Release("1.26"), Until: Release("1.28"), Default: false},
	{Gate: GateTopologyManagerPolicyOptions, Since: Release("1.28"), Until: Release("1.32"), Default: true},
	{Gate: GateTopologyManagerPolicyOptions, Since: Release("1.32"), Default: true, Locked: true},
	// What the predicate admit handler reads (pkg/admit): Gt and Lt tolerations.
	{Gate: GateTaintTolerationComparisonOperators, Since: Release("1.35"), Default: false},
}

// Feature gates that change how a kubelet reads checkpoints, or what its managers check at start.
const (
	GatePodLevelResourceManagers = "PodLevelResourceManagers"
	// GateInPlacePodVerticalScalingExclusiveCPUs only adds content (baselines); readers ignore it.
	GateInPlacePodVerticalScalingExclusiveCPUs = "InPlacePodVerticalScalingExclusiveCPUs"
	GateCPUManagerPolicyAlphaOptions           = "CPUManagerPolicyAlphaOptions"
	GateCPUManagerPolicyBetaOptions            = "CPUManagerPolicyBetaOptions"
	GatePodLevelResources                      = "PodLevelResources"
	GatePodLevelResourcesFixKubeletQOSClass    = "PodLevelResourcesFixKubeletQOSClass"
	GateTopologyManagerPolicyAlphaOptions      = "TopologyManagerPolicyAlphaOptions"
	GateTopologyManagerPolicyBetaOptions       = "TopologyManagerPolicyBetaOptions"
	GateTopologyManagerPolicyOptions           = "TopologyManagerPolicyOptions"
	GateTaintTolerationComparisonOperators     = "TaintTolerationComparisonOperators"
)

// GateAt returns the gate's row at v (nil v: any row), and whether the table knows the gate.
func GateAt(name string, v *version.Version) (span *GateSpan, known bool) {
	for i := range Gates {
		g := &Gates[i]
		if g.Gate != name {
			continue
		}
		known = true
		if v == nil || (!v.LessThan(g.Since) && (g.Until == nil || v.LessThan(g.Until))) {
			return g, true
		}
	}
	return nil, known
}

// GateDefault is the gate's default at v: false where no row has it.
func GateDefault(name string, v *version.Version) bool {
	if v == nil {
		return false
	}
	if g, _ := GateAt(name, v); g != nil {
		return g.Default
	}
	return false
}

// Unchecked says, for a build of the kubelet no vector was made by, whose rules judge it
// instead: another build of a minor known only from pre-releases (1.38.0-rc.0 or 1.38.0 while
// 1.38.0-beta.0 is the 1.38 build checked), or a minor newer than every build checked. "" for
// the rest: a release's row holds for its minor's patches. A release day is when this is said
// of the nodes upgraded first, until a plugin release names their build.
func (k Kubelet) Unchecked() string {
	if k.Version == nil {
		return ""
	}
	sameMinor := func(o *version.Version) bool { return o.Major() == k.Version.Major() && o.Minor() == k.Version.Minor() }
	if slices.ContainsFunc(releases, sameMinor) { // every admission replay asks: no parse
		return ""
	}
	// Every admission replay asks: a build seen is answered from what it was told.
	key := buildKey{k.Version.Major(), k.Version.Minor(), k.Version.Patch(), k.Version.PreRelease()}
	if said, ok := uncheckedSaid.Load(key); ok {
		return said.(string)
	}
	said := unchecked(k.Version, sameMinor)
	if uncheckedKept.Add(1) <= maxUncheckedKept {
		uncheckedSaid.Store(key, said)
	}
	return said
}

// uncheckedSaid are Unchecked's answers by build: few builds run in a fleet, and a node that
// reports a new version at every heartbeat (its status is its own) fills no more than
// maxUncheckedKept of them.
var (
	uncheckedSaid sync.Map
	uncheckedKept atomic.Int64
)

const maxUncheckedKept = 256

// buildKey is a kubelet build, comparable without formatting it.
type buildKey struct {
	major, minor, patch uint
	pre                 string
}

func unchecked(parsed *version.Version, sameMinor func(*version.Version) bool) string {
	// A release parsed as generic orders equal to its pre-releases; as semantic, after them.
	v, err := version.ParseSemantic(parsed.String())
	if err != nil {
		v = parsed
	}
	// Of v's minor's pre-releases checked: the nearest before v, and the first.
	var before, first *version.Version
	newest := releases[len(releases)-1]
	for _, p := range preReleases {
		if p.EqualTo(v) {
			return ""
		}
		if sameMinor(p) {
			if p.LessThan(v) && (before == nil || p.GreaterThan(before)) {
				before = p
			}
			if first == nil || p.LessThan(first) {
				first = p
			}
		}
		if p.GreaterThan(newest) {
			newest = p
		}
	}
	switch {
	case before != nil:
		return fmt.Sprintf("kubelet v%s is not a build this plugin was checked against: judged by the rules of v%s, the nearest earlier %d.%d build checked",
			v, before, v.Major(), v.Minor())
	case first != nil:
		return fmt.Sprintf("kubelet v%s is an earlier %d.%d build than v%s, the first this plugin was checked against: judged by the rules its tables hold for it",
			v, v.Major(), v.Minor(), first)
	case v.GreaterThan(newest):
		return fmt.Sprintf("kubelet v%s is newer than every build this plugin was checked against: judged by the rules of the newest, v%s", v, newest)
	}
	return ""
}

// CheckedBuilds are the kubelet builds the tables were checked against, oldest first: each
// release's (its row holds for its minor's patches), then the pre-releases.
func CheckedBuilds() []string {
	var out []string
	for _, v := range slices.Concat(releases, preReleases) {
		out = append(out, "v"+v.String())
	}
	return out
}
