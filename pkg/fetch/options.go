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
	// DefaultNamespace is the plugin's own namespace (deploy/rbac.yaml): labelled for the
	// privileged Pod Security level, and the only one its Role lets the debug pods into.
	DefaultNamespace      = "kubectl-nodestate"
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

	// DefaultConcurrency is the smallest concurrency at which a 1,000-node read was as fast as
	// it gets in the sweep of docs/performance.md ("Default concurrency: the sweep"): 10 was
	// slower, 20, 50 and 100 equal, the floor program as flat; more workers only put more
	// debug pods and requests on the cluster at once.
	DefaultConcurrency = 20
)

// The debug pod's readers (Options.Reader): what runs in it and reads the node.
const (
	// ReaderShell is the collect script (CollectCommand) in an image with sh and tar
	// (DefaultImage): it works with any kubelet, but cannot speak gRPC.
	ReaderShell = "shell"
	// ReaderBinary is the plugin's own binary, the node reader (NodeReadCommand), in the
	// plugin's image (ReaderImageRepo, tagged with the plugin's version: the caller, which knows
	// it, gives the image), which holds nothing else: the same files and sections, and the
	// kubelet's PodResources API.
	ReaderBinary = "binary"

	// ReaderPath is where the plugin's image holds its binary (its entrypoint; hack/image.sh).
	ReaderPath = "/kubectl-nodestate"
	// ReaderImageRepo is the plugin's image, tagged with each release's version.
	ReaderImageRepo = "ghcr.io/kubectl-nodestate/kubectl-nodestate"
)

// TarLimits caps what ReadTar keeps in memory. A zero field means the default.
type TarLimits struct {
	MaxFileSize  int64 // per file
	MaxTotalSize int64 // all files together
}

// Options shape the debug pod and bound how long each step may take.
type Options struct {
	Namespace       string // where the debug pod is created
	Image           string // needs sh and tar (ReaderShell), or is the plugin's (ReaderBinary: no default)
	Reader          string // ReaderShell ("") or ReaderBinary
	ImagePullSecret string // name of a docker-registry secret in Namespace, optional
	KubeletRootDir  string // the kubelet's --root-dir on the node
	// HostDirs are other node directories the pod mounts read-only (for Fetcher.Dumps).
	HostDirs []HostDir

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
	if o.Reader == "" {
		o.Reader = ReaderShell
	}
	if o.Image == "" && o.Reader == ReaderShell {
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
	if o.Reader != ReaderShell && o.Reader != ReaderBinary {
		return invalid("reader %q is not %s or %s", o.Reader, ReaderShell, ReaderBinary)
	}
	if o.Image == "" {
		return invalid("the %s reader needs the plugin's own image (%s:<version>)", ReaderBinary, ReaderImageRepo)
	}
	if o.ImagePullSecret != "" {
		if errs := content.IsDNS1123Subdomain(o.ImagePullSecret); len(errs) > 0 {
			return invalid("image pull secret %q is not a valid secret name: %s", o.ImagePullSecret, strings.Join(errs, "; "))
		}
	}
	if !path.IsAbs(o.KubeletRootDir) {
		return invalid("kubelet root dir %q must be an absolute path on the node", o.KubeletRootDir)
	}
	if err := validateHostDirs(o.HostDirs); err != nil {
		return err
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

// ClientRate returns the client-side rate limit (QPS, Burst on rest.Config) for concurrency
// workers. It must never be what slows a fan-out down, as client-go's default 5 QPS / burst 10
// would (about 10 minutes for 1,000 nodes): each worker has at most one request in flight, and
// a node costs four requests (create, exec, pod list, delete) over at least the ~100 ms a pod
// takes to start, so a worker averages under 40 requests a second. 50 a second per worker, and
// a burst of 10 per worker so every worker can start at once, leaves the fan-out unthrottled
// while still stopping a runaway loop.
//
// The API server's own limit is API Priority and Fairness: when the request's priority level
// is full it answers 429 Too Many Requests with Retry-After, and client-go's rest client waits
// that long and retries (up to 10 times: rest.Request's default maxRetries, withRetry). So the
// concurrency bounds the load, and the server paces it when it must.
func ClientRate(concurrency int) (qps float32, burst int) {
	if concurrency < 1 {
		concurrency = 1
	}
	return float32(50 * concurrency), 10 * concurrency
}
