package fetch

import (
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// HostDir is a directory of the node, beside the kubelet root dir, that the debug pod mounts
// read-only for a dump's script to read (the CDI spec dirs).
type HostDir struct {
	// Name is the volume's name, a DNS label unique in the pod.
	Name string
	// Path is the directory on the node; MountPath where it appears in the container.
	Path, MountPath string
}

// hostDirVolumes mounts dirs read-only (HostDirVolume, each at its MountPath).
func hostDirVolumes(dirs []HostDir) ([]corev1.VolumeMount, []corev1.Volume) {
	var mounts []corev1.VolumeMount
	var vols []corev1.Volume
	for _, d := range dirs {
		mounts = append(mounts, corev1.VolumeMount{Name: d.Name, MountPath: d.MountPath, ReadOnly: true,
			RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)})
		vols = append(vols, HostDirVolume(d))
	}
	return mounts, vols
}

// HostDirVolume is d's hostPath volume. DirectoryOrCreate, not Directory: a node without the
// directory (most nodes have no /etc/cdi) must still run the pod, and the empty directory the
// kubelet then creates (0755, root) reads as what the node had, nothing; the container runtime
// would create it for an untyped hostPath all the same. The admission policy (package deploy)
// admits exactly these.
func HostDirVolume(d HostDir) corev1.Volume {
	return corev1.Volume{Name: d.Name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: path.Clean(d.Path), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}
}

// validateHostDirs: absolute paths, valid and unique names, no mount over the kubelet's.
func validateHostDirs(dirs []HostDir) error {
	names := map[string]bool{VolumeName: true}
	for _, d := range dirs {
		switch {
		case len(content.IsDNS1123Label(d.Name)) > 0 || names[d.Name]:
			return invalid("host dir volume name %q is not a unique DNS label", d.Name)
		case !path.IsAbs(d.Path) || !path.IsAbs(d.MountPath):
			return invalid("host dir %q must be mounted from and at absolute paths", d.Name)
		case d.MountPath == MountPath || strings.HasPrefix(d.MountPath, MountPath+"/"):
			return invalid("host dir %q cannot be mounted at or under %s", d.Name, MountPath)
		}
		names[d.Name] = true
	}
	return nil
}
