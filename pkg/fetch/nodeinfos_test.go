package fetch

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeInfosShareAllocatable(t *testing.T) {
	node := func(name, cpu, memory string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}
	}
	same := func(a, b corev1.ResourceList) bool {
		return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
	}

	keep := NodeInfos(true)
	a, b, c := keep(node("a", "4", "8Gi")), keep(node("b", "4000m", "8Gi")), keep(node("c", "8", "8Gi"))
	if !same(a.Allocatable, b.Allocatable) {
		t.Errorf("a and b have the same allocatable (4 CPUs, 8Gi), kept twice: %v, %v", a.Allocatable, b.Allocatable)
	}
	if same(a.Allocatable, c.Allocatable) || c.Allocatable.Cpu().String() != "8" {
		t.Errorf("c's allocatable is its own: %v", c.Allocatable)
	}
	if q := b.Allocatable[corev1.ResourceCPU]; q.MilliValue() != 4000 {
		t.Errorf("b's CPUs: %v", q)
	}
	if info := NodeInfos(false)(node("d", "4", "8Gi")); info.Allocatable != nil || info.Object != nil || info.Name != "d" || !info.listed {
		t.Errorf("without allocatable: %+v", info)
	}
	// With the allocatable, what the predicate reads of the object: name, labels, taints,
	// features, and nothing else of it.
	tainted := node("e", "4", "8Gi")
	tainted.Labels = map[string]string{"disk": "ssd"}
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}
	tainted.Status.Features = &corev1.NodeFeatures{}
	tainted.Status.NodeInfo.KubeletVersion = "v1.37.1"
	want := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: tainted.Labels}}
	want.Spec.Taints, want.Status.Features = tainted.Spec.Taints, tainted.Status.Features
	if info := keep(tainted); !reflect.DeepEqual(info.Object, want) {
		t.Errorf("the node object kept: %+v, want %+v", info.Object, want)
	}
}
