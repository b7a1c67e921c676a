package fetch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Host dirs are read-only mounts of DirectoryOrCreate hostPaths, after the kubelet root dir's.
func TestHostDirsInPod(t *testing.T) {
	opts := Options{HostDirs: []HostDir{{Name: "cdi-etc", Path: "/etc/cdi/", MountPath: "/host/etc/cdi"}}}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	p := GenerateDebugPod(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, opts)
	mounts, vols := p.Spec.Containers[0].VolumeMounts, p.Spec.Volumes
	if len(mounts) != 2 || len(vols) != 2 || mounts[1].Name != "cdi-etc" || !mounts[1].ReadOnly || mounts[1].MountPath != "/host/etc/cdi" {
		t.Fatalf("mounts %+v", mounts)
	}
	if hp := vols[1].HostPath; hp == nil || hp.Path != "/etc/cdi" || *hp.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("volume %+v", vols[1])
	}
}

func TestHostDirsValidate(t *testing.T) {
	for _, d := range []HostDir{
		{Name: VolumeName, Path: "/a", MountPath: "/b"},
		{Name: "Bad_Name", Path: "/a", MountPath: "/b"},
		{Name: "x", Path: "a", MountPath: "/b"},
		{Name: "x", Path: "/a", MountPath: MountPath + "/sub"},
	} {
		if err := (Options{HostDirs: []HostDir{d}}).Validate(); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}
