package nodestate

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// What the commands need beyond Config and Results: nodestate is their one way in, so none of
// them reaches past it into fetch or decode.

// DebugPod configures the debug pods that read live nodes.
type DebugPod struct {
	// Namespace holds the debug pods (DefaultNamespace if "").
	Namespace       string
	Image           string
	ImagePullSecret string
	// Reader is what reads the node in the pod: fetch.ReaderShell ("", busybox's sh and tar) or
	// fetch.ReaderBinary (the plugin's own image, which also asks the kubelet's PodResources API).
	Reader string
	// Timeout bounds the wait for each debug pod to run (image pull included), and each copy.
	Timeout time.Duration
}

func (d DebugPod) fetchOptions() fetch.Options {
	image := d.Image
	if image == "" && d.Reader == ReaderBinary {
		image = ReaderImage()
	}
	return fetch.Options{Namespace: d.Namespace, Image: image, ImagePullSecret: d.ImagePullSecret, Reader: d.Reader,
		PodRunningTimeout: d.Timeout, ExecTimeout: d.Timeout}
}

// Defaults of live reading.
const (
	DefaultConcurrency = fetch.DefaultConcurrency
	DefaultImage       = fetch.DefaultImage
	DefaultTimeout     = fetch.DefaultPodRunningTimeout
	DefaultNamespace   = fetch.DefaultNamespace
	DefaultRootDir     = decode.DefaultRootDir
	// DebugPodLabel is the label every debug pod carries, as "key=value".
	DebugPodLabel = fetch.LabelManagedBy + "=" + fetch.ManagedBy
)

// DebugPod.Reader's values.
const (
	ReaderShell  = fetch.ReaderShell
	ReaderBinary = fetch.ReaderBinary
)

// ClientRate is the client's QPS and burst for reading concurrency nodes at once (client-go's
// default 5 QPS would make 1,000 nodes wait ~10 minutes).
func ClientRate(concurrency int) (qps float32, burst int) { return fetch.ClientRate(concurrency) }

// NodeNames lists the cluster's node names, sorted (for completion).
func NodeNames(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	return fetch.NodeNames(ctx, client, "")
}

// Cleanup deletes the debug pods left behind in namespace ("" for all) older than minAge, and
// returns them as "namespace/name".
func Cleanup(ctx context.Context, client kubernetes.Interface, namespace string, minAge time.Duration) ([]string, error) {
	return fetch.Cleanup(ctx, client, namespace, minAge)
}

// ReadFile reads a local file the commands are given (a pod manifest, a machine), size-capped
// as the copies are.
func ReadFile(path string) ([]byte, error) { return local.ReadFile(path, local.DefaultLimits) }

// Canceled reports a node never read because the run was interrupted (said once, not per node).
func (n *NodeResult) Canceled() bool {
	return n.Err != nil && fetch.ReasonOf(n.Err) == fetch.ReasonCanceled
}

// WriteFiles writes what was read of the node into dir as a collect bundle does: the checkpoint
// files under their names (mode 0600, never outside dir), then the dumps' sections.
func (n *NodeResult) WriteFiles(dir string) error {
	if err := fetch.WriteFiles(dir, n.Snapshot.Files); err != nil {
		return err
	}
	return WriteDumps(dir, n.Snapshot)
}

// Kinds are the checkpoint files' kinds, in the kubelet's file order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(decode.Files))
	for _, f := range decode.Files {
		out = append(out, f.Kind)
	}
	return out
}

// KubeletBuildsChecked are the kubelet builds this plugin's rules were checked against, oldest
// first: another build is judged by the rules of the newest, and says so.
func KubeletBuildsChecked() []string { return decode.CheckedBuilds() }

// ParseKind is the kind of a file's name on the node ("cpu_manager_state").
func ParseKind(name string) (Kind, bool) { return decode.ParseKind(name) }

// ParseKubelet parses a kubelet version ("v1.36.4") with the feature gates it runs with.
func ParseKubelet(version string, gates map[string]bool) (*Kubelet, error) {
	k, err := decode.ParseKubelet(version, gates)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// ReadDevicePlugins reads admit --devices: per resource, the device plugin API's Device messages
// as JSON, size-capped.
func ReadDevicePlugins(path string) (map[string][]replay.Device, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	devices, err := replay.ParseDevicePlugins(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return devices, nil
}

// PodsAskDevices says whether any container of the pods, init containers included, asks for
// an extended resource: one a device plugin (or DRA) serves.
func PodsAskDevices(pods []*corev1.Pod) bool {
	for _, p := range pods {
		for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
			for name := range c.Resources.Requests {
				if fetch.IsExtendedResource(name) {
					return true
				}
			}
			for name := range c.Resources.Limits {
				if fetch.IsExtendedResource(name) {
					return true
				}
			}
		}
	}
	return false
}
