//go:build e2enode

package e2enode

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	nodestateapi "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// The scheduler test's GPUs: two on NUMA node 0, one without topology (a GPU whose sysfs
// numa_node is -1, as NVIDIA's plugin sends it).
const schedGPU = "nvidia.com/gpu"

var (
	schedGPUsNUMA0 = []string{"GPU-7d2e9a41-3c6b-4f80-9e15-2a8c4d6f0b93", "GPU-a4c81f37-6e2d-4b95-8f0a-1d7e3b5c9a62"}
	schedGPUNoNUMA = "GPU-e19b5d72-8a4f-4c3e-b6d0-7f2a9c1e4b58"
)

// schedulerName is deploy/scheduler's profile's.
const schedulerName = "nodestate-scheduler"

// TestSchedulerOnRealNode has the real kubelet judge the nodestate-scheduler (issue 45). The
// kubelet restarted with topologyManagerPolicy restricted (and the suite's static CPU and
// memory managers); a GPU plugin registers two GPUs on NUMA node 0 and one without topology;
// the node publishes its state (`kubectl-nodestate node-publish`, a process, as the DaemonSet
// runs it) and the nodestate-scheduler runs deploy/scheduler's profile (no leader election),
// both stopped by their PIDs. Pods with schedulerName nodestate-scheduler, in order:
//   - holder (BestEffort, 2 GPUs) binds and runs: the kubelet gives it the NUMA-0 GPUs;
//   - aligned (Guaranteed: 1 exclusive CPU, NUMA memory, 1 GPU): only the GPU without topology
//     is free, so no NUMA node aligns CPU and GPU. It must stay Pending with the kubelet's
//     reason in its PodScheduled condition, and the same pod with nodeName set (past the
//     scheduler) must be refused by the real kubelet with that reason and message, word for word;
//   - holder deleted: aligned binds and the kubelet runs it on a NUMA-0 GPU.
//
// Not single-numa-node: on this one-NUMA-node machine that policy turns the merged affinity
// {0} into none (it equals the default mask), so the device manager picks holder's two GPUs
// among all three free, the one without topology included, and what is left for aligned is
// chance (seen: holder got a NUMA-0 GPU and the one without topology).
//
// The node's state is read from the kubelet's root dir with /var/lib/kubelet/device-plugins
// (the device manager's fixed dir) bind-mounted into it, so one root dir holds the CPU, memory
// and device checkpoints and the PodResources socket, as on a real node.
func TestSchedulerOnRealNode(t *testing.T) {
	bin := os.Getenv("NODESTATE_E2E_SCHEDULER")
	if bin == "" {
		t.Fatal("NODESTATE_E2E_SCHEDULER is not set (hack/e2e-node.sh builds the nodestate-scheduler with the tools)")
	}
	started := time.Now()
	ctx := context.Background()
	resources := []shapedResource{{name: schedGPU}}
	t.Cleanup(func() { dropStatusResources(t, resources) })
	k := restartDeviceKubelet(t, "scheduler", func(cfg map[string]any) { cfg["topologyManagerPolicy"] = "restricted" })
	ids := []string{schedGPUsNUMA0[0] + "@0", schedGPUsNUMA0[1] + "@0", schedGPUNoNUMA}
	k.startPlugin(t, schedGPU, "schedgpu", strings.Join(ids, ","))
	waitResource(t, schedGPU, 3, 3)
	bindDevicePluginsIntoRoot(t)

	cms := node.Client.CoreV1().ConfigMaps(nodestateapi.PublishedNamespace)
	if _, err := node.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodestateapi.PublishedNamespace}}, metav1.CreateOptions{}); err == nil {
		t.Cleanup(func() { deleteNamespace(t, nodestateapi.PublishedNamespace) })
	} else if !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { _ = cms.Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	}

	dir := t.TempDir()
	publisher := startLogged(t, filepath.Join(dir, "node-publish.log"), node.Plugin, "node-publish", "--node", node.Name,
		"--kubelet-root-dir", node.KubeletRoot, "--kubelet-config", k.config, "--kubelet-binary", filepath.Join(node.ToolsBin, "kubelet"),
		"--kubeconfig", node.Kubeconfig)
	first := waitPublished(t, "", 60*time.Second)
	t.Logf("node-publish (PID %d) published %s", publisher.cmd.Process.Pid, first)
	sched := startScheduler(t, bin, dir)

	// holder: the two NUMA-0 GPUs.
	holder := schedulerPod(devicePod("sched-holder", schedGPU, 2))
	k.created = append(k.created, holder.Name)
	holder = createAndWait(t, holder, running)
	if !running(holder) || holder.Spec.NodeName != node.Name {
		t.Fatalf("%s: bound to %q; the kubelet: %s\n%s", holder.Name, holder.Spec.NodeName, describeFate(holder), sched.tail(30))
	}
	held := podDevices(t)[ns+"/"+holder.Name+"/main"][schedGPU]
	t.Logf("POD %s: bound by %s, the kubelet runs it with %v", holder.Name, schedulerName, held)
	slices.Sort(held)
	if !slices.Equal(held, slices.Sorted(slices.Values(schedGPUsNUMA0))) {
		t.Fatalf("%s holds %v; want the NUMA-0 GPUs %v", holder.Name, held, schedGPUsNUMA0)
	}
	// The replay judges the next pod on the state the node published after holder's admission,
	// not on the scheduler's reservation alone.
	afterHolder := waitPublished(t, first, 60*time.Second)
	t.Logf("the node published %s with %s admitted", afterHolder, holder.Name)

	// aligned: refused by the replay, Pending with the kubelet's reason.
	aligned := schedulerPod(guaranteedGPUPod("sched-aligned"))
	k.created = append(k.created, aligned.Name)
	if _, err := node.Client.CoreV1().Pods(ns).Create(ctx, aligned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var schedMsg string
	pending := waitPod(t, aligned.Name, func(p *corev1.Pod) bool {
		schedMsg = unschedulableMessage(p)
		return p.Spec.NodeName != "" || schedMsg != ""
	})
	if pending.Spec.NodeName != "" {
		fate := waitPod(t, aligned.Name, func(p *corev1.Pod) bool { return running(p) || p.Status.Phase == corev1.PodFailed })
		t.Fatalf("%s bound to %s; the kubelet: %s\n%s", aligned.Name, pending.Spec.NodeName, describeFate(fate), sched.tail(30))
	}
	t.Logf("POD %s: Pending, PodScheduled: %s", aligned.Name, schedMsg)
	// The node published holder's admission: the refusal is the published state's, not the
	// scheduler's reservation of holder.
	if strings.Contains(schedMsg, "not yet reported by the node") {
		t.Errorf("%s was refused on the reservation of a pod the node has published: %s", aligned.Name, schedMsg)
	}

	// The same pod past the scheduler: the real kubelet's own verdict.
	direct := guaranteedGPUPod("sched-aligned-direct")
	k.created = append(k.created, direct.Name)
	direct = createAndWait(t, direct, running)
	if direct.Status.Phase != corev1.PodFailed {
		t.Fatalf("%s (nodeName set): the kubelet admitted it (%s) though the scheduler's replay refused it: %s", direct.Name, describeFate(direct), schedMsg)
	}
	event := rejectionEvent(t, direct, direct.Status.Reason)
	t.Logf("POD %s (nodeName set): the kubelet: Failed %s: %s; event: %s", direct.Name, direct.Status.Reason, direct.Status.Message, event)
	if want := direct.Status.Reason + ": " + event; event == "" || !strings.Contains(schedMsg, want) {
		t.Errorf("the scheduler's PodScheduled message\n  %s\ndoes not carry the kubelet's refusal\n  %s", schedMsg, want)
	}
	deletePodAndWait(t, ns, direct.Name)

	// holder deleted: its GPUs free, aligned binds and runs.
	deleted := time.Now()
	deletePodAndWait(t, ns, holder.Name)
	var bound, republished time.Duration
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if republished == 0 {
			if cm, err := cms.Get(ctx, node.Name, metav1.GetOptions{}); err == nil && cm.Annotations[nodestateapi.FingerprintAnnotation] != afterHolder {
				republished = time.Since(deleted)
			}
		}
		p, err := node.Client.CoreV1().Pods(ns).Get(ctx, aligned.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		if bound == 0 && p.Spec.NodeName != "" {
			bound = time.Since(deleted)
		}
		return running(p) || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil || !running(last) {
		t.Fatalf("%s after %s's deletion: %v; %s; PodScheduled: %s\n%s", aligned.Name, holder.Name, err, describeFate(last), unschedulableMessage(last), sched.tail(30))
	}
	got := podDevices(t)[ns+"/"+aligned.Name+"/main"][schedGPU]
	// The Filter counts the scheduler's pods on the node as the kubelet's active pods, so a
	// deleted pod's GPUs are free for it as at the kubelet's next admission, which may come
	// before the node republishes (debounced); the republish must follow.
	t.Logf("POD %s: bound %s after %s's deletion (node republished: %s), the kubelet runs it with %v",
		aligned.Name, bound.Round(time.Millisecond), holder.Name, republishedAt(republished), got)
	if len(got) != 1 || !slices.Contains(schedGPUsNUMA0, got[0]) {
		t.Errorf("%s holds %v; want one NUMA-0 GPU of %v", aligned.Name, got, schedGPUsNUMA0)
	}
	if republished == 0 {
		waitPublished(t, afterHolder, 60*time.Second)
		republished = time.Since(deleted)
	}
	t.Logf("the node republished %s after %s's deletion", republished.Round(time.Millisecond), holder.Name)
	t.Logf("node-publish's log:\n%s", publisher.tail(20))
	t.Logf("TestSchedulerOnRealNode: %s to here", time.Since(started).Round(time.Second))
}

func republishedAt(d time.Duration) string {
	if d == 0 {
		return "not yet"
	}
	return d.Round(time.Millisecond).String() + " after the deletion"
}

// schedulerPod is p left to the nodestate-scheduler: no nodeName, and the not-ready taint
// tolerated (the API server taints a new node so; no controller-manager lifts it here).
func schedulerPod(p *corev1.Pod) *corev1.Pod {
	p.Spec.NodeName = ""
	p.Spec.SchedulerName = schedulerName
	p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return p
}

// guaranteedGPUPod is a Guaranteed pod on the node: 1 exclusive CPU (the static policy), its
// memory from the Static memory manager, and 1 GPU.
func guaranteedGPUPod(name string) *corev1.Pod {
	q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory),
		schedGPU: resource.MustParse("1")}
	return pod(name, q, q)
}

// unschedulableMessage is p's PodScheduled condition's message when the scheduler found it
// unschedulable ("" otherwise).
func unschedulableMessage(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// waitPublished waits until the node's published ConfigMap carries a fingerprint other than
// not, and returns it.
func waitPublished(t *testing.T, not string, limit time.Duration) string {
	t.Helper()
	var fingerprint string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		cm, err := node.Client.CoreV1().ConfigMaps(nodestateapi.PublishedNamespace).Get(ctx, node.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		fingerprint = cm.Annotations[nodestateapi.FingerprintAnnotation]
		return fingerprint != "" && fingerprint != not, nil
	})
	if err != nil {
		t.Fatalf("the node did not publish a state other than %q within %s: %v", not, limit, err)
	}
	return fingerprint
}

// bindDevicePluginsIntoRoot bind-mounts /var/lib/kubelet/device-plugins (the device manager's
// fixed dir: its checkpoint and the plugins' sockets) at device-plugins in the kubelet's own
// root dir, so node-publish reads one root dir as on a real node. Undone at the end (down.sh
// unmounts whatever is left under the state dir).
func bindDevicePluginsIntoRoot(t *testing.T) {
	t.Helper()
	bindMount(t, filepath.Join(devicePluginRoot, "device-plugins"), filepath.Join(node.KubeletRoot, "device-plugins"), "", "")
}

// loggedProcess is a process the test started, its output in a file; stopped by its PID at the end.
type loggedProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once it has exited
}

func (p *loggedProcess) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startLogged starts bin with args, its output in logFile, and stops it at the end: SIGTERM
// by its PID, then SIGKILL after 10 s.
func startLogged(t *testing.T, logFile, bin string, args ...string) *loggedProcess {
	t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p := &loggedProcess{cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		defer f.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s (tail):\n%s", filepath.Base(logFile), p.tail(40))
		}
	})
	return p
}

// startScheduler runs the nodestate-scheduler with deploy/scheduler's profile, the harness's
// kubeconfig and no leader election, on a free port of the loopback, and waits until it is
// ready (its informers synced).
func startScheduler(t *testing.T, bin, dir string) *loggedProcess {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(node.Repo, "deploy", "scheduler", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := yaml.Unmarshal(raw, &config); err != nil {
		t.Fatal(err)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": node.Kubeconfig}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(configFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	p := startLogged(t, filepath.Join(dir, "nodestate-scheduler.log"), bin, "--config="+configFile, "--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port), "--cert-dir="+filepath.Join(dir, "scheduler-certs"), "--v=2")
	// Its serving certificate is self-signed: readiness only is asked.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("exited: %v", p.cmd.ProcessState)
		default:
		}
		resp, err := client.Get(readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the nodestate-scheduler is not ready: %v\n%s", err, p.tail(30))
	}
	t.Logf("nodestate-scheduler (PID %d) ready on 127.0.0.1:%d", p.cmd.Process.Pid, port)
	return p
}
