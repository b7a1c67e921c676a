package fetch

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fixSuffix makes debug pod names predictable for the test.
func fixSuffix(t *testing.T) {
	t.Helper()
	old := nameSuffixFunc
	nameSuffixFunc = func(n int) string { return strings.Repeat("x", n) }
	t.Cleanup(func() { nameSuffixFunc = old })
}

// expectedPod is the pod the issue specifies, field by field; cases edit a copy.
func expectedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "nodestate-node-1-xxxxx",
			Namespace: DefaultNamespace,
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "kubectl-nodestate",
				"kubectl-nodestate/node":       "node-1",
			},
			Annotations: map[string]string{"kubectl-nodestate/node": "node-1"},
		},
		Spec: corev1.PodSpec{
			NodeName:    "node-1",
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            "nodestate",
				Image:           "busybox:1.37",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sleep", "300"},
				WorkingDir:      "/kubelet",
				VolumeMounts: []corev1.VolumeMount{{Name: "kubelet", MountPath: "/kubelet", ReadOnly: true,
					RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)}},
				SecurityContext: &corev1.SecurityContext{
					Privileged:               ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					ReadOnlyRootFilesystem:   ptr.To(true),
					RunAsUser:                ptr.To[int64](0),
					RunAsNonRoot:             ptr.To(false),
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{{
				Name: "kubelet",
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: "/var/lib/kubelet",
					Type: ptr.To(corev1.HostPathDirectory),
				}},
			}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			ActiveDeadlineSeconds:         ptr.To[int64](300),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
		},
	}
}

func TestGenerateDebugPod(t *testing.T) {
	fixSuffix(t)
	long := strings.Repeat("a", 60) + ".example.internal" // 77 characters
	tests := []struct {
		name string
		node string
		opts Options
		want func(p *corev1.Pod)
	}{
		{
			name: "defaults",
			node: "node-1",
			want: func(p *corev1.Pod) {},
		},
		{
			name: "every option",
			node: "node-1",
			opts: Options{
				Namespace:             "kube-system",
				Image:                 "registry.local/tools/busybox:1.37",
				ImagePullSecret:       "regcred",
				KubeletRootDir:        "/var/snap/microk8s/common/var/lib/kubelet",
				ActiveDeadlineSeconds: 600,
			},
			want: func(p *corev1.Pod) {
				p.Namespace = "kube-system"
				c := &p.Spec.Containers[0]
				c.Image = "registry.local/tools/busybox:1.37"
				c.Command = []string{"sleep", "600"}
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
				p.Spec.Volumes[0].HostPath.Path = "/var/snap/microk8s/common/var/lib/kubelet"
				p.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
			},
		},
		{
			// The deadline follows the waits: 3m + 2m (default exec) + 1m margin.
			name: "long pod-running timeout",
			node: "node-1",
			opts: Options{PodRunningTimeout: 3 * time.Minute},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Command = []string{"sleep", "360"}
				p.Spec.ActiveDeadlineSeconds = ptr.To[int64](360)
			},
		},
		{
			name: "dotted node name",
			node: "ip-10-0-0-1.ec2.internal",
			want: func(p *corev1.Pod) {
				p.Name = "nodestate-ip-10-0-0-1-ec2-internal-xxxxx"
				p.Labels[LabelNode] = "ip-10-0-0-1.ec2.internal"
				p.Annotations[AnnotationNode] = "ip-10-0-0-1.ec2.internal"
				p.Spec.NodeName = "ip-10-0-0-1.ec2.internal"
			},
		},
		{
			name: "node name too long for a label",
			node: long,
			want: func(p *corev1.Pod) {
				p.Name = "nodestate-" + strings.Repeat("a", 47) + "-xxxxx"
				p.Labels[LabelNode] = nodeLabelValue(long)
				p.Annotations[AnnotationNode] = long
				p.Spec.NodeName = long
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}}
			want := expectedPod()
			tt.want(want)
			got := GenerateDebugPod(node, tt.opts)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GenerateDebugPod() mismatch (-want +got):\n%s", diff)
			}
			if len(got.Name) > 63 || len(content.IsDNS1123Label(got.Name)) > 0 {
				t.Errorf("pod name %q is not a valid DNS label", got.Name)
			}
			for k, v := range got.Labels {
				if errs := content.IsLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q: %v", k, v, errs)
				}
			}
		})
	}
}

func TestNodeLabelValue(t *testing.T) {
	a := strings.Repeat("a", 70)
	b := strings.Repeat("a", 69) + "b"
	if nodeLabelValue(a) == nodeLabelValue(b) {
		t.Errorf("long names sharing a prefix got the same label %q", nodeLabelValue(a))
	}
	for _, n := range []string{a, b, strings.Repeat("a", 51) + "-.-" + strings.Repeat("c", 30)} {
		if v := nodeLabelValue(n); len(content.IsLabelValue(v)) > 0 {
			t.Errorf("nodeLabelValue(%q) = %q, not a label value", n, v)
		}
	}
}

// A node whose allocatable CPU is all handed out to Guaranteed pods refuses any pod that
// requests CPU (OutOfcpu). With no requests or limits in any container the pod is BestEffort:
// admitted there, in the shared CPU pool, holding no exclusive CPU nor NUMA memory.
func TestDebugPodIsBestEffort(t *testing.T) {
	for _, opts := range []Options{{}, {PodRunningTimeout: 3 * time.Minute, Image: "registry.local/bb:1"}} {
		p := GenerateDebugPod(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, opts)
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 || len(c.Resources.Claims) > 0 {
				t.Errorf("container %s has resources %+v; the debug pod must be BestEffort", c.Name, c.Resources)
			}
		}
		if p.Spec.Resources != nil || p.Spec.Overhead != nil || p.Spec.PriorityClassName != "" {
			t.Errorf("pod-level resources, overhead or priority class set: %+v", p.Spec)
		}
	}
}
