package fetch

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Only extended resources are kept: not cpu, memory, hugepages, pods, nor kubernetes.io's.
func TestDeviceStatus(t *testing.T) {
	list := corev1.ResourceList{
		"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi"), "hugepages-2Mi": resource.MustParse("0"),
		"pods": resource.MustParse("110"), "example.kubernetes.io/x": resource.MustParse("1"), "kubernetes.io/y": resource.MustParse("1"),
		"nvidia.com/gpu": resource.MustParse("32"), "example.com/fpga": resource.MustParse("0"),
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: list, Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}}}
	got := deviceStatus(node)
	want := DeviceStatus{Capacity: map[string]int64{"nvidia.com/gpu": 32, "example.com/fpga": 0}, Allocatable: map[string]int64{"nvidia.com/gpu": 0}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := deviceStatus(&corev1.Node{}); got != noDevices {
		t.Errorf("a node without extended resources: %+v", got)
	}
}
