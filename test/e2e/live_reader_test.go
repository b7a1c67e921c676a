//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// readerGPUCheckpoint is a device checkpoint of kubelet v1.37.1 (written by its own
// checkpoint.New(...).MarshalCheckpoint, checksum included): four NVIDIA GPUs registered by
// UUID, one of them held by a pod on NUMA node 0.
const readerGPUCheckpoint = `{"Data":{"PodDeviceEntries":[{"PodUID":"6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f","ContainerName":"cuda","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a"]},"AllocResp":"CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS0yZDNlNGY1YS02YjdjLTRkOGUtOWYwYS0xYjJjM2Q0ZTVmNmE="}],"RegisteredDevices":{"nvidia.com/gpu":["GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f","GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a","GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b","GPU-4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d"]}},"Checksum":1543026327}`

// TestLiveReaderBinary reads a kwok node with the plugin's own binary as the debug pod's reader
// (--reader=binary; the exec mapper runs the pod's `/kubectl-nodestate node-read` as the plugin
// under test, in the node's kubelet dir). verify answers exactly as with the busybox reader. The
// node has GPUs named by UUID and no PodResources socket (kwok serves none): the reader's
// PodResources section says so, and admit must not say a pod asking for a GPU is admitted: the
// GPUs' NUMA nodes are known to no source.
func TestLiveReaderBinary(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/online"); err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	const config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ntopologyManagerPolicy: restricted\n"
	const gpu = "nvidia.com/gpu"
	ns := NewNamespace(t, nil)
	name := "reader-gpu"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	CreateNode(t, name, decode.HomeKubelet, nil, KubeletDir(t, map[string]string{
		"config.yaml": config, "device-plugins/kubelet_internal_checkpoint": readerGPUCheckpoint}))
	node, err := Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The node's status counts the four GPUs, all healthy, as the checkpoint lists them.
	for _, list := range []*corev1.ResourceList{&node.Status.Capacity, &node.Status.Allocatable} {
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[gpu] = resource.MustParse("4")
	}
	if _, err := Client().CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectNoLeftovers(t)

	// verify: the node reader's tar is the busybox script's.
	shell := nodestate(t, nil, "verify", name, "-n", ns)
	binary := nodestate(t, nil, "verify", name, "-n", ns, "--reader=binary")
	t.Logf("verify --reader=binary in %s (busybox reader: %s):\n%s", binary.Duration.Round(time.Millisecond), shell.Duration.Round(time.Millisecond), binary.Stdout)
	if binary.ExitCode != 0 || binary.ExitCode != shell.ExitCode || binary.Stdout != shell.Stdout {
		t.Errorf("verify --reader=binary differs from the busybox reader's:\n%s\nbusybox reader:\n%s", binary, shell)
	}
	if n, err := Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil || n.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(cp.readerProxy.port) {
		t.Errorf("the node's exec did not go to the node reader proxy (err %v): the debug pod did not run the node reader", err)
	}

	// The PodResources section, as the node reader prints it in a debug pod on this node.
	pod := fetch.GenerateDebugPod(node, fetch.Options{Namespace: ns, Reader: fetch.ReaderBinary, Image: fetch.ReaderImageRepo + ":e2e"})
	if _, err := Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitPodRunning(t, ns, pod.Name, 30*time.Second)
	stdout, stderr, err := ExecInPod(ctx, ns, pod.Name, fetch.ContainerName,
		fetch.NodeReadCommand(nil, []fetch.StderrDump{{ReaderSection: nodelocal.SectionPodResources}}))
	if err := Client().CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	WaitPodGone(t, ns, pod.Name, 30*time.Second)
	if err != nil || len(stdout) != 0 || !bytes.HasSuffix(stderr, []byte(fetch.CollectEnd)) {
		t.Fatalf("node-read --section=podresources: %v\nstdout %q\nstderr %q", err, stdout, stderr)
	}
	pr, err := machine.ParsePodResources(bytes.TrimSuffix(stderr, []byte(fetch.CollectEnd)))
	if err != nil || !strings.Contains(pr.Error, "no PodResources socket") {
		t.Fatalf("the PodResources section: %+v, %v, want its error to say there is no socket\n%s", pr, err, stderr)
	}
	t.Logf("PodResources section: %s", pr.Error)

	// admit: a pod asking for a GPU is not admitted; nothing knows the GPUs' NUMA nodes.
	manifest := filepath.Join(t.TempDir(), "gpu-pod.yaml")
	const spec = "apiVersion: v1\nkind: Pod\nmetadata: {name: gpu-pod}\nspec:\n  containers:\n  - name: train\n    image: registry.example/train:1\n    resources:\n      requests: {cpu: \"1\", memory: 64Mi, nvidia.com/gpu: \"1\"}\n      limits: {cpu: \"1\", memory: 64Mi, nvidia.com/gpu: \"1\"}\n"
	if err := os.WriteFile(manifest, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	r := nodestate(t, nil, "admit", name, "-n", ns, "--reader=binary", "-f", manifest, "-o", "json")
	t.Logf("admit --reader=binary -o json: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	var res struct {
		Error          string            `json:"error"`
		DeviceTopology map[string]string `json:"deviceTopology"`
		Admissions     []struct {
			Admitted bool   `json:"admitted"`
			Verdict  string `json:"verdict"`
		} `json:"admissions"`
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	doc := []byte(r.Stdout)
	if json.Unmarshal(doc, &list) == nil && len(list.Items) == 1 {
		doc = list.Items[0]
	}
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatalf("admit -o json: %v\n%s", err, r)
	}
	if r.ExitCode == 0 || len(res.Admissions) != 1 || res.Admissions[0].Admitted || res.Admissions[0].Verdict == "admitted" {
		t.Errorf("a pod asking for a GPU whose NUMA nodes no source gives: want not judged (never admitted, never exit 0)\n%s", r)
	}
	if src := res.DeviceTopology[gpu]; !strings.Contains(src, "no PodResources socket") {
		t.Errorf("deviceTopology[%s] = %q: want it to say why PodResources did not answer (no socket)", gpu, src)
	}
}
