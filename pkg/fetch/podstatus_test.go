package fetch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A static pod's statuses are found by the UID its cgroup has (the mirror annotation's) too;
// a container the status shows running is marked so, one not started yet is left out.
func TestPodIndexStatuses(t *testing.T) {
	ix := NewPodIndex([]corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n1", UID: "uid-mirror",
			Annotations: map[string]string{configMirrorAnnotation: "static-hash"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd"}, {Name: "waiting"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "etcd", ContainerID: "containerd://e1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "waiting"},
		}},
	}})
	want := []ContainerStatus{{Name: "etcd", ID: "containerd://e1", Running: true}}
	for _, uid := range []string{"uid-mirror", "static-hash"} {
		if diff := cmp.Diff(want, ix.Statuses[uid]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", uid, diff)
		}
	}
}
