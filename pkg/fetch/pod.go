package fetch

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// Labels and names the debug pod carries; Cleanup and test harnesses select on them.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubectl-nodestate"
	// LabelNode holds the node name, or a hashed stand-in when the name is not a valid label
	// value; AnnotationNode always holds the full name.
	LabelNode      = "kubectl-nodestate/node"
	AnnotationNode = "kubectl-nodestate/node"

	ContainerName = "nodestate"
	VolumeName    = "kubelet"
	// MountPath is where the kubelet root dir appears in the container, and its working
	// directory: the collected paths are relative to it.
	MountPath = "/kubelet"
)

// ManagedSelector selects every debug pod this plugin creates.
const ManagedSelector = LabelManagedBy + "=" + ManagedBy + "," + LabelNode

// nameSuffixFunc makes pod names unique; tests replace it (as kubectl's debug tests do).
var nameSuffixFunc = utilrand.String

// GenerateDebugPod returns the debug pod for node: pinned with spec.nodeName (no scheduler),
// tolerating every taint, the kubelet root dir mounted read-only, and otherwise as unprivileged
// as reading 0600 root-owned files allows. It has no side effects, so tests compare it whole.
func GenerateDebugPod(node *corev1.Node, opts Options) *corev1.Pod {
	opts = opts.WithDefaults()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(node.Name),
			Namespace: opts.Namespace,
			Labels: map[string]string{
				LabelManagedBy: ManagedBy,
				LabelNode:      nodeLabelValue(node.Name),
			},
			Annotations: map[string]string{AnnotationNode: node.Name},
		},
		Spec: corev1.PodSpec{
			// spec.nodeName skips the scheduler, so no nodeSelector is needed and a cordoned
			// node still runs the pod. Host namespaces stay off (the zero values).
			NodeName:    node.Name,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:  ContainerName,
				Image: opts.Image,
				// IfNotPresent lets an image already on the node work in an air-gapped cluster.
				ImagePullPolicy: corev1.PullIfNotPresent,
				// Something to exec into; it ends by itself at the deadline.
				Command:    podCommand(opts),
				WorkingDir: MountPath,
				// Recursively read-only where the runtime can (KEP-3857): the kubelet dir holds the
				// pods' secret, token and configMap volumes as mounts of their own, which a plain
				// read-only bind leaves writable.
				VolumeMounts: []corev1.VolumeMount{{
					Name:              VolumeName,
					MountPath:         MountPath,
					ReadOnly:          true,
					RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible),
				}},
				// No requests or limits: BestEffort, as `kubectl debug` makes its pods. A node
				// whose allocatable CPU is all handed out to Guaranteed pods (the static CPU
				// policy's nodes, the ones this plugin is for) still admits it; it runs in the
				// shared CPU pool, takes no exclusive CPU and no NUMA memory from the memory
				// manager, and the sleep and one tar need next to nothing.
				SecurityContext: &corev1.SecurityContext{
					Privileged:               ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					ReadOnlyRootFilesystem:   ptr.To(true),
					// The checkpoints are 0600 root: uid 0 reads them as their owner, so no
					// capability (not even DAC_READ_SEARCH) is needed.
					RunAsUser:      ptr.To[int64](0),
					RunAsNonRoot:   ptr.To(false),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{{
				Name: VolumeName,
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: path.Clean(opts.KubeletRootDir),
					// Directory, not DirectoryOrCreate: a wrong --kubelet-root-dir must fail,
					// not create an empty directory on the node.
					Type: ptr.To(corev1.HostPathDirectory),
				}},
			}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			// If the client vanishes before deleting the pod, the kubelet kills it.
			ActiveDeadlineSeconds:        ptr.To(opts.ActiveDeadlineSeconds),
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
		},
	}
	mounts, vols := hostDirVolumes(opts.HostDirs)
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, mounts...)
	pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	if opts.ImagePullSecret != "" {
		pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: opts.ImagePullSecret}}
	}
	return pod
}

// podCommand is what the debug pod's container runs while the exec reads: nothing, until the
// pod's deadline.
func podCommand(opts Options) []string {
	if opts.Reader == ReaderBinary {
		return NodeReadPodCommand(opts.ActiveDeadlineSeconds)
	}
	return []string{"sleep", strconv.FormatInt(opts.ActiveDeadlineSeconds, 10)}
}

const (
	// PodNamePrefix starts every debug pod's name; the admission policy (package deploy) lets
	// exec reach only pods so named.
	PodNamePrefix = "nodestate-"
	suffixLen     = 5
	// A pod name is its hostname; keep it a valid DNS label.
	maxPodName = 63
)

// podName is nodestate-<node>-<suffix>, with the node part shortened to fit 63 characters and
// dots turned into dashes so the name is also a valid hostname.
func podName(node string) string {
	part := strings.ReplaceAll(node, ".", "-")
	if max := maxPodName - len(PodNamePrefix) - 1 - suffixLen; len(part) > max {
		part = part[:max]
	}
	part = strings.TrimRight(part, "-")
	return PodNamePrefix + part + "-" + nameSuffixFunc(suffixLen)
}

// nodeLabelValue returns node if it is a valid label value (up to 63 characters, as most node
// names are); otherwise a truncated prefix plus a hash, which stays unique per node.
func nodeLabelValue(node string) string {
	if len(content.IsLabelValue(node)) == 0 {
		return node
	}
	sum := sha256.Sum256([]byte(node))
	hash := hex.EncodeToString(sum[:])[:10]
	prefix := node
	if max := 63 - 1 - len(hash); len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(prefix, "-_.")
	return prefix + "-" + hash
}
