//go:build e2enode

package e2enode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	nodestateapi "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// restartGPU is the resource of TestRestartPodFates's plugin: GPU UUIDs without topology (the
// node's own configuration, topology policy none, never reads it).
const restartGPU = "nvidia.com/gpu"

var restartGPUIDs = []string{
	"GPU-0b7e4c2a-5d19-4f8e-a3c6-9e1d7b2f4a80", "GPU-2c9f6e4b-7a3d-4b1f-8e5c-1a7d9f3b6c52",
	"GPU-4e1b8d6f-9c5a-4d3e-b7f2-3c9e1b5d8a14", "GPU-6a3d0f8b-1e7c-4f5a-9d4b-5e2a7c9f1b36",
}

// restartOrder is one restart of TestRestartPodFates: what stops (the kubelet alone, or every
// container of the test's pods as a reboot does) and when the device plugin registers again
// (after the kubelet re-admitted the pods, or before).
type restartOrder struct {
	name, short string
	kind        string // admit.RestartKubelet or admit.RestartReboot
	pluginFirst bool
	// unhealthyHeld: before the outlook, the plugin registers again with the first pod's GPU
	// Unhealthy (and so after the restart): the kubelet's "previously allocated devices are no
	// longer healthy".
	unhealthyHeld bool
}

var restartOrders = []restartOrder{
	{"kubelet restart, plugin after the re-admissions", "kl", admit.RestartKubelet, false, false},
	{"kubelet restart, plugin before the re-admissions", "kf", admit.RestartKubelet, true, false},
	{"reboot, plugin after the re-admissions", "rl", admit.RestartReboot, false, false},
	{"reboot, plugin before the re-admissions", "rf", admit.RestartReboot, true, false},
	{"reboot, plugin before the re-admissions, a held GPU unhealthy", "ru", admit.RestartReboot, true, true},
}

// TestRestartPodFates compares doctor's restart outlook (issue 44) with the real kubelet, pod
// by pod, in both orders of kubelet and device plugin. For each order, pods with devices run
// (a bare pod asking for a GPU, a bare pod whose init and app containers each ask for one, a
// ReplicaSet's pod of the same shape, and a pod without devices); `doctor NODE -o json` gives
// the outlook of the restart; then the kubelet is stopped (by its PID), the plugin stopped (by
// its PID), for a reboot the test's pods' sandboxes stopped and removed through the CRI (their
// containers with them: nothing of them runs, as after a reboot), and the kubelet started.
//   - Plugin after: the kubelet re-admits the pods with the plugin not registered. Each pod's
//     fate from the API (Failed with the kubelet's reason, status message and Warning event,
//     word for word, or Running: the same containers on a kubelet restart, new ones after a
//     reboot) must be the outlook's. Then the plugin registers: the ReplicaSet's refused pod is
//     replaced (the test makes the new pod as the ReplicaSet controller and the scheduler
//     would: there is no controller-manager or scheduler here) and the new pod must come back;
//     a bare refused pod must stay Failed.
//   - Plugin first: the kubelet starts with its API server held back (a gate on the loopback
//     that forwards its connections only once opened) until the plugin has registered with
//     the new kubelet; then the pods come. Every pod the outlook says waits on the plugin
//     must come back, and a pod it refuses regardless stay refused, in the words it says for a
//     plugin registered first.
//   - A reboot, plugin first, with the bare GPU pod's GPU gone Unhealthy before the outlook
//     (the plugin registered again saying so): that pod is refused either way, "previously
//     allocated devices are no longer healthy" once the plugin is there.
//
// The reboot's containers are the test's pods' only: any other pod on the node keeps running,
// which changes nothing for the test's devices (no other pod asks for them).
func TestRestartPodFates(t *testing.T) {
	if os.Getenv("NODESTATE_CRI_STOP") == "" {
		t.Fatal("NODESTATE_CRI_STOP is not set (hack/e2e-node.sh builds it)")
	}
	resources := []shapedResource{{name: restartGPU, socket: "restartgpu", items: restartGPUIDs}}
	// Run last: the kubelet back with its configuration, the resource out of the node's status.
	t.Cleanup(func() { dropStatusResources(t, resources) })
	k := restartDeviceKubelet(t, "restart-fates", func(map[string]any) {})

	seen := map[string]bool{}
	for _, order := range restartOrders {
		t.Run(order.name, func(t *testing.T) {
			for _, f := range runRestartOrder(t, k, order) {
				seen[f] = true
			}
		})
	}
	// The test means something only if the outlook, and so the kubelet, gave each answer.
	for _, want := range []string{"comes back", "refused, bare", "refused, ReplicaSet", "waits on " + restartGPU, "refused with its plugin registered"} {
		if !seen[want] {
			t.Errorf("no pod was predicted %q in any order", want)
		}
	}
	noDebugPodsLeft(t)
}

// restartPrediction is the outlook's word on one pod.
type restartPrediction struct {
	atRisk *nodestateapi.PodAtRisk
}

// comesBack: in this order of kubelet and plugin, the pod is admitted again.
func (p restartPrediction) comesBack(pluginFirst bool) bool {
	return p.atRisk == nil || (pluginFirst && len(p.atRisk.WaitsOn) > 0)
}

// refusal is the kubelet's refusal the outlook says for this order: its words with the
// plugins not registered, or registered first where they differ.
func (p restartPrediction) refusal(pluginFirst bool) admit.Refusal {
	a := p.atRisk
	if pluginFirst && a.IfRegistered != nil {
		return *a.IfRegistered
	}
	return admit.Refusal{Reason: a.Reason, Message: a.Message, StatusMessage: a.StatusMessage}
}

func (p restartPrediction) String() string {
	if p.atRisk == nil {
		return "comes back"
	}
	a := p.atRisk
	s := fmt.Sprintf("refused %s: %s", a.Reason, a.Message)
	if len(a.WaitsOn) > 0 {
		s = fmt.Sprintf("waits on %s (refused without it: %s: %s)", strings.Join(a.WaitsOn, ","), a.Reason, a.Message)
	}
	if a.IfRegistered != nil {
		s += fmt.Sprintf(" (registered first: %s: %s)", a.IfRegistered.Reason, a.IfRegistered.Message)
	}
	if a.Owner == "" {
		return s + "; bare"
	}
	return s + "; " + a.Owner
}

// runRestartOrder runs one restart and compares; it returns the kinds of prediction it saw.
func runRestartOrder(t *testing.T, k *deviceKubelet, order restartOrder) []string {
	// The next order starts clean even if this one fails.
	t.Cleanup(func() { endRestartOrder(t, k) })
	plugin := startRestartPlugin(t, k, "")
	pods, rs := createRestartPods(t, k, "rf-"+order.short)
	unhealthy := ""
	if order.unhealthyHeld {
		held := podDevices(t)[ns+"/"+pods[0].Name+"/main"][restartGPU]
		if len(held) != 1 {
			t.Fatalf("%s holds %v", pods[0].Name, held)
		}
		unhealthy = held[0]
		stopDevicePlugin(t, plugin)
		plugin = startRestartPlugin(t, k, unhealthy)
		t.Logf("the plugin registered again with %s (held by %s) Unhealthy", unhealthy, pods[0].Name)
	}
	outlook := restartOutlook(t, order.kind)
	predicted := map[string]restartPrediction{}
	for _, a := range outlook.AtRisk {
		predicted[a.Pod] = restartPrediction{atRisk: &a}
	}
	var seen []string
	for _, p := range pods {
		key := ns + "/" + p.Name
		if slices.Contains(outlook.NotJudged, key) {
			t.Errorf("%s: the outlook did not judge it", p.Name)
		}
		pred := predicted[key]
		switch a := pred.atRisk; {
		case a == nil:
			seen = append(seen, "comes back")
		case a.Owner == "":
			seen = append(seen, "refused, bare")
		default:
			seen = append(seen, "refused, "+a.Owner)
		}
		if a := pred.atRisk; a != nil && slices.Contains(a.WaitsOn, restartGPU) {
			seen = append(seen, "waits on "+restartGPU)
		} else if a != nil {
			seen = append(seen, "refused with its plugin registered")
		}
	}
	before := map[string][]string{}
	for _, p := range pods {
		before[p.Name] = containerIDs(p)
	}

	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
		t.Fatalf("stop the kubelet: %v\n%s", err, out)
	}
	stopDevicePlugin(t, plugin)
	if order.kind == admit.RestartReboot {
		for _, p := range pods {
			if out, err := exec.Command(os.Getenv("NODESTATE_CRI_STOP"), node.CRIEndpoint, string(p.UID)).CombinedOutput(); err != nil {
				t.Fatalf("stop and remove %s's sandbox through the CRI: %v\n%s", p.Name, err, out)
			}
		}
	}
	ungate := func() {}
	if order.pluginFirst {
		ungate = startKubeletPluginFirst(t, k, unhealthy)
	} else if out, err := exec.Command(script, "start", k.config).CombinedOutput(); err != nil {
		t.Fatalf("start the kubelet: %v\n%s", err, out)
	}
	real := waitReadmitted(t, pods, before, order.kind)

	equal := 0
	for _, p := range pods {
		pred, got := predicted[ns+"/"+p.Name], real[p.Name]
		diff := compareFate(t, pred, got, order.pluginFirst, before[p.Name], order.kind)
		t.Logf("FATE %s | %s | predicted: %s | the kubelet: %s", order.name, p.Name, pred, describeFate(got))
		if diff != "" {
			t.Errorf("%s: %s", p.Name, diff)
			continue
		}
		equal++
	}
	t.Logf("%s: %d pods, %d as predicted", order.name, len(pods), equal)

	if !order.pluginFirst {
		// The plugin registers late: what happens next to the refused pods.
		startRestartPlugin(t, k, unhealthy)
		for _, p := range pods {
			a := predicted[ns+"/"+p.Name].atRisk
			if a == nil || real[p.Name].Status.Phase != corev1.PodFailed {
				continue
			}
			if a.Owner == "" {
				continue // checked below, once the replacements came back
			}
			if a.Owner != "ReplicaSet" || metav1.GetControllerOf(p) == nil || metav1.GetControllerOf(p).UID != rs.UID {
				t.Errorf("%s: the outlook's owner %q, the pod's controller %v", p.Name, a.Owner, metav1.GetControllerOf(p))
				continue
			}
			repl := createAndWait(t, replicaSetPod(rs), running)
			k.created = append(k.created, repl.Name)
			if !running(repl) {
				t.Errorf("%s refused; its ReplicaSet's new pod %s once %s registered: %s", p.Name, repl.Name, restartGPU, describeFate(repl))
				continue
			}
			t.Logf("AFTER %s | %s refused; its ReplicaSet's new pod %s runs once %s registered", order.name, p.Name, repl.Name, restartGPU)
		}
		for _, p := range pods {
			a := predicted[ns+"/"+p.Name].atRisk
			if a == nil || a.Owner != "" {
				continue
			}
			now, err := node.Client.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if now.Status.Phase != corev1.PodFailed {
				t.Errorf("%s: bare and refused, phase %s once %s registered; want Failed (nothing makes it again)", p.Name, now.Status.Phase, restartGPU)
			} else {
				t.Logf("AFTER %s | %s bare: stays Failed once %s registered", order.name, p.Name, restartGPU)
			}
		}
	}
	endRestartOrder(t, k)
	ungate()
	return seen
}

// startRestartPlugin starts the GPU plugin (the GPU unhealthy names, if any, sent Unhealthy) and
// waits until the kubelet holds its healthy devices and the node advertises them (the node's
// status alone may still be the last plugin's).
func startRestartPlugin(t *testing.T, k *deviceKubelet, unhealthy string) *exec.Cmd {
	t.Helper()
	cmd := restartPlugin(t, k, unhealthy)
	healthy := waitAllocatableGPUs(t, unhealthy)
	waitResource(t, restartGPU, int64(len(restartGPUIDs)), int64(healthy))
	return cmd
}

// restartPlugin starts the GPU plugin, stopped at the order's end.
func restartPlugin(t *testing.T, k *deviceKubelet, unhealthy string) *exec.Cmd {
	t.Helper()
	cmd := startTopologyPlugin(t, restartGPU, "restartgpu", strings.Join(restartGPUIDs, ","), "-unhealthy", unhealthy)
	k.plugins = append(k.plugins, cmd)
	return cmd
}

// createRestartPods creates the order's pods, oldest first, and waits until they run: a bare pod
// asking for a GPU, a bare pod whose init and app containers ask for one each (the app reuses
// the init container's), a ReplicaSet's pod of that shape, and a pod without devices.
func createRestartPods(t *testing.T, k *deviceKubelet, prefix string) ([]*corev1.Pod, *appsv1.ReplicaSet) {
	t.Helper()
	ctx := context.Background()
	gpu := devicePod(prefix+"-gpu", restartGPU, 1)
	initApp := initAppGPUPod(prefix + "-init")
	none := pod(prefix+"-nodev", nil, nil)
	template := initAppGPUPod("")
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-rs", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-restart": prefix}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"e2e-restart": prefix}},
				Spec:       template.Spec,
			},
		},
	}
	rs.Spec.Template.Spec.NodeName = "" // the scheduler's
	rs, err := node.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteReplicaSet(rs) })
	var pods []*corev1.Pod
	for _, p := range []*corev1.Pod{gpu, initApp, replicaSetPod(rs), none} {
		p = createAndWait(t, p, running)
		k.created = append(k.created, p.Name)
		if !running(p) {
			t.Fatalf("%s before the restart: %s", p.Name, describeFate(p))
		}
		pods = append(pods, p)
	}
	return pods, rs
}

// initAppGPUPod is a BestEffort pod whose init container and app container ask for a GPU each.
func initAppGPUPod(name string) *corev1.Pod {
	p := devicePod(name, restartGPU, 1)
	init := *p.Spec.Containers[0].DeepCopy()
	init.Name, init.Command = "init", []string{"sleep", "1"}
	p.Spec.InitContainers = []corev1.Container{init}
	return p
}

// replicaSetPod is the pod the ReplicaSet controller would make of rs, on this node as the
// scheduler would bind it.
func replicaSetPod(rs *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name + "-" + rand.String(5), Namespace: rs.Namespace, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node.Name
	return p
}

func deleteReplicaSet(rs *appsv1.ReplicaSet) {
	_ = node.Client.AppsV1().ReplicaSets(ns).Delete(context.Background(), rs.Name, metav1.DeleteOptions{})
}

func createAndWait(t *testing.T, p *corev1.Pod, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	if _, err := node.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return waitPod(t, p.Name, func(p *corev1.Pod) bool { return done(p) || p.Status.Phase == corev1.PodFailed })
}

// restartOutlook is doctor's outlook of the restart of kind on the live node (the device
// checkpoint is under /var/lib/kubelet whatever the kubelet's root dir).
func restartOutlook(t *testing.T, kind string) nodestateapi.RestartOutlook {
	t.Helper()
	r := nodestate(t, "doctor", "--kubelet-root-dir", devicePluginRoot, "-o", "json")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("doctor: %s", r)
	}
	var one struct {
		RestartOutlook []nodestateapi.RestartOutlook `json:"restartOutlook"`
		Items          []struct {
			RestartOutlook []nodestateapi.RestartOutlook `json:"restartOutlook"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	if len(one.Items) == 1 {
		one.RestartOutlook = one.Items[0].RestartOutlook
	}
	// The outlook re-admits the node's pods that are not terminal, the test's among them.
	list, err := node.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			live++
		}
	}
	for _, o := range one.RestartOutlook {
		if o.Pods != live {
			t.Errorf("doctor's %s outlook re-admits %d pods; the node has %d not terminal", o.Kind, o.Pods, live)
		}
		if o.Kind == kind {
			t.Logf("doctor's outlook (%s): %d pods, at risk %+v, not judged %v", kind, o.Pods, o.AtRisk, o.NotJudged)
			return o
		}
	}
	t.Fatalf("doctor printed no %s outlook:\n%s", kind, r)
	return nodestateapi.RestartOutlook{}
}

// startKubeletPluginFirst starts the kubelet with its API server held back by a gate on the
// loopback, waits until the device manager listens, starts the plugin and waits until the
// kubelet lists its devices (PodResources, a local socket), then opens the gate: the pods
// reach the kubelet only after the plugin registered. It returns ungate, which restarts the
// kubelet without the gate (at the order's end, or at its cleanup if it failed before).
func startKubeletPluginFirst(t *testing.T, k *deviceKubelet, unhealthy string) (ungate func()) {
	t.Helper()
	socket := filepath.Join(devicePluginRoot, "device-plugins", "kubelet.sock")
	// The stopped kubelet's socket: the new kubelet removes it at start and listens anew.
	if err := os.Remove(socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	gate := startAPIGate(t)
	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	var once sync.Once
	ungate = func() {
		once.Do(func() {
			gate.open()
			for _, step := range [][]string{{"stop"}, {"start", k.config}} {
				if out, err := exec.Command(script, step...).CombinedOutput(); err != nil {
					t.Errorf("kubelet.sh %s without the gate: %v\n%s", step[0], err, out)
					return
				}
			}
		})
	}
	t.Cleanup(ungate) // before the gate closes
	started := make(chan error, 1)
	go func() {
		cmd := exec.Command(script, "start", k.config)
		cmd.Env = append(os.Environ(), "E2E_KUBELET_KUBECONFIG="+gate.kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		started <- err
	}()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(socket)
		return err == nil, nil
	})
	if err != nil {
		gate.open()
		t.Fatalf("the kubelet's device manager did not listen at %s: %v (kubelet.sh: %v)", socket, err, <-started)
	}
	restartPlugin(t, k, unhealthy)
	waitAllocatableGPUs(t, unhealthy)
	if gate.used() == 0 {
		t.Logf("the kubelet had not yet tried its API server when the plugin registered")
	}
	t.Logf("plugin registered with the new kubelet before it reached its API server (%d connections held)", gate.used())
	gate.open()
	if err := <-started; err != nil {
		t.Fatalf("start the kubelet behind the gate: %v", err)
	}
	return ungate
}

// waitAllocatableGPUs waits until the kubelet's device manager holds the plugin's GPUs but
// unhealthy as its healthy ones (PodResources GetAllocatableResources, healthy devices only: a
// local socket, whatever the API server), and returns how many.
func waitAllocatableGPUs(t *testing.T, unhealthy string) int {
	t.Helper()
	want := map[string]bool{}
	for _, id := range restartGPUIDs {
		want[id] = id != unhealthy
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got := allocatableGPUs()
		for id, healthy := range want {
			if _, listed := got[id]; listed != healthy {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the plugin did not register with the kubelet (unhealthy %q): PodResources lists %v", unhealthy, allocatableGPUs())
	}
	return len(allocatableGPUs())
}

// allocatableGPUs is the kubelet's GetAllocatableResources for restartGPU (nil if it cannot
// answer yet).
func allocatableGPUs() map[string][]int64 {
	socket := filepath.Join(node.KubeletRoot, "pod-resources", "kubelet.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, os.Getenv("NODESTATE_E2E_DEVICE_PLUGIN"), "-pod-resources", socket, "-allocatable").Output()
	if err != nil {
		return nil
	}
	var got map[string]map[string][]int64
	if json.Unmarshal(bytes.TrimSpace(out), &got) != nil {
		return nil
	}
	return got[restartGPU]
}

// apiGate is a TCP forwarder on the loopback to the API server that holds every connection
// until opened; gate.kubeconfig is the kubelet's kubeconfig pointed at it.
type apiGate struct {
	kubeconfig string
	ln         net.Listener
	upstream   string
	opened     chan struct{}
	closed     chan struct{}
	once       sync.Once
	mu         sync.Mutex
	conns      []net.Conn
	accepted   int
}

func startAPIGate(t *testing.T) *apiGate {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(filepath.Join(node.State, "kubelet.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &apiGate{ln: ln, opened: make(chan struct{}), closed: make(chan struct{}),
		kubeconfig: filepath.Join(node.State, "kubelet-gated.kubeconfig")}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		g.upstream = u.Host
		u.Host = ln.Addr().String() // the API server's certificate names 127.0.0.1
		c.Server = u.String()
	}
	if err := clientcmd.WriteToFile(*cfg, g.kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	go g.serve()
	return g
}

func (g *apiGate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		g.conns = append(g.conns, c)
		g.accepted++
		g.mu.Unlock()
		go g.forward(c)
	}
}

func (g *apiGate) forward(c net.Conn) {
	defer c.Close()
	select {
	case <-g.opened:
	case <-g.closed:
		return
	}
	up, err := net.Dial("tcp", g.upstream)
	if err != nil {
		return
	}
	g.mu.Lock()
	g.conns = append(g.conns, up)
	g.mu.Unlock()
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		close(done)
	}()
	_, _ = io.Copy(c, up)
	<-done
}

func (g *apiGate) open() { g.once.Do(func() { close(g.opened) }) }

func (g *apiGate) used() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accepted
}

// close stops the gate and every connection through it (the kubelet no longer uses it then).
func (g *apiGate) close() {
	select {
	case <-g.closed:
		return
	default:
	}
	close(g.closed)
	_ = g.ln.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		_ = c.Close()
	}
	_ = os.Remove(g.kubeconfig)
}

// statusResync is how long after the kubelet re-admitted the pods every refusal is surely on
// the API server: the kubelet's status manager writes a pod's new status at once, and syncs
// every pod again every 10 s (its syncPeriod).
const statusResync = 12 * time.Second

// waitReadmitted waits until the new kubelet has received the pods from the API server (its
// "SyncLoop ADD" of them: the re-admissions run in that call), then until each pod has failed
// or runs again (a reboot: new containers) and statusResync has passed, and returns the pods.
func waitReadmitted(t *testing.T, pods []*corev1.Pod, before map[string][]string, kind string) map[string]*corev1.Pod {
	t.Helper()
	logFile := filepath.Join(node.State, "logs", "kubelet.log") // the new kubelet's only: start truncates it
	var added time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(logFile)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"SyncLoop ADD" source="api"`) && strings.Contains(line, pods[0].Name) {
				added = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the kubelet did not receive the pods from the API server: %v", err)
	}
	out := map[string]*corev1.Pod{}
	err = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		settled := true
		for _, p := range pods {
			now, err := node.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			out[p.Name] = now
			if now.Status.Phase != corev1.PodFailed && !runsAgain(now, before[p.Name], kind) {
				settled = false
			}
		}
		return settled && time.Since(added) >= statusResync, nil
	})
	if err != nil {
		for _, p := range pods {
			t.Logf("%s: %s", p.Name, describeFate(out[p.Name]))
		}
		t.Fatalf("the pods did not settle after the restart: %v", err)
	}
	return out
}

// runsAgain: the pod is Running with every app container running, the same containers after
// a kubelet restart, new ones after a reboot.
func runsAgain(p *corev1.Pod, before []string, kind string) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil {
			return false
		}
	}
	same := slices.Equal(containerIDs(p), before)
	return same == (kind == admit.RestartKubelet)
}

func containerIDs(p *corev1.Pod) []string {
	var ids []string
	for _, s := range p.Status.ContainerStatuses {
		ids = append(ids, s.ContainerID)
	}
	return ids
}

// compareFate is "" when the kubelet did to the pod what the outlook said for this order.
func compareFate(t *testing.T, pred restartPrediction, real *corev1.Pod, pluginFirst bool, before []string, kind string) string {
	t.Helper()
	if pred.comesBack(pluginFirst) {
		if !runsAgain(real, before, kind) {
			return fmt.Sprintf("predicted to come back; the kubelet: %s", describeFate(real))
		}
		return ""
	}
	want := pred.refusal(pluginFirst)
	if real.Status.Phase != corev1.PodFailed || real.Status.Reason != want.Reason || real.Status.Message != want.StatusMessage {
		return fmt.Sprintf("predicted refused\n  %s: %s\nthe kubelet: %s", want.Reason, want.StatusMessage, describeFate(real))
	}
	if ev := rejectionEvent(t, real, want.Reason); ev != want.Message {
		return fmt.Sprintf("predicted message\n  %s\nthe kubelet's %s event says\n  %s", want.Message, want.Reason, ev)
	}
	return ""
}

func describeFate(p *corev1.Pod) string {
	if p == nil {
		return "not read"
	}
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Sprintf("Failed %s: %s", p.Status.Reason, p.Status.Message)
	}
	var states []string
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Running != nil:
			states = append(states, s.Name+" running "+shortID(s.ContainerID))
		case s.State.Waiting != nil:
			states = append(states, s.Name+" waiting "+s.State.Waiting.Reason)
		case s.State.Terminated != nil:
			states = append(states, s.Name+" terminated "+s.State.Terminated.Reason)
		}
	}
	return fmt.Sprintf("%s (%s)", p.Status.Phase, strings.Join(states, ", "))
}

func shortID(id string) string {
	_, id, _ = strings.Cut(id, "://")
	return id[:min(len(id), 12)]
}

// endRestartOrder deletes the order's pods and stops its plugins (its ReplicaSet goes with
// the cleanup of createRestartPods).
func endRestartOrder(t *testing.T, k *deviceKubelet) {
	t.Helper()
	ctx := context.Background()
	for _, name := range k.created {
		_ = node.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	k.created = nil
	// Until the kubelet has let their devices go (PodResources lists active pods only): the
	// next order's pods need them.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for key := range podDevices(t) {
			if strings.HasPrefix(key, ns+"/rf-") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("the kubelet still lists the deleted pods' devices: %v", podDevices(t))
	}
	for _, p := range k.plugins {
		stopDevicePlugin(t, p)
	}
	k.plugins = nil
}
