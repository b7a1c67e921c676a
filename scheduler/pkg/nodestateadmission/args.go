package nodestateadmission

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// What the plugin does with a node whose state it cannot judge from (stale, missing,
// undecodable, or a pod the replay does not judge).
const (
	// FallbackPass lets the node through, as a scheduler without this plugin would.
	FallbackPass = "pass"
	// FallbackReject filters the node out until its state is known.
	FallbackReject = "reject"
)

// Args are the plugin's args in the scheduler profile (pluginConfig), decoded the way
// out-of-tree plugins decode theirs (frameworkruntime.DecodeInto).
type Args struct {
	// MaxAge is how old a node's published state may be (its read-at annotation) before it
	// is stale. Default 10m: the publisher rewrites on change and at least every few minutes.
	MaxAge metav1.Duration `json:"maxAge,omitempty"`
	// Fallback is FallbackPass or FallbackReject. Default pass.
	Fallback string `json:"fallback,omitempty"`
	// Namespace holds the published ConfigMaps. Default nodestate.PublishedNamespace.
	Namespace string `json:"namespace,omitempty"`
}

// DefaultMaxAge is Args.MaxAge's default.
const DefaultMaxAge = 10 * time.Minute

// decodeArgs reads the profile's args, defaults them and refuses what would make the plugin
// guess: an unknown fallback, a non-positive maxAge.
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
	if args.Fallback != FallbackPass && args.Fallback != FallbackReject {
		return Args{}, fmt.Errorf("%s args: fallback %q: want %q or %q", Name, args.Fallback, FallbackPass, FallbackReject)
	}
	return args, nil
}
