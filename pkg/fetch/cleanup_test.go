package fetch

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func leftover(ns, name string, age time.Duration, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, Labels: labels,
		CreationTimestamp: metav1.NewTime(t0.Add(-age)),
	}}
}

func TestCleanup(t *testing.T) {
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return t0 }
	ours := map[string]string{LabelManagedBy: ManagedBy, LabelNode: "n1"}
	objs := func() []runtime.Object {
		return []runtime.Object{
			leftover("default", "nodestate-n1-aaaaa", time.Hour, ours),
			leftover("kube-system", "nodestate-n2-bbbbb", time.Hour, ours),
			leftover("kube-system", "nodestate-n3-young", time.Second, ours),
			leftover("default", "app", time.Hour, map[string]string{"app": "web"}),
			leftover("default", "other-tool", time.Hour, map[string]string{LabelManagedBy: "Helm"}),
		}
	}
	tests := []struct {
		name      string
		namespace string
		minAge    time.Duration
		want      []string
	}{
		{"all namespaces", "", 0, []string{"default/nodestate-n1-aaaaa", "kube-system/nodestate-n2-bbbbb", "kube-system/nodestate-n3-young"}},
		{"one namespace", "kube-system", 0, []string{"kube-system/nodestate-n2-bbbbb", "kube-system/nodestate-n3-young"}},
		{"spare running ones", "", time.Minute, []string{"default/nodestate-n1-aaaaa", "kube-system/nodestate-n2-bbbbb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(false, objs()...)
			got, err := Cleanup(context.Background(), c, tt.namespace, tt.minAge)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			all, _ := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if len(all.Items) != 5-len(tt.want) {
				t.Errorf("%d pods left, want %d", len(all.Items), 5-len(tt.want))
			}
			// Deleting again is a no-op, not an error.
			if again, err := Cleanup(context.Background(), c, tt.namespace, tt.minAge); err != nil || len(again) != 0 {
				t.Errorf("second cleanup: %v, %v", again, err)
			}
		})
	}
}

func TestPodIndex(t *testing.T) {
	pods := []runtime.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "uid-web"},
			Spec: corev1.PodSpec{NodeName: "n1", InitContainers: []corev1.Container{{Name: "init"}},
				Containers:          []corev1.Container{{Name: "app"}, {Name: "waiting"}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}},
			Status: corev1.PodStatus{
				InitContainerStatuses:      []corev1.ContainerStatus{{Name: "init", ContainerID: "containerd://i1"}},
				ContainerStatuses:          []corev1.ContainerStatus{{Name: "app", ContainerID: "cri-o://c1"}, {Name: "waiting"}},
				EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug", ContainerID: "docker://e1"}},
			},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n1", UID: "uid-mirror",
				Annotations: map[string]string{"kubernetes.io/config.mirror": "static-hash"}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "etcd"}}},
		},
		// An earlier debug pod of this plugin (another run's), known by its label.
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nodestate-n1-abcde", UID: "uid-debug",
				Labels: map[string]string{LabelManagedBy: ManagedBy, LabelNode: "n1"}},
			Spec: corev1.PodSpec{NodeName: "n1"},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "elsewhere", UID: "uid-other"},
			Spec:       corev1.PodSpec{NodeName: "n2"},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "x", ContainerID: "containerd://o1"}}},
		},
	}
	c := newClient(false, pods...)
	ix, err := IndexNodePods(context.Background(), c, "n1")
	if err != nil {
		t.Fatal(err)
	}
	// One list, by node, from the watch cache as it is.
	if a := c.Actions(); len(a) != 1 || a[0].GetVerb() != "list" ||
		a[0].(clienttesting.ListAction).GetListRestrictions().Fields.String() != "spec.nodeName=n1" {
		t.Errorf("requests %v, want one list by spec.nodeName", a)
	} else if rv := a[0].(clienttesting.ListActionImpl).ListOptions.ResourceVersion; rv != "0" {
		t.Errorf("listed at resourceVersion %q, want 0 (the watch cache)", rv)
	}
	want := &PodIndex{
		Pods: map[string]PodRef{
			"uid-web":     {"a", "web"},
			"uid-mirror":  {"kube-system", "etcd-n1"},
			"static-hash": {"kube-system", "etcd-n1"},
			"uid-debug":   {"kube-system", "nodestate-n1-abcde"},
		},
		Containers: map[string]ContainerRef{
			"i1": {"a", "web", "init"},
			"c1": {"a", "web", "app"},
			"e1": {"a", "web", "debug"},
		},
		// By pod UID, and by the static pod's own UID; unknown (absent) for a pod without
		// containers in its spec.
		ContainerNames: map[string]map[string]bool{
			"uid-web":     {"init": true, "app": true, "waiting": true, "debug": true},
			"uid-mirror":  {"etcd": true},
			"static-hash": {"etcd": true},
		},
		Statuses: map[string][]ContainerStatus{"uid-web": {
			{Name: "init", ID: "containerd://i1"}, {Name: "app", ID: "cri-o://c1"}, {Name: "debug", ID: "docker://e1"},
		}},
		Debug: map[string]bool{"uid-debug": true},
		// Not Succeeded or Failed, by both of a static pod's UIDs.
		Active: map[string]bool{"uid-web": true, "uid-mirror": true, "static-hash": true, "uid-debug": true},
	}
	// The pods holding node resources: not the debug pod, kept to names and resources.
	var running []string
	for _, p := range ix.Running {
		running = append(running, p.Namespace+"/"+p.Name+"/"+string(p.UID))
		if p.Spec.NodeName != "" || p.Status.Phase != "" {
			t.Errorf("%s kept more than its resources", p.Name)
		}
	}
	if got := strings.Join(running, " "); got != "a/web/uid-web kube-system/etcd-n1/uid-mirror" {
		t.Errorf("running pods: %s", got)
	}
	ix.Running = nil
	if diff := cmp.Diff(want, ix); diff != "" {
		t.Errorf("index (-want +got):\n%s", diff)
	}
	if got := actions(c, "pods"); !slices.Equal(got, []string{"list"}) {
		t.Errorf("pod calls %v, want one list", got)
	}
	if f := c.Actions()[0].(clienttesting.ListAction).GetListRestrictions().Fields.String(); f != "spec.nodeName=n1" {
		t.Errorf("list field selector %q, want spec.nodeName=n1", f)
	}

	if r, ok := ix.Container("containerd://c1"); !ok || r.String() != "a/web/app" {
		t.Errorf("Container(containerd://c1) = %v, %v", r, ok)
	}
	if r, ok := ix.Pod("static-hash"); !ok || r.String() != "kube-system/etcd-n1" {
		t.Errorf("Pod(static-hash) = %v, %v", r, ok)
	}
	var nilIndex *PodIndex
	if _, ok := nilIndex.Pod("x"); ok {
		t.Error("nil index found a pod")
	}
}
