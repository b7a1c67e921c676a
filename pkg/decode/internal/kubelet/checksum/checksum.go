// Package checksum mirrors k8s.io/kubernetes/pkg/kubelet/checkpointmanager/checksum: the stored
// checksum is a uint64 holding an fnv32a value.
package checksum

// Checksum is the kubelet's checksum.Checksum.
type Checksum uint64
