package nodestateadmission

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	nrtconfig "sigs.k8s.io/scheduler-plugins/apis/config"
	nrtscheme "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	nrtconfigv1 "sigs.k8s.io/scheduler-plugins/apis/config/v1"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// What the plugin does with a node whose state it cannot judge from (stale, missing,
// undecodable, or a pod the replay does not judge).
const (
	// FallbackPass lets the node through, as a scheduler without this plugin would.
	FallbackPass = "pass"
	// FallbackReject filters the node out until its state is known.
	FallbackReject = "reject"
	// FallbackNodeResourceTopologyMatch gives the node the upstream NodeResourceTopologyMatch
	// plugin's verdict (scheduler-plugins, the source hack/nrtscheduler carries), from the
	// node's NodeResourceTopology object: named as the plugin is.
	FallbackNodeResourceTopologyMatch = noderesourcetopology.Name
)

// Args are the plugin's args in the scheduler profile (pluginConfig), decoded the way
// out-of-tree plugins decode theirs (frameworkruntime.DecodeInto).
type Args struct {
	// MaxAge is how old a node's published state may be (its read-at annotation) before it
	// is stale. Default 10m: the publisher rewrites on change and at least every few minutes.
	MaxAge metav1.Duration `json:"maxAge,omitempty"`
	// Fallback is FallbackPass, FallbackReject or FallbackNodeResourceTopologyMatch. Default pass.
	Fallback string `json:"fallback,omitempty"`
	// Namespace holds the published ConfigMaps. Default nodestate.PublishedNamespace.
	Namespace string `json:"namespace,omitempty"`
	// NodeResourceTopologyMatch are the fallback plugin's own args, as its pluginConfig would
	// hold them (scheduler-plugins' v1 NodeResourceTopologyMatchArgs, defaulted as its profile's
	// are); only with that fallback.
	NodeResourceTopologyMatch *nrtconfigv1.NodeResourceTopologyMatchArgs `json:"nodeResourceTopologyMatch,omitempty"`
}

// DefaultMaxAge is Args.MaxAge's default.
const DefaultMaxAge = 10 * time.Minute

// decodeArgs reads the profile's args, defaults them and refuses what would make the plugin
// guess: an unknown fallback, a non-positive maxAge, the fallback plugin's args without it.
func decodeArgs(obj runtime.Object) (Args, error) {
	var args Args
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return Args{}, fmt.Errorf("%s args: %w", Name, err)
		}
	}
	if args.MaxAge.Duration == 0 {
		args.MaxAge.Duration = DefaultMaxAge
	}
	if args.Fallback == "" {
		args.Fallback = FallbackPass
	}
	if args.Namespace == "" {
		args.Namespace = nodestate.PublishedNamespace
	}
	if args.MaxAge.Duration < 0 {
		return Args{}, fmt.Errorf("%s args: maxAge %s is negative", Name, args.MaxAge.Duration)
	}
	switch args.Fallback {
	case FallbackPass, FallbackReject:
		if args.NodeResourceTopologyMatch != nil {
			return Args{}, fmt.Errorf("%s args: nodeResourceTopologyMatch given, but fallback is %q, not %q", Name, args.Fallback, FallbackNodeResourceTopologyMatch)
		}
	case FallbackNodeResourceTopologyMatch:
		if args.NodeResourceTopologyMatch == nil {
			args.NodeResourceTopologyMatch = &nrtconfigv1.NodeResourceTopologyMatchArgs{}
		}
	default:
		return Args{}, fmt.Errorf("%s args: fallback %q: want %q, %q or %q", Name, args.Fallback, FallbackPass, FallbackReject, FallbackNodeResourceTopologyMatch)
	}
	return args, nil
}

// nodeResourceTopologyMatchArgs are the fallback plugin's args as its factory takes them:
// defaulted and converted by scheduler-plugins' own scheme functions, as kube-scheduler does
// for a pluginConfig of NodeResourceTopologyMatch.
func nodeResourceTopologyMatchArgs(v1 *nrtconfigv1.NodeResourceTopologyMatchArgs) (*nrtconfig.NodeResourceTopologyMatchArgs, error) {
	in := v1.DeepCopy()
	nrtscheme.Scheme.Default(in)
	out := &nrtconfig.NodeResourceTopologyMatchArgs{}
	if err := nrtscheme.Scheme.Convert(in, out, nil); err != nil {
		return nil, fmt.Errorf("%s args: nodeResourceTopologyMatch: %w", Name, err)
	}
	return out, nil
}
