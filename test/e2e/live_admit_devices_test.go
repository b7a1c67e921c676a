//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// TestLiveAdmitDevices admits a 2-GPU pod on two kwok nodes with the same four GPUs (--devices):
// one with no device checkpoint, one whose checkpoint (examples/kubelet-root's) gives every GPU
// to pods the API server does not have. --all-nodes says on which GPUs and NUMA nodes each
// admits it: the kubelet frees a gone pod's devices at its next allocation (the checkpoint keeps
// them until then), so both do, and the second says whose GPUs it frees; pod/NAME too.
func TestLiveAdmitDevices(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	const config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n"
	checkpoint, err := os.ReadFile("../../examples/kubelet-root/device-plugins/kubelet_internal_checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	const gone = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f" // holds three of the four GPUs there
	ns := NewNamespace(t, nil)
	sel := TestSelector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for name, files := range map[string]map[string]string{
		"dev-free":  {"config.yaml": config},
		"dev-stale": {"config.yaml": config, "device-plugins/kubelet_internal_checkpoint": string(checkpoint)},
	} {
		CreateNode(t, name, decode.HomeKubelet, nil, KubeletDir(t, files))
		// The node-resource predicate reads the GPUs from the node's allocatable.
		node, err := Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
			if list != nil {
				list["nvidia.com/gpu"] = resource.MustParse("4")
			}
		}
		if node.Status.Allocatable == nil {
			node.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
		}
		if _, err := Client().CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expectNoLeftovers(t)
	gpus := `{"resources": {"nvidia.com/gpu": [`
	for i, id := range []string{"GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f", "GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a", "GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b", "GPU-4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d"} {
		if i > 0 {
			gpus += ","
		}
		gpus += `{"ID": "` + id + `", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}}`
	}
	gpus += `]}}`
	dir := t.TempDir()
	devices, manifest := filepath.Join(dir, "devices.json"), filepath.Join(dir, "gpu-pod.yaml")
	const spec = "spec:\n  containers:\n  - name: train\n    image: registry.example/train:1\n    resources:\n      requests: {cpu: \"1\", memory: 64Mi, nvidia.com/gpu: \"2\"}\n      limits: {cpu: \"1\", memory: 64Mi, nvidia.com/gpu: \"2\"}\n"
	if err := os.WriteFile(devices, []byte(gpus), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: gpu-pod}\n"+spec), 0o600); err != nil {
		t.Fatal(err)
	}

	type result struct {
		Node       string `json:"node"`
		Error      string `json:"error"`
		Replayed   []string
		Admissions []struct {
			Admitted   bool   `json:"admitted"`
			Message    string `json:"message"`
			Containers []struct {
				Devices         map[string][]string         `json:"devices"`
				DeviceNUMANodes map[string]map[string][]int `json:"deviceNUMANodes"`
				DevicesPick     map[string]string           `json:"devicesPick"`
				CPUNUMANodes    []int                       `json:"cpuNUMANodes"`
			} `json:"containers"`
			Stale []struct {
				PodUID  string              `json:"podUID"`
				Devices map[string][]string `json:"devices"`
			} `json:"staleDeviceHolders"`
		} `json:"admissions"`
		LargestDeviceRequest map[string]map[string]int `json:"largestDeviceRequest"`
	}
	r := nodestate(t, nil, "admit", "--all-nodes", "-l", sel, "-n", ns, "-f", manifest, "--devices", devices, "-o", "json")
	var list struct {
		Items []result `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Items) != 2 || r.ExitCode != 0 {
		t.Fatalf("admit --all-nodes: %v\n%s", err, r)
	}
	for _, n := range list.Items {
		if n.Error != "" || len(n.Admissions) != 1 {
			t.Fatalf("%s: %+v\n%s", n.Node, n, r)
		}
		a := n.Admissions[0]
		if !a.Admitted || len(a.Containers) != 1 || len(a.Stale) != 0 {
			t.Fatalf("%s: %+v\n%s", n.Node, a, r)
		}
		c := a.Containers[0]
		ids := c.Devices["nvidia.com/gpu"]
		if len(ids) != 2 || !slices.Equal(c.DeviceNUMANodes["nvidia.com/gpu"][ids[0]], []int{0}) {
			t.Errorf("%s: devices %v, NUMA %v", n.Node, c.Devices, c.DeviceNUMANodes)
		}
		if !strings.Contains(c.DevicesPick["nvidia.com/gpu"], "one of several equivalent") {
			t.Errorf("%s: pick %v", n.Node, c.DevicesPick)
		}
	}
	// The replay found the checkpoint's holders and freed them as the kubelet does, and says so.
	freed := regexp.MustCompile(`pod ` + gone + `, which the node no longer runs, still holds .*nvidia\.com/gpu GPU-[^ ]*,GPU-[^ ]*,GPU-[^ ]*: the kubelet frees them`)
	if !freed.MatchString(r.Stderr) {
		t.Errorf("admit --all-nodes: no note %q\n%s", freed, r)
	}

	// The table a human reads: the DEVICES column, and the last line names the nodes and where.
	r = nodestate(t, nil, "admit", "--all-nodes", "-l", sel, "-n", ns, "-f", manifest, "--devices", devices)
	t.Logf("admit --all-nodes:\n%s", r.Stdout)
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "DEVICES") || !strings.Contains(r.Stdout, "NUMA 0*") ||
		!strings.Contains(r.Stdout, "2 of 2 nodes admit the pods") {
		t.Errorf("admit --all-nodes table:\n%s", r)
	}

	// pod/NAME: the same pod bound to the node without free GPUs; what would fit there.
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi"), "nvidia.com/gpu": resource.MustParse("2")}
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gpu-late", Namespace: ns}, Spec: corev1.PodSpec{NodeName: "dev-stale",
		Containers: []corev1.Container{{Name: "train", Image: "registry.example/train:1", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
	if _, err := Client().CoreV1().Pods(ns).Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = nodestate(t, nil, "admit", "pod/gpu-late", "-n", ns, "--devices", devices, "-o", "json")
	var one result
	if err := json.Unmarshal([]byte(r.Stdout), &one); err != nil || r.ExitCode != 0 || one.Node != "dev-stale" || len(one.Admissions) != 1 ||
		!one.Admissions[0].Admitted || !freed.MatchString(r.Stderr) {
		t.Fatalf("admit pod/gpu-late: %v\n%s", err, r)
	}
}
