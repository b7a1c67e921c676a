//go:build e2enode

package e2enode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// shapedResource is a device plugin resource whose devices are shaped like a real plugin's: its
// IDs and the Topology it sends in ListAndWatch, as the sample plugin's -ids items (ID: no
// Topology; ID@N: NUMA node N, -1 included; ID@: a Topology of zero nodes).
type shapedResource struct {
	name, socket, like string
	items              []string
}

// sent is one -ids item's device: its ID, and the NUMA nodes its Topology lists (nil: none
// sent; zero: a Topology with no node).
func sent(item string) (id string, nodes []int64, zero bool) {
	id, numa, has := strings.Cut(item, "@")
	switch {
	case !has:
		return id, nil, false
	case numa == "":
		return id, nil, true
	}
	n, err := strconv.ParseInt(numa, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("-ids item %q: %v", item, err))
	}
	return id, []int64{n}, false
}

// gpuStep is one pod asking for n devices of a resource.
type gpuStep struct {
	name, resource string
	n              int
}

// gpuPrediction is one admission of admit -o json. Verdict and NotJudged are read here, not
// from admit.Admission, so this test reads the three answers whatever the Go type says.
type gpuPrediction struct {
	admit.Admission
	Verdict   string   `json:"verdict"`
	NotJudged []string `json:"notJudged"`
}

// notJudged says why admit did not judge the pod: its verdict, or (before there was one) the
// device requests it did not replay beside a "yes".
func (a gpuPrediction) notJudged() string {
	switch {
	case a.Verdict != "" && a.Verdict != "admitted" && a.Verdict != "refused":
		return fmt.Sprintf("verdict %s: %s", a.Verdict, strings.Join(append(a.NotJudged, a.Unreplayed...), "; "))
	case len(a.NotJudged) > 0 || len(a.Unreplayed) > 0:
		return strings.Join(append(a.NotJudged, a.Unreplayed...), "; ")
	}
	return ""
}

// gpuAdmitResult is one node's admit -o json.
type gpuAdmitResult struct {
	Error          string            `json:"error"`
	DeviceTopology map[string]string `json:"deviceTopology"`
	KubeletStart   struct {
		Starts bool `json:"starts"`
	} `json:"kubeletStart"`
	Admissions []gpuPrediction `json:"admissions"`
}

// TestAdmitGPUShapedDevicesBinaryReader registers device plugins over the kubelet's gRPC whose
// devices are shaped like real GPU, accelerator and NIC plugins' (NVIDIA UUIDs with and without
// topology, time-sliced replicas UUID::n, MIG UUIDs, AMD's explicit {ID: -1}, Intel's Topology of
// zero nodes, PCI addresses whose plugin sends another topology than sysfs says), with
// topologyManagerPolicy restricted. Before each pod, `admit NODE --reader=binary --image IMAGE -f
// pod.yaml -o json` predicts it WITHOUT --devices: the debug pod runs the plugin's own image,
// whose node reader asks the kubelet's PodResources API. The pod is then created and the
// prediction compared with the kubelet: the devices it gave (PodResources List), up to devices
// it cannot tell apart, or its rejection's reason, status message and event, word for word.
// Where a source cannot be had the pod must not be admitted: the image refused by the shape
// policy, and the busybox reader (no PodResources). The reader's PodResources section, read in
// a debug pod of the same shape, must list the devices as the plugins sent them and as List
// says. Pods, plugins, the kubelet's configuration and device checkpoint, the shape policy's
// images, the bind mount and the image are put back.
//
// The e2e kubelet's root dir is its own while its device manager's files are under
// /var/lib/kubelet (fixed): admit reads /var/lib/kubelet (--kubelet-root-dir), and the test
// bind-mounts the kubelet's pod-resources dir there, as one root dir holds both on a real node.
func TestAdmitGPUShapedDevicesBinaryReader(t *testing.T) {
	pci := machinePCIDevices(t)
	if len(pci) < 2 {
		t.Fatalf("this machine has %d PCI functions in sysfs; the test needs 2", len(pci))
	}
	pciIDs := slices.Sorted(maps.Keys(pci))[:min(len(pci), 3)]
	// The SR-IOV plugin's pool with excludeTopology sends no Topology whatever sysfs says; a
	// plugin may also send a node sysfs does not (-1 here on a VM). Each PCI device is sent
	// against its sysfs numa_node: none where sysfs has one, and for the first, node 0 where
	// sysfs has -1. The sysfs rule mispredicts both; the kubelet reads what was sent.
	var sriov []string
	for i, id := range pciIDs {
		switch {
		case pci[id] >= 0:
			sriov = append(sriov, id)
		case i == 0:
			sriov = append(sriov, id+"@0")
		default:
			sriov = append(sriov, id)
		}
		t.Logf("PCI %s: sysfs numa_node %d, the plugin sends %q", id, pci[id], sriov[i])
	}
	replicas := make([]string, 4)
	for i := range replicas {
		replicas[i] = fmt.Sprintf("GPU-3e8c6d21-7a4f-4b9e-8c1d-5f2a7e9b0c43::%d@0", i)
	}
	resources := []shapedResource{
		{"nvidia.com/gpu", "nvgpu", "NVIDIA: GPU UUIDs; numa_node -1 sent as no Topology",
			[]string{"GPU-6c2a1f9e-4b7d-4e3a-9f8c-2d5b7a1e6c90@0", "GPU-9d4e2b7a-1c8f-4a6d-b3e5-7f0a9c2d4e81@0", "GPU-1f7b3c5d-9e2a-4d8b-a6c4-0e9f2b7d5a36"}},
		{"nvidia.com/gpu.shared", "nvshared", "NVIDIA time-slicing: replicas UUID::n of one GPU", replicas},
		{"nvidia.com/mig-1g.10gb", "nvmig", "NVIDIA MIG: MIG UUIDs of a GPU whose numa_node is -1",
			[]string{"MIG-5a9e2c7f-3b1d-5e8a-9c4f-6d2b8e1a7c03", "MIG-8b3d6f1a-2e9c-5a7b-8d0e-4c6f1a9b3e72"}},
		{"amd.com/gpu", "amd", "AMD: Topology {ID: -1} sent explicitly", []string{"amdgpu_xcp_0@-1", "amdgpu_xcp_1@-1"}},
		{"gpu.intel.com/i915", "intel", "Intel: one device on a node, two with a Topology of zero nodes", []string{"card0-0@0", "card1-0@", "card1-1@"}},
		{"intel.com/sriov_netdevice", "sriov", "SR-IOV: PCI addresses, Topology not as sysfs says", sriov},
	}
	const sriovResource = "intel.com/sriov_netdevice"
	steps := []gpuStep{
		{"gpu-two", "nvidia.com/gpu", 2},                 // the two GPUs on NUMA node 0
		{"gpu-unaligned", "nvidia.com/gpu", 1},           // only the GPU without topology left: no hint
		{"shared-two", "nvidia.com/gpu.shared", 2},       // two of four replicas
		{"shared-three", "nvidia.com/gpu.shared", 3},     // two left
		{"mig-three", "nvidia.com/mig-1g.10gb", 3},       // no topology, no hint: the device manager's own refusal
		{"mig-two", "nvidia.com/mig-1g.10gb", 2},         // both
		{"amd-one", "amd.com/gpu", 1},                    // a Topology on no NUMA node of the machine
		{"intel-two", "gpu.intel.com/i915", 2},           // one device with a node, the others with none
		{"intel-one", "gpu.intel.com/i915", 1},           // the one with a node
		{"sriov-two", sriovResource, min(2, len(sriov))}, // against sysfs
		{"sriov-one", sriovResource, 1},
	}
	// Every answer the kubelet gives here, whatever the machine's sysfs: "" is admitted.
	coveredReasons := []string{"", "TopologyAffinityError", "UnexpectedAdmissionError"}
	numaOf := map[string]map[string]int{} // resource -> ID -> its one NUMA node, -1 for none
	for _, r := range resources {
		numaOf[r.name] = map[string]int{}
		for _, item := range r.items {
			id, nodes, _ := sent(item)
			numaOf[r.name][id] = -1
			if len(nodes) == 1 && nodes[0] >= 0 {
				numaOf[r.name][id] = int(nodes[0])
			}
		}
	}

	ctx := context.Background()
	// After the kubelet is back with its configuration, the resources the node's status still
	// counts (0 after the restart) are taken out of it.
	t.Cleanup(func() { dropStatusResources(t, resources) })
	k := restartDeviceKubelet(t, "admit-gpu-shaped", func(cfg map[string]any) { cfg["topologyManagerPolicy"] = "restricted" })
	// The kubelet wipes the device-plugins dir at start: the plugins register after it.
	for _, r := range resources {
		k.startPlugin(t, r.name, r.socket, strings.Join(r.items, ","))
	}
	for _, r := range resources {
		waitResource(t, corev1.ResourceName(r.name), int64(len(r.items)), int64(len(r.items)))
		t.Logf("%s registered (%s): %s", r.name, r.like, strings.Join(r.items, ","))
	}
	bindPodResources(t)
	image := importPluginImage(t)

	dir := t.TempDir()
	live := []string{"--kubelet-root-dir", devicePluginRoot, "--kubelet-config", k.config}
	binary := append(slices.Clone(live), "--reader=binary", "--image", image)
	probe := devicePod("gpu-probe", "nvidia.com/gpu", 1)

	// The image refused by the shape policy (it lists busybox only): no debug pod, no answer,
	// and never "admitted".
	debugPod := readerDebugPod(t, image)
	if _, err := node.Client.CoreV1().Pods(debugPod.Namespace).Create(ctx, debugPod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) &&
		!apierrors.IsInvalid(err) {
		t.Fatalf("the shape policy admits the plugin's image before it lists it: %v", err)
	}
	res, r := gpuAdmit(t, dir, probe, binary...)
	t.Logf("--reader=binary, image refused by the shape policy: exit %d, %s", r.code, oneLine(r.stderr))
	if r.code == 0 || anyAdmitted(res) {
		t.Errorf("the image refused: admit says the pod is admitted\n%s", r)
	}
	// The busybox reader cannot ask PodResources: the GPUs' NUMA nodes are known to no source.
	res, r = gpuAdmit(t, dir, probe, live...)
	if r.code == 0 || anyAdmitted(res) {
		t.Errorf("the busybox reader (no PodResources): admit says the pod is admitted\n%s", r)
	} else {
		t.Logf("the busybox reader: exit %d; deviceTopology[nvidia.com/gpu] %q", r.code, topologyOf(res, "nvidia.com/gpu"))
	}

	allowReaderImage(t, image, debugPod)

	compared, equal, seen := 0, 0, map[string]bool{}
	for _, s := range steps {
		p := devicePod("gpu-"+s.name, s.resource, s.n)
		held := podDevices(t) // before the pod: who holds what
		res, r := gpuAdmit(t, dir, p, binary...)
		if len(res) != 1 || len(res[0].Admissions) != 1 || !res[0].KubeletStart.Starts {
			t.Fatalf("%s: admit predicted no admission:\n%s", s.name, r)
		}
		want := res[0].Admissions[0]
		src := res[0].DeviceTopology[s.resource]
		if !strings.Contains(src, "PodResources") {
			t.Errorf("%s: %s: deviceTopology %q, want it from PodResources", s.name, s.resource, src)
		}
		why := want.notJudged()
		if wantCode := map[bool]int{true: 0, false: 1}[want.Admitted]; why == "" && r.code != wantCode {
			t.Errorf("%s: admitted %v but exit %d:\n%s", s.name, want.Admitted, r.code, r)
		}
		real := k.runPod(t, p)
		compared++
		if why != "" {
			t.Errorf("%s: admit did not judge it (deviceTopology %q): %s; the kubelet: phase %s %s %s", s.name, src, why,
				real.Status.Phase, real.Status.Reason, real.Status.Message)
			continue
		}
		seen[want.Reason] = true
		if diff := compareDevicePod(t, want.Admission, real, s.resource, held, numaOf[s.resource]); diff != "" {
			t.Errorf("%s: %s", s.name, diff)
			continue
		}
		equal++
	}
	for _, r := range coveredReasons {
		if !seen[r] {
			t.Errorf("no pod predicted with reason %q (\"\" is admitted)", r)
		}
	}
	t.Logf("%d predictions, %d equal", compared, equal)

	checkPodResourcesSection(t, debugPod, resources)
}

// gpuAdmit runs `admit NODE -f p.yaml -o json` with extra arguments and returns its node
// results (none when it printed none) and the run.
func gpuAdmit(t *testing.T, dir string, p *corev1.Pod, extra ...string) ([]gpuAdmitResult, result) {
	t.Helper()
	r := runAdmitJSON(t, dir, p, extra...)
	if strings.TrimSpace(r.stdout) == "" {
		return nil, r
	}
	var list struct {
		Items []gpuAdmitResult `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err == nil && list.Items != nil {
		return list.Items, r
	}
	var one gpuAdmitResult
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil {
		t.Fatalf("admit -o json: %v\n%s", err, r)
	}
	return []gpuAdmitResult{one}, r
}

func anyAdmitted(res []gpuAdmitResult) bool {
	for _, n := range res {
		for _, a := range n.Admissions {
			if a.Admitted || a.Verdict == "admitted" {
				return true
			}
		}
	}
	return false
}

func topologyOf(res []gpuAdmitResult, resourceName string) string {
	if len(res) == 0 {
		return ""
	}
	return res[0].DeviceTopology[resourceName]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readerDebugPod is the debug pod of the binary reader on this node, as the plugin makes it for
// --kubelet-root-dir /var/lib/kubelet.
func readerDebugPod(t *testing.T, image string) *corev1.Pod {
	t.Helper()
	n, err := node.Client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fetch.GenerateDebugPod(n, fetch.Options{Image: image, Reader: fetch.ReaderBinary, KubeletRootDir: devicePluginRoot})
}

// allowReaderImage adds image to the shape policy's images, as docs/security.md says (`kubectl
// nodestate rbac --image ... | kubectl apply -f -`), waits until the API server admits the
// debug pod (a server-side dry run), and puts the policy's parameters back at the end.
func allowReaderImage(t *testing.T, image string, debugPod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	cms := node.Client.CoreV1().ConfigMaps(fetch.DefaultNamespace)
	cm, err := cms.Get(ctx, "kubectl-nodestate-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saved := maps.Clone(cm.Data)
	t.Cleanup(func() {
		cm, err := cms.Get(context.Background(), "kubectl-nodestate-policy", metav1.GetOptions{})
		if err == nil {
			cm.Data = saved
			_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("put back the shape policy's parameters: %v", err)
		}
	})
	args := []string{"nodestate", "rbac"}
	for _, im := range append(strings.Split(saved["images"], ","), image) {
		args = append(args, "--image", im)
	}
	for _, d := range strings.Split(saved["kubeletRootDirs"], ",") {
		args = append(args, "--kubelet-root-dir", d)
	}
	r := kubectl(t, args...)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	manifests := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(manifests, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := kubectl(t, "apply", "-f", manifests); r.code != 0 {
		t.Fatalf("%s", r)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = node.Client.CoreV1().Pods(debugPod.Namespace).Create(ctx, debugPod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("the shape policy still refuses the debug pod with image %s: %v", image, last)
	}
}

// importPluginImage loads the plugin's image (hack/e2e-node.sh wrote it: NODESTATE_E2E_NPD/images)
// into the node's containerd, as an air-gapped node gets it, and removes it at the end.
func importPluginImage(t *testing.T) string {
	t.Helper()
	for _, im := range e2eImages(t) {
		if strings.Contains(im.ref, "node-problem-detector") {
			continue
		}
		importImage(t, im)
		return im.ref
	}
	t.Fatalf("%s/images names no plugin image", os.Getenv("NODESTATE_E2E_NPD"))
	return ""
}

// bindPodResources makes /var/lib/kubelet/pod-resources the kubelet's own pod-resources dir (a
// bind mount, private), so the debug pod that mounts /var/lib/kubelet finds the PodResources
// socket beside the device checkpoint, as on a real node; undone at the end (down.sh undoes it
// too if the test binary dies: the state dir records it).
func bindPodResources(t *testing.T) {
	t.Helper()
	src := filepath.Join(node.KubeletRoot, "pod-resources")
	dst := filepath.Join(devicePluginRoot, "pod-resources")
	if _, err := os.Stat(filepath.Join(src, "kubelet.sock")); err != nil {
		t.Fatalf("the kubelet's PodResources socket: %v", err)
	}
	bindMount(t, src, dst, "pod-resources-bind", "created-pod-resources-dir")
}

// bindMount bind-mounts src at dst (made when missing), privately, undone when t ends. Where
// bindFile and createdFile are named, files of those names in the state dir say, while it
// lasts, what down.sh undoes after a crash: the mount, and the dir it made.
func bindMount(t *testing.T, src, dst, bindFile, createdFile string) {
	t.Helper()
	mark := func(name string, data []byte) {
		if name != "" {
			if err := os.WriteFile(filepath.Join(node.State, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	unmark := func(name string) {
		if name != "" {
			_ = os.Remove(filepath.Join(node.State, name))
		}
	}
	made := false
	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dst, 0o750); err != nil {
			t.Fatal(err)
		}
		made = true
		mark(createdFile, nil)
	}
	mark(bindFile, []byte(dst+"\n"))
	for _, args := range [][]string{{"--bind", src, dst}, {"--make-private", dst}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dst).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dst, err, out)
			return
		}
		unmark(bindFile)
		if made {
			if err := os.Remove(dst); err != nil {
				t.Errorf("remove %s: %v", dst, err)
			}
			unmark(createdFile)
		}
	})
}

// dropStatusResources takes the test's resources out of the node's status: after the restart
// the kubelet reports them as 0 (it reconciles extended resources it no longer knows) and then
// leaves them alone.
func dropStatusResources(t *testing.T, resources []shapedResource) {
	t.Helper()
	null := map[string]any{}
	for _, r := range resources {
		null[r.name] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": null, "allocatable": null}})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := node.Client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			return false, err
		}
		for _, r := range resources {
			if _, ok := n.Status.Capacity[corev1.ResourceName(r.name)]; ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("take the test's device resources out of the node's status: %v", err)
	}
}

// checkPodResourcesSection runs the node reader's PodResources section in a debug pod of the
// binary reader (the plugin's image, the shape policy's pod, read-only mount, no capability) and
// compares it with what the plugins sent and with the PodResources API read from the host:
// every healthy device with the NUMA nodes its plugin sent (none for no Topology, -1 as sent,
// and a device whose Topology has zero nodes left out, as the kubelet lists them), and each
// container's devices as List says.
func checkPodResourcesSection(t *testing.T, debugPod *corev1.Pod, resources []shapedResource) {
	t.Helper()
	ctx := context.Background()
	pods := node.Client.CoreV1().Pods(debugPod.Namespace)
	p, err := pods.Create(ctx, debugPod.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err = pods.Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("debug pod %s not Running: %v (%+v)", debugPod.Name, err, p.Status)
	}
	cmd := fetch.NodeReadCommand(nil, []fetch.StderrDump{{ReaderSection: nodelocal.SectionPodResources}})
	r := kubectl(t, append([]string{"exec", "-n", p.Namespace, p.Name, "-c", fetch.ContainerName, "--"}, cmd...)...)
	if r.code != 0 || r.stdout != "" || !strings.HasSuffix(r.stderr, fetch.CollectEnd) {
		t.Fatalf("node-read --section=podresources in the debug pod:\n%s", r)
	}
	pr, err := machine.ParsePodResources([]byte(strings.TrimSuffix(r.stderr, fetch.CollectEnd)))
	if err != nil || pr.Error != "" {
		t.Fatalf("the PodResources section: %v %q\n%s", err, func() string {
			if pr != nil {
				return pr.Error
			}
			return ""
		}(), r.stderr)
	}
	mine := map[string]bool{}
	want := map[string]map[string][]int64{} // as the plugins sent them
	for _, res := range resources {
		mine[res.name] = true
		want[res.name] = map[string][]int64{}
		for _, item := range res.items {
			if id, nodes, zero := sent(item); !zero {
				want[res.name][id] = nodes
			}
		}
	}
	got := map[string]map[string][]int64{}
	for _, g := range pr.Allocatable {
		if !mine[g.Resource] {
			continue
		}
		if got[g.Resource] == nil {
			got[g.Resource] = map[string][]int64{}
		}
		for _, id := range g.IDs {
			got[g.Resource][id] = append(got[g.Resource][id], g.NUMANodes...)
		}
	}
	host := allocatableFromHost(t, mine)
	for _, res := range resources {
		if !maps.EqualFunc(want[res.name], got[res.name], slices.Equal) || !maps.EqualFunc(host[res.name], got[res.name], slices.Equal) {
			t.Errorf("%s: the node reader's GetAllocatableResources %v; the plugin sent %v; the host reads %v", res.name, got[res.name], want[res.name], host[res.name])
		}
	}
	list := map[string]map[string][]string{}
	for _, pod := range pr.Pods {
		for _, c := range pod.Containers {
			for _, d := range c.Devices {
				key := pod.Namespace + "/" + pod.Name + "/" + c.Name
				if list[key] == nil {
					list[key] = map[string][]string{}
				}
				list[key][d.Resource] = append(list[key][d.Resource], d.IDs...)
			}
		}
	}
	sortIDs := func(m map[string]map[string][]string) {
		for _, byRes := range m {
			for _, ids := range byRes {
				slices.Sort(ids)
			}
		}
	}
	fromHost := podDevices(t)
	sortIDs(list)
	sortIDs(fromHost)
	if !maps.EqualFunc(list, fromHost, func(a, b map[string][]string) bool { return maps.EqualFunc(a, b, slices.Equal) }) {
		t.Errorf("the node reader's List %v; the host's %v", list, fromHost)
	}
	t.Logf("the node reader's PodResources section in the debug pod: %d device groups, %d containers with devices, equal to what the plugins sent and to the host's read", len(pr.Allocatable), len(list))
}

// allocatableFromHost is GetAllocatableResources read from the host (the sample plugin's
// -pod-resources -allocatable), for the resources in mine.
func allocatableFromHost(t *testing.T, mine map[string]bool) map[string]map[string][]int64 {
	t.Helper()
	socket := filepath.Join(node.KubeletRoot, "pod-resources", "kubelet.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, os.Getenv("NODESTATE_E2E_DEVICE_PLUGIN"), "-pod-resources", socket, "-allocatable").Output()
	if err != nil {
		t.Fatalf("PodResources GetAllocatableResources at %s: %v", socket, err)
	}
	var got map[string]map[string][]int64
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("PodResources GetAllocatableResources: %v\n%s", err, out)
	}
	maps.DeleteFunc(got, func(r string, _ map[string][]int64) bool { return !mine[r] })
	return got
}
