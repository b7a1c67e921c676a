package fetch

import (
	"fmt"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Defaults for Options and TarLimits; a zero field means "use the default".
const (
	DefaultNamespace      = "default"
	DefaultImage          = "busybox:1.37" // small, multi-arch, has sh and tar
	DefaultKubeletRootDir = "/var/lib/kubelet"

	DefaultPodRunningTimeout = 2 * time.Minute // image pulls included
	DefaultExecTimeout       = 2 * time.Minute

	// DeadlineMargin is how much longer than its two waits together the debug pod lives by
	// default: its activeDeadlineSeconds bounds its life if the client vanishes (SIGKILL, lost
	// network) before it can delete it, and must not end it under a running exec.
	DeadlineMargin = time.Minute

	DefaultMaxFileSize  int64 = 64 << 20
	DefaultMaxTotalSize int64 = 256 << 20

	DefaultConcurrency = 20
)

// TarLimits caps what ReadTar keeps in memory. A zero field means the default.
type TarLimits struct {
	MaxFileSize  int64 // per file
	MaxTotalSize int64 // all files together
}

// Options shape the debug pod and bound how long each step may take.
type Options struct {
	Namespace       string // where the debug pod is created
	Image           string // needs sh and tar
	ImagePullSecret string // name of a docker-registry secret in Namespace, optional
	KubeletRootDir  string // the kubelet's --root-dir on the node

	ActiveDeadlineSeconds int64         // the pod kills itself after this long; 0: the waits plus DeadlineMargin
	PodRunningTimeout     time.Duration // create -> Running
	ExecTimeout           time.Duration // the tar exec

	Limits TarLimits
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.KubeletRootDir == "" {
		o.KubeletRootDir = DefaultKubeletRootDir
	}
	if o.PodRunningTimeout == 0 {
		o.PodRunningTimeout = DefaultPodRunningTimeout
	}
	if o.ExecTimeout == 0 {
		o.ExecTimeout = DefaultExecTimeout
	}
	if o.ActiveDeadlineSeconds == 0 && o.PodRunningTimeout > 0 && o.ExecTimeout > 0 {
		// Follows the waits the user chose, so a long --pod-running-timeout needs no second flag.
		need := o.PodRunningTimeout + o.ExecTimeout + DeadlineMargin
		o.ActiveDeadlineSeconds = int64((need + time.Second - 1) / time.Second)
	}
	o.Limits = o.Limits.withDefaults()
	return o
}

func (l TarLimits) withDefaults() TarLimits {
	if l.MaxFileSize == 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxTotalSize == 0 {
		l.MaxTotalSize = DefaultMaxTotalSize
	}
	return l
}

// Validate checks o after defaults are applied, with messages a user can act on.
func (o Options) Validate() error {
	o = o.WithDefaults()
	if errs := content.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return invalid("namespace %q is not a valid namespace name: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.ImagePullSecret != "" {
		if errs := content.IsDNS1123Subdomain(o.ImagePullSecret); len(errs) > 0 {
			return invalid("image pull secret %q is not a valid secret name: %s", o.ImagePullSecret, strings.Join(errs, "; "))
		}
	}
	if !path.IsAbs(o.KubeletRootDir) {
		return invalid("kubelet root dir %q must be an absolute path on the node", o.KubeletRootDir)
	}
	if o.ActiveDeadlineSeconds < 0 || o.PodRunningTimeout < 0 || o.ExecTimeout < 0 {
		return invalid("timeouts must not be negative")
	}
	// The pod must outlive both waits, or it dies under a running exec (only a deadline set
	// explicitly can be too short).
	if need := o.PodRunningTimeout + o.ExecTimeout; time.Duration(o.ActiveDeadlineSeconds)*time.Second <= need {
		return invalid("the pod's active deadline (%ds) must be longer than the pod-running timeout plus the exec timeout (%s)",
			o.ActiveDeadlineSeconds, need)
	}
	if o.Limits.MaxFileSize < 0 || o.Limits.MaxTotalSize < 0 {
		return invalid("size limits must not be negative")
	}
	return nil
}

// ValidatePaths checks the relative paths to collect: clean, relative, inside the kubelet root
// dir, and harmless as shell arguments (they reach `sh -c` as "$@", never as code).
func ValidatePaths(paths []string) error {
	if len(paths) == 0 {
		return invalid("no paths to collect")
	}
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		switch {
		case p == "" || p == ".":
			return invalid("empty path to collect")
		case path.IsAbs(p):
			return invalid("path %q must be relative to the kubelet root dir", p)
		case path.Clean(p) != p:
			return invalid("path %q is not clean (want %q)", p, path.Clean(p))
		case p == ".." || strings.HasPrefix(p, "../"):
			return invalid("path %q leaves the kubelet root dir", p)
		case strings.ContainsAny(p, "\x00\n\\"):
			return invalid("path %q has a NUL, newline or backslash", p)
		case seen[p]:
			return invalid("path %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func invalid(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Reason: ReasonInvalid, Short: "invalid", Message: msg}
}

// ClientRate returns the client-side rate limits for concurrency workers; the command layer
// sets them on rest.Config (QPS, Burst). client-go's default 5 QPS / burst 10 would make the
// limiter, not the cluster, the bottleneck: about 10 minutes for 1,000 nodes. Each node costs
// about six requests (get node, create, watch, exec, list pods, delete) over a couple of
// seconds, so 5 QPS per worker keeps workers busy without flooding the API server.
func ClientRate(concurrency int) (qps float32, burst int) {
	if concurrency < 1 {
		concurrency = 1
	}
	qps = float32(5 * concurrency)
	return qps, int(2 * qps)
}
