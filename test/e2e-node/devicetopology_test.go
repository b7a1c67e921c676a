//go:build e2enode

package e2enode

import (
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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
)

// The two device plugin resources of TestAdmitDevicesPredictsRealKubelet.
const (
	// pciResource's devices are this machine's PCI functions, each reported on its sysfs
	// numa_node (none for -1), as SR-IOV and NIC plugins report them: admit reads their
	// NUMA nodes from the node itself.
	pciResource = "example.com/pcidev"
	// accelResource's devices have IDs that are not PCI addresses and NUMA nodes only the
	// plugin knows: three on NUMA node 0, one without topology. admit says it cannot judge
	// them, until it is given them with --devices.
	accelResource = "example.com/accel"
)

// devicePluginCheckpoint is the device manager's checkpoint: under /var/lib/kubelet whatever
// the kubelet's --root-dir (pluginapi.DevicePluginPath).
var devicePluginCheckpoint = filepath.Join(devicePluginRoot, "device-plugins", "kubelet_internal_checkpoint")

// deviceStep is one pod asking for n devices of a resource; devicesFile: admit is given the
// plugin's devices with --devices.
type deviceStep struct {
	name, resource string
	n              int
	devicesFile    bool
}

// TestAdmitDevicesPredictsRealKubelet registers two real device plugins that advertise
// topology with the real kubelet (topologyManagerPolicy restricted), predicts each pod with
// `kubectl nodestate admit NODE -f pod.yaml` on the live node just before creating it, and
// compares with what the kubelet did: the device IDs it gave each container (its PodResources
// API) up to devices the kubelet cannot tell apart, or its rejection's reason, status message
// and event, word for word. The pods fit, run out of devices (UnexpectedAdmissionError) and
// find no NUMA-aligned devices (TopologyAffinityError). It also checks that admit, without
// --devices, says the accelerators are not judged and why. The kubelet's configuration and
// device checkpoint are put back at the end.
//
// The device checkpoint sits under /var/lib/kubelet while the e2e kubelet's root dir is its
// own: admit reads the node with --kubelet-root-dir /var/lib/kubelet and is given the
// kubelet's configuration with --kubelet-config (the pods are BestEffort: no CPU or memory
// checkpoint counts).
func TestAdmitDevicesPredictsRealKubelet(t *testing.T) {
	pci := machinePCIDevices(t)
	if len(pci) < 2 {
		t.Fatalf("this machine has %d PCI functions in sysfs; the test needs 2", len(pci))
	}
	nPCI := min(len(pci), 3)
	pciIDs := slices.Sorted(maps.Keys(pci))[:nPCI]
	accel := map[string]int{"accel-0": 0, "accel-1": 0, "accel-2": 0, "accel-3": -1}
	numaOf := map[string]map[string]int{pciResource: {}, accelResource: accel}
	for _, id := range pciIDs {
		numaOf[pciResource][id] = pci[id]
	}
	steps := []deviceStep{
		{"pci-all-but-one", pciResource, nPCI - 1, false}, // fits
		{"pci-two-more", pciResource, 2, false},           // one left: requested number of devices unavailable (TopologyAffinityError if they have NUMA nodes)
		{"pci-last", pciResource, 1, false},               // the one left
		{"accel-two", accelResource, 2, true},             // two of the three on NUMA node 0
		{"accel-two-more", accelResource, 2, true},        // one aligned left: TopologyAffinityError
		{"accel-one", accelResource, 1, true},             // the aligned one
		{"accel-unaligned", accelResource, 1, true},       // only the device without topology: TopologyAffinityError
	}
	coveredReasons := []string{"", "TopologyAffinityError"} // "" is admitted
	if !slices.ContainsFunc(pciIDs, func(id string) bool { return pci[id] >= 0 }) {
		// Devices without topology give no hints: too few is the device manager's own refusal.
		coveredReasons = append(coveredReasons, "UnexpectedAdmissionError")
	}

	k := restartDeviceKubelet(t, "admit-devices", func(cfg map[string]any) { cfg["topologyManagerPolicy"] = "restricted" })
	// The kubelet wipes the device-plugins dir at start: the plugins register after it.
	pciList := make([]string, 0, nPCI)
	for _, id := range pciIDs {
		pciList = append(pciList, deviceArg(id, pci[id]))
	}
	k.startPlugin(t, pciResource, "pcidev", strings.Join(pciList, ","))
	var accelList []string
	for _, id := range slices.Sorted(maps.Keys(accel)) {
		accelList = append(accelList, deviceArg(id, accel[id]))
	}
	k.startPlugin(t, accelResource, "accel", strings.Join(accelList, ","))
	waitResource(t, pciResource, int64(nPCI), int64(nPCI))
	waitResource(t, accelResource, int64(len(accel)), int64(len(accel)))

	dir := t.TempDir()
	devicesFile := writeDevicesFile(t, dir, accelResource, accel)
	live := []string{"--kubelet-root-dir", devicePluginRoot, "--kubelet-config", k.config}

	// Without --devices: the PCI devices' NUMA nodes come from sysfs, the accelerators' are
	// not known, and a pod asking for one says so.
	probe := devicePod("accel-probe", accelResource, 1)
	res := admitResult(t, dir, probe, live...)
	if src := res.DeviceTopology[pciResource]; src != "sysfs (assumed: its plugin reports numa_node)" {
		t.Errorf("%s: topology from %q, want sysfs (assumed: its plugin reports numa_node)", pciResource, src)
	}
	if src := res.DeviceTopology[accelResource]; !strings.HasPrefix(src, "not known: ") || !strings.Contains(src, "not a PCI address") {
		t.Errorf("%s: topology %q, want not known (IDs not PCI addresses)", accelResource, src)
	}
	if u := strings.Join(res.Admissions[0].Unreplayed, "; "); !strings.Contains(u, accelResource+" not judged") {
		t.Errorf("a pod asking for %s: unreplayed %q, want it not judged", accelResource, u)
	}
	t.Logf("without --devices: deviceTopology %v; %s: %s", res.DeviceTopology, probe.Name, strings.Join(res.Admissions[0].Unreplayed, "; "))

	compared, equal, seen := 0, 0, map[string]bool{}
	for _, s := range steps {
		p := devicePod("dev-"+s.name, s.resource, s.n)
		args := live
		if s.devicesFile {
			args = append(slices.Clone(live), "--devices", devicesFile)
		}
		held := podDevices(t) // before the pod: who holds what
		res := admitResult(t, dir, p, args...)
		if src := res.DeviceTopology[s.resource]; strings.HasPrefix(src, "not known") {
			t.Fatalf("%s: %s not judged: %s", s.name, s.resource, src)
		}
		want := res.Admissions[0]
		real := k.runPod(t, p)
		compared++
		seen[want.Reason] = true
		if diff := compareDevicePod(t, want, real, s.resource, held, numaOf[s.resource]); diff != "" {
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
}

// compareDevicePod compares admit's prediction for one pod with the real kubelet's answer; ""
// when equal. held is every container's devices before the pod, as PodResources said.
func compareDevicePod(t *testing.T, want admit.Admission, real *corev1.Pod, resourceName string, held map[string]map[string][]string, numa map[string]int) string {
	t.Helper()
	if !want.Admitted {
		if real.Status.Phase != corev1.PodFailed || real.Status.Reason != want.Reason || real.Status.Message != want.StatusMessage {
			return fmt.Sprintf("admit predicted refusal\n  %s: %s\nthe kubelet: phase %s\n  %s: %s", want.Reason, want.StatusMessage,
				real.Status.Phase, real.Status.Reason, real.Status.Message)
		}
		if ev := rejectionEvent(t, real, want.Reason); ev != want.Message {
			return fmt.Sprintf("admit predicted message\n  %s\nthe kubelet's %s event says\n  %s", want.Message, want.Reason, ev)
		}
		t.Logf("%s: refused as predicted: %s: %s", real.Name, want.Reason, want.StatusMessage)
		return ""
	}
	if !running(real) {
		return fmt.Sprintf("admit predicted admission; the kubelet: phase %s\n  %s: %s", real.Status.Phase, real.Status.Reason, real.Status.Message)
	}
	if len(want.Containers) != 1 {
		return fmt.Sprintf("admit predicted %d containers, want 1", len(want.Containers))
	}
	predicted := want.Containers[0].Devices[resourceName]
	got := slices.Sorted(slices.Values(podDevices(t)[ns+"/"+real.Name+"/main"][resourceName]))
	pick := want.Containers[0].DevicesPick[resourceName]
	switch {
	case pick == admit.PickForced && !slices.Equal(predicted, got):
		return fmt.Sprintf("admit predicted devices %v (the only pick), the kubelet gave %v", predicted, got)
	case pick != admit.PickForced && !equivalentPick(predicted, got, held, resourceName, numa):
		return fmt.Sprintf("admit predicted devices %v (%s), the kubelet gave %v, which are not equivalent", predicted, pick, got)
	}
	t.Logf("%s: admitted as predicted: %s %v (admit: %v, %s)", real.Name, resourceName, got, predicted, pick)
	return ""
}

// equivalentPick: the kubelet's devices are as many as predicted, none held by another
// container before the pod, and on the same NUMA nodes as the predicted ones (all are
// healthy): an exchange among devices the kubelet cannot tell apart.
func equivalentPick(predicted, got []string, held map[string]map[string][]string, resourceName string, numa map[string]int) bool {
	if len(predicted) != len(got) {
		return false
	}
	for _, byResource := range held {
		for _, id := range byResource[resourceName] {
			if slices.Contains(got, id) {
				return false
			}
		}
	}
	nodes := func(ids []string) []int {
		out := []int{}
		for _, id := range ids {
			n, ok := numa[id]
			if !ok {
				return nil
			}
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	return nodes(got) != nil && slices.Equal(nodes(predicted), nodes(got))
}

// devicePod is a BestEffort pod (no CPU or memory asked) whose one container asks for n
// devices.
func devicePod(name, resourceName string, n int) *corev1.Pod {
	q := corev1.ResourceList{corev1.ResourceName(resourceName): resource.MustParse(strconv.Itoa(n))}
	return pod(name, q, q)
}

// machinePCIDevices is this machine's PCI functions and their sysfs numa_node.
func machinePCIDevices(t *testing.T) map[string]int {
	t.Helper()
	files, err := filepath.Glob("/sys/bus/pci/devices/*/numa_node")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(filepath.Dir(f))] = n
	}
	return out
}

// deviceArg is the plugin's -ids item: ID@NUMA, or ID alone for no NUMA node (-1).
func deviceArg(id string, numa int) string {
	if numa < 0 {
		return id
	}
	return fmt.Sprintf("%s@%d", id, numa)
}

// writeDevicesFile writes admit's --devices file: the plugin's devices as the device plugin
// API's Device messages.
func writeDevicesFile(t *testing.T, dir, resourceName string, numa map[string]int) string {
	t.Helper()
	type numaNode struct {
		ID int `json:"ID"`
	}
	type topology struct {
		Nodes []numaNode `json:"nodes"`
	}
	type device struct {
		ID       string    `json:"ID"`
		Health   string    `json:"health"`
		Topology *topology `json:"topology,omitempty"`
	}
	var devices []device
	for _, id := range slices.Sorted(maps.Keys(numa)) {
		d := device{ID: id, Health: "Healthy"}
		if numa[id] >= 0 {
			d.Topology = &topology{Nodes: []numaNode{{ID: numa[id]}}}
		}
		devices = append(devices, d)
	}
	b, err := json.Marshal(map[string]any{"resources": map[string][]device{resourceName: devices}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "devices.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// deviceKubelet is the kubelet restarted for a device plugin test with a configuration of its
// own, and what the test made on it: its pods and sample plugins, taken away at the end.
type deviceKubelet struct {
	config  string      // the configuration file the kubelet runs with
	created []string    // the test's pods, in ns
	plugins []*exec.Cmd // the test's sample plugins
}

// restartDeviceKubelet restarts the kubelet with its configuration changed by change (written
// as kubelet-NAME.yaml in the state dir). At the end it deletes the test's pods, then stops its
// plugins, then puts the kubelet's own state back as it was: its device checkpoint (the
// plugins' resources gone) and its configuration.
func restartDeviceKubelet(t *testing.T, name string, change func(cfg map[string]any)) *deviceKubelet {
	t.Helper()
	orig, err := os.ReadFile(node.KubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	savedCheckpoint, err := os.ReadFile(devicePluginCheckpoint)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	k := &deviceKubelet{}
	t.Cleanup(func() {
		for _, name := range k.created {
			_ = node.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		for _, p := range k.plugins {
			stopDevicePlugin(t, p)
		}
		if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
			t.Errorf("stop the kubelet: %v\n%s", err, out)
		}
		var err error
		if savedCheckpoint == nil {
			err = os.Remove(devicePluginCheckpoint)
		} else {
			err = os.WriteFile(devicePluginCheckpoint, savedCheckpoint, 0o644)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("put back the device checkpoint: %v", err)
		}
		if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
			t.Errorf("restart the kubelet with its configuration: %v\n%s", err, out)
		}
	})

	k.config, _ = writeKubeletConfig(t, orig, name, change)
	if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
		t.Fatalf("stop the kubelet: %v\n%s", err, out)
	}
	if out, err := exec.Command(script, "start", k.config).CombinedOutput(); err != nil {
		t.Fatalf("start the kubelet with %s: %v\n%s", k.config, err, out)
	}
	return k
}

// startPlugin starts the sample device plugin (startTopologyPlugin), stopped at the end. The
// kubelet wipes the device-plugins dir at start: plugins are started after it.
func (k *deviceKubelet) startPlugin(t *testing.T, resourceName, name, ids string) {
	t.Helper()
	k.plugins = append(k.plugins, startTopologyPlugin(t, resourceName, name, ids))
}

// runPod creates p, deleted at the end, and returns it once it runs or has failed.
func (k *deviceKubelet) runPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := node.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	k.created = append(k.created, p.Name)
	return waitPod(t, p.Name, func(p *corev1.Pod) bool { return running(p) || p.Status.Phase == corev1.PodFailed })
}

// startTopologyPlugin runs the sample device plugin for resourceName with the devices of
// -ids (and its extra flags), under a socket name of this run's own; the caller stops it.
func startTopologyPlugin(t *testing.T, resourceName, name, ids string, extra ...string) *exec.Cmd {
	t.Helper()
	bin := os.Getenv("NODESTATE_E2E_DEVICE_PLUGIN")
	if bin == "" {
		t.Fatal("NODESTATE_E2E_DEVICE_PLUGIN is not set (hack/e2e-node.sh builds it)")
	}
	socket := fmt.Sprintf("nodestate-e2e-%s-%d.sock", name, os.Getpid())
	args := append([]string{"-resource", resourceName, "-ids", ids, "-socket", socket, "-dir", filepath.Join(devicePluginRoot, "device-plugins")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// podDevices is every container's devices, "namespace/pod/container" -> resource -> IDs, as
// the kubelet's PodResources API lists them (the sample plugin's -pod-resources).
func podDevices(t *testing.T) map[string]map[string][]string {
	t.Helper()
	socket := filepath.Join(node.KubeletRoot, "pod-resources", "kubelet.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, os.Getenv("NODESTATE_E2E_DEVICE_PLUGIN"), "-pod-resources", socket).Output()
	if err != nil {
		t.Fatalf("PodResources List at %s: %v", socket, err)
	}
	var got map[string]map[string][]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("PodResources List: %v\n%s", err, out)
	}
	return got
}
