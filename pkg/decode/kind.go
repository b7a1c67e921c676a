package decode

import (
	"path"
	"strings"
)

// Kind names a checkpoint file by its name on the node.
type Kind string

// The checkpoint files nodestate reads.
const (
	KindCPU       Kind = "cpu_manager_state"
	KindMemory    Kind = "memory_manager_state"
	KindDevices   Kind = "kubelet_internal_checkpoint"
	KindDRA       Kind = "dra_manager_state"
	KindDRAHealth Kind = "dra_health_state"
	KindPodStatus Kind = "pod_status_manager_state"
	KindAllocated Kind = "allocated_pods_state"
	KindActuated  Kind = "actuated_pods_state"
)

// File is a checkpoint file and where the kubelet keeps it, relative to its root dir.
type File struct {
	Kind Kind
	Path string
}

// Files lists every checkpoint file nodestate knows, in display order. The device manager's
// file is under device-plugins/ (a path the kubelet hard-codes).
var Files = []File{
	{KindCPU, "cpu_manager_state"},
	{KindMemory, "memory_manager_state"},
	{KindDevices, "device-plugins/kubelet_internal_checkpoint"},
	{KindDRA, "dra_manager_state"},
	{KindDRAHealth, "dra_health_state"},
	{KindPodStatus, "pod_status_manager_state"},
	{KindAllocated, "allocated_pods_state"},
	{KindActuated, "actuated_pods_state"},
}

// Paths returns the relative paths of every known checkpoint file.
func Paths() []string {
	out := make([]string, len(Files))
	for i, f := range Files {
		out[i] = f.Path
	}
	return out
}

// ParseKind maps a file name (or a path ending in one) to its kind.
func ParseKind(name string) (Kind, bool) {
	base := path.Base(strings.ReplaceAll(name, "\\", "/"))
	for _, f := range Files {
		if string(f.Kind) == base {
			return f.Kind, true
		}
	}
	return "", false
}

// PathOf returns the path of kind relative to the kubelet root dir.
func PathOf(kind Kind) string {
	for _, f := range Files {
		if f.Kind == kind {
			return f.Path
		}
	}
	return string(kind)
}
