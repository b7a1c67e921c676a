//go:build e2enode

package e2enode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// devicePluginDir is where the kubelet's device manager listens and keeps its checkpoint:
// pluginapi.DevicePluginPath, fixed whatever the kubelet's --root-dir. So the device checks
// read the node with --kubelet-root-dir /var/lib/kubelet.
const (
	devicePluginRoot = "/var/lib/kubelet"
	widget           = "example.com/widget"
)

// finding is one doctor finding, as -o json prints it.
type finding struct {
	Severity, Check, File, Entry, Message, Fix string
}

// doctorOut is doctor -o json of one node.
type doctorOut struct {
	KubeletStart json.RawMessage `json:"kubeletStart"`
	Findings     []finding       `json:"findings"`
	Skipped      []string        `json:"skipped"`
}

func parseDoctor(t *testing.T, r result) doctorOut {
	t.Helper()
	if r.code != 0 && r.code != 1 {
		t.Fatalf("doctor: %s", r)
	}
	var one struct {
		doctorOut
		Items []doctorOut `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	if one.KubeletStart == nil && len(one.Items) == 1 {
		return one.Items[0]
	}
	return one.doctorOut
}

// deviceFindings are the findings about the device checkpoint, "severity check entry".
func deviceFindings(d doctorOut) []string {
	var out []string
	for _, f := range d.Findings {
		if strings.HasPrefix(f.File, "device-plugins/") {
			out = append(out, f.Severity+" "+f.Check+" "+f.Entry)
		}
	}
	return out
}

func hasAll(got []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g, w) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// startDevicePlugin runs the sample device plugin (hack/tools/kubelet/device-plugin) with a
// socket name of this run's own, and waits until the node advertises its devices.
func startDevicePlugin(t *testing.T, devices int) *exec.Cmd {
	t.Helper()
	bin := os.Getenv("NODESTATE_E2E_DEVICE_PLUGIN")
	if bin == "" {
		t.Fatal("NODESTATE_E2E_DEVICE_PLUGIN is not set (hack/e2e-node.sh builds it)")
	}
	socket := fmt.Sprintf("nodestate-e2e-%d.sock", os.Getpid())
	cmd := exec.Command(bin, "-resource", widget, "-devices", fmt.Sprint(devices), "-socket", socket,
		"-dir", filepath.Join(devicePluginRoot, "device-plugins"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDevicePlugin(t, cmd) })
	waitDevices(t, int64(devices), int64(devices))
	return cmd
}

// stopDevicePlugin ends the plugin as its pod's deletion would: SIGTERM, by its PID.
func stopDevicePlugin(t *testing.T, cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitDevices waits until the node's status says capacity and allocatable widgets.
func waitDevices(t *testing.T, capacity, allocatable int64) {
	t.Helper()
	waitResource(t, widget, capacity, allocatable)
}

// waitResource waits until the node's status says capacity and allocatable of resourceName.
func waitResource(t *testing.T, resourceName corev1.ResourceName, capacity, allocatable int64) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := node.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c, a := n.Status.Capacity[resourceName], n.Status.Allocatable[resourceName]
		last = fmt.Sprintf("capacity %s, allocatable %s", c.String(), a.String())
		return c.Value() == capacity && a.Value() == allocatable, nil
	})
	if err != nil {
		t.Fatalf("node status %s: want %s capacity %d, allocatable %d: %v", resourceName, last, capacity, allocatable, err)
	}
}

func restartKubelet(t *testing.T, between func()) {
	t.Helper()
	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
		t.Fatalf("stop the kubelet: %v\n%s", err, out)
	}
	between()
	if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
		t.Fatalf("start the kubelet: %v\n%s", err, out)
	}
}

// TestDevicePluginGone registers a real device plugin with the real kubelet, gives one of its
// devices to a pod, then plants the faults operators meet: the plugin gone while the kubelet
// runs, and a kubelet restarted (with the pod deleted meanwhile) that the plugin never
// registers with again. Doctor must find each, in the device manager's terms, and nothing on
// the healthy node.
func TestDevicePluginGone(t *testing.T) {
	doctorDevices := func() (doctorOut, result) {
		r := nodestate(t, "doctor", "--kubelet-root-dir", devicePluginRoot, "-o", "json")
		return parseDoctor(t, r), r
	}
	plugin := startDevicePlugin(t, 2)
	one := corev1.ResourceList{widget: resource.MustParse("1")}
	p := pod("widget-user", one, one)
	createPod(t, p)
	p = waitPod(t, p.Name, running)

	healthy, r := doctorDevices()
	if got := deviceFindings(healthy); len(got) != 0 {
		t.Errorf("healthy node: device findings %q\n%s", got, r)
	}
	devs := nodestate(t, "devices", "--kubelet-root-dir", devicePluginRoot)
	if !strings.Contains(devs.stdout, ns+"/"+p.Name) || !strings.Contains(devs.stdout, widget) {
		t.Errorf("devices does not show the pod's widget:\n%s", devs)
	}

	t.Run("plugin gone while the kubelet runs", func(t *testing.T) {
		stopDevicePlugin(t, plugin)
		waitDevices(t, 2, 0) // PluginDisconnected: every device unhealthy
		d, r := doctorDevices()
		got := deviceFindings(d)
		t.Logf("device findings: %q", got)
		if !hasAll(got, "error device-plugin-disconnected "+widget, "error device-plugin-gone "+widget) || r.code != 1 {
			t.Errorf("findings %q, exit %d\n%s", got, r.code, r)
		}
	})

	t.Run("kubelet restarted, pod deleted meanwhile, plugin not registered again", func(t *testing.T) {
		startDevicePlugin(t, 2) // healthy again: a new plugin process registers
		restartKubelet(t, func() {
			// With the kubelet down the API server deletes the pod at once (grace 0).
			err := node.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil {
				t.Fatal(err)
			}
		})
		// The kubelet wiped device-plugins/ at start (the plugin's socket too), read the
		// checkpoint, and advertises the resource at 0 until its plugin registers again.
		waitDevices(t, 0, 0)
		d, r := doctorDevices()
		got := deviceFindings(d)
		t.Logf("device findings: %q", got)
		if !hasAll(got, "error device-not-advertised "+widget, "error device-plugin-gone "+widget, "warning stale-pod pod "+string(p.UID)) || r.code != 1 {
			t.Errorf("findings %q, exit %d\n%s", got, r.code, r)
		}
	})
	noDebugPodsLeft(t)
}
