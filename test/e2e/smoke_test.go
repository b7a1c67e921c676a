//go:build e2e

package e2e

// Smoke tests of the harness itself, without the plugin: the path the
// plugin's live commands take (pod on a node -> Running via watch -> exec
// tar through the apiserver -> delete) works on this control plane.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// untarBytes returns name -> content of a tar stream.
func untarBytes(b []byte) (map[string]string, error) {
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bad tar stream (%d bytes): %w", len(b), err)
		}
		c, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[h.Name] = string(c)
	}
}

func untar(t testing.TB, b []byte) map[string]string {
	t.Helper()
	m, err := untarBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cpuState(node string) string {
	return fmt.Sprintf(`{"policyName":"static","defaultCpuSet":"0-3","entries":{},"checksum":%d,"node":%q}`, len(node)*7919, node)
}

func TestSmokeVersions(t *testing.T) {
	r := RunKubectl(t, "version", "--client", "-o", "json")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, `"gitVersion": "`+kubeVersion+`"`) {
		t.Fatalf("kubectl version --client: %s", r)
	}
	sv, err := Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if sv.GitVersion != kubeVersion {
		t.Fatalf("server version %q, want %s", sv.GitVersion, kubeVersion)
	}
	t.Logf("kubectl and kube-apiserver report %s", sv.GitVersion)
}

// The plugin under test is found through kubectl's plugin discovery.
func TestSmokePluginDiscovery(t *testing.T) {
	PluginBin(t)
	r := RunKubectl(t, "plugin", "list")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "kubectl-nodestate") {
		t.Fatalf("kubectl plugin list: %s", r)
	}
	if r := RunKubectl(t, "nodestate", "--help"); r.ExitCode != 0 {
		t.Fatalf("kubectl nodestate --help: %s", r)
	}
}

// A non-admin user from UserKubeconfig is subject to RBAC.
func TestSmokeUserRBAC(t *testing.T) {
	kc := UserKubeconfig(t, "e2e-alice")
	r := Run(t, 0, Env(t, "KUBECONFIG="+kc), KubectlBin(), "get", "nodes")
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "forbidden") {
		t.Fatalf("alice listed nodes: %s", r)
	}
	r = Run(t, 0, Env(t, "KUBECONFIG="+kc), KubectlBin(), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if r.ExitCode != 0 || r.Stdout != "e2e-alice" {
		t.Fatalf("whoami: %s", r)
	}
}

func TestSmokeExecPath(t *testing.T) {
	ns := NewNamespace(t, nil)
	nodes := []string{"smoke-a", "smoke-b", "smoke-c"}
	versions := []string{"v1.35.4", "v1.36.3", "v1.37.1"}
	for i, n := range nodes {
		dir := KubeletDir(t, map[string]string{
			"cpu_manager_state":    cpuState(n),
			"memory_manager_state": `{"policyName":"None","checksum":1}`,
		})
		node := CreateNode(t, n, versions[i], map[string]string{"pool": "smoke"}, dir)
		if got := node.Status.NodeInfo.KubeletVersion; got != versions[i] {
			t.Errorf("node %s kubeletVersion %q, want %q", n, got, versions[i])
		}
		if node.Labels["kubernetes.io/os"] != "linux" || node.Labels["pool"] != "smoke" || node.Labels[TestLabel] != TestID(t) {
			t.Errorf("node %s labels %v", n, node.Labels)
		}
	}
	list, err := Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: TestSelector(t)})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("TestSelector matched %d nodes (%v), want 3", len(list.Items), err)
	}

	start := time.Now()
	pod, err := Client().CoreV1().Pods(ns).Create(context.Background(), DebugPod(ns, "nodestate-smoke", "smoke-b"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	WaitPodRunning(t, ns, pod.Name, 30*time.Second)
	t.Logf("pod Running %s after create", time.Since(start).Round(time.Millisecond))
	if n := CountManagedPods(t, ns); n != 1 {
		t.Fatalf("CountManagedPods = %d, want 1", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// client-go, WebSocket with SPDY fallback, as the plugin will do.
	start = time.Now()
	stdout, stderr, err := ExecInPod(ctx, ns, pod.Name, fetch.ContainerName, []string{"tar", "-cf", "-", "cpu_manager_state", "memory_manager_state"})
	if err != nil {
		t.Fatalf("exec: %v (stderr %q)", err, stderr)
	}
	files := untar(t, stdout)
	if files["cpu_manager_state"] != cpuState("smoke-b") || files["memory_manager_state"] == "" {
		t.Fatalf("exec tar got %v", files)
	}
	t.Logf("client-go exec tar: %d bytes in %s", len(stdout), time.Since(start).Round(time.Millisecond))

	// Wrapped in sh -c, with a missing file, forcing exit 0.
	stdout, stderr, err = ExecInPod(ctx, ns, pod.Name, fetch.ContainerName, []string{"sh", "-c", "tar -cf - cpu_manager_state no_such_file 2>/dev/null; exit 0"})
	if err != nil {
		t.Fatalf("exec sh -c: %v (stderr %q)", err, stderr)
	}
	if files := untar(t, stdout); files["cpu_manager_state"] != cpuState("smoke-b") || len(files) != 1 {
		t.Fatalf("exec sh -c tar got %v", files)
	}

	// A non-zero exit is an error (kwok loses the code).
	if _, _, err := ExecInPod(ctx, ns, pod.Name, fetch.ContainerName, []string{"sh", "-c", "exit 3"}); err == nil {
		t.Errorf("exec of a failing command returned no error")
	} else {
		t.Logf("exec exit 3 -> %v", err)
	}

	// The pinned kubectl binary (WebSocket).
	r := RunKubectl(t, "exec", "-n", ns, pod.Name, "-c", fetch.ContainerName, "--", "tar", "-cf", "-", "cpu_manager_state")
	if r.ExitCode != 0 {
		t.Fatalf("kubectl exec: %s", r)
	}
	if files := untar(t, []byte(r.Stdout)); files["cpu_manager_state"] != cpuState("smoke-b") {
		t.Fatalf("kubectl exec tar got %v", files)
	}

	// Delete: kwok's pod-delete stage removes it, the mapper its Exec.
	start = time.Now()
	if err := Client().CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitPodGone(t, ns, pod.Name, 30*time.Second)
	t.Logf("pod gone %s after delete", time.Since(start).Round(time.Millisecond))
	WaitNoManagedPods(t, ns, 10*time.Second)
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.dynamic.Resource(execGVR).Namespace(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("Exec object of the deleted pod not removed: %v", err)
	}
}

func TestSmokeFailureHelpers(t *testing.T) {
	ns := NewNamespace(t, nil)
	CreateNode(t, "smoke-ready", "", nil, "")
	nr := CreateNodeWith(t, "smoke-notready", NodeOptions{NotReady: true})
	if nodeReady(nr) {
		t.Fatalf("NotReady node is Ready")
	}
	CreateNode(t, "smoke-turned", "", nil, "")
	SetNodeNotReady(t, "smoke-turned")
	CreateNodeWith(t, PrefixPodsPending+"smoke", NodeOptions{Pods: PodsPending})
	CreateNodeWith(t, PrefixPodsImagePull+"smoke", NodeOptions{Pods: PodsImagePullBackOff})
	CreateNodeWith(t, PrefixPodsFail+"smoke", NodeOptions{Pods: PodsFail})

	pods := map[string]string{ // pod -> node
		"on-ready":     "smoke-ready",
		"on-notready":  "smoke-notready",
		"on-turned":    "smoke-turned",
		"on-pending":   PrefixPodsPending + "smoke",
		"on-imagepull": PrefixPodsImagePull + "smoke",
		"on-failing":   PrefixPodsFail + "smoke",
	}
	for p, n := range pods {
		if _, err := Client().CoreV1().Pods(ns).Create(context.Background(), DebugPod(ns, p, n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	WaitPodRunning(t, ns, "on-ready", 30*time.Second)
	WaitPod(t, ns, "on-imagepull", 30*time.Second, func(p *corev1.Pod) (bool, error) {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ImagePullBackOff", nil
	})
	WaitPod(t, ns, "on-failing", 30*time.Second, func(p *corev1.Pod) (bool, error) {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil && cs[0].State.Terminated.ExitCode == 1, nil
	})
	// The others must stay Pending; give kwok time to (not) act.
	time.Sleep(2 * time.Second)
	for _, p := range []string{"on-notready", "on-turned", "on-pending", "on-imagepull"} {
		got, err := Client().CoreV1().Pods(ns).Get(context.Background(), p, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.PodPending {
			t.Errorf("pod %s phase %s, want Pending", p, got.Status.Phase)
		}
	}
	for _, n := range []string{"smoke-notready", "smoke-turned"} {
		node, err := Client().CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeReady(node) {
			t.Errorf("node %s became Ready again", n)
		}
	}

	// Deleting with a grace period: pods on kwok nodes go away; on NotReady
	// nodes they stay Terminating (dead kubelet), which CountManagedPods
	// does not count. (DebugPod's own grace period is 1s.)
	grace := int64(30)
	for p := range pods {
		if err := Client().CoreV1().Pods(ns).Delete(context.Background(), p, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
	}
	WaitNoManagedPods(t, ns, 20*time.Second)
	for _, p := range []string{"on-ready", "on-pending", "on-imagepull", "on-failing"} {
		WaitPodGone(t, ns, p, 20*time.Second)
	}
	if left := ManagedPods(t, ns); len(left) != 2 {
		t.Errorf("want the 2 pods of NotReady nodes left Terminating, got %d", len(left))
	}

	// Pod Security: baseline rejects the hostPath debug pod.
	restricted := NewNamespace(t, nil)
	EnforcePodSecurity(t, restricted, "baseline")
	_, err := Client().CoreV1().Pods(restricted).Create(context.Background(), DebugPod(restricted, "denied", "smoke-ready"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostPath") {
		t.Fatalf("want a PodSecurity rejection mentioning hostPath, got %v", err)
	}
	t.Logf("baseline namespace: %v", err)
}

// TestSmokeScale creates 100 nodes ($NODESTATE_E2E_SCALE_NODES to change),
// a debug pod on each, execs tar in each and deletes them, logging the time
// of every step.
func TestSmokeScale(t *testing.T) {
	n := 100
	if s := os.Getenv("NODESTATE_E2E_SCALE_NODES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("NODESTATE_E2E_SCALE_NODES=%q", s)
		}
	}
	ns := NewNamespace(t, nil)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%04d", i)
	}
	start := time.Now()
	CreateNodes(t, names, func(name string) NodeOptions {
		return NodeOptions{KubeletVersion: "v1.36.3", KubeletDir: KubeletDir(t, map[string]string{"cpu_manager_state": cpuState(name)})}
	})
	t.Logf("%d nodes created and Ready in %s", n, time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	parallel := func(f func(i int) error) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		sem := make(chan struct{}, 32)
		for i := range n {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				errs[i] = f(i)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	start = time.Now()
	if err := parallel(func(i int) error {
		_, err := Client().CoreV1().Pods(ns).Create(ctx, DebugPod(ns, "debug-"+names[i], names[i]), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods created in %s, all Running after %s", n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := parallel(func(i int) error {
		out, stderr, err := ExecInPod(ctx, ns, "debug-"+names[i], fetch.ContainerName, []string{"tar", "-cf", "-", "cpu_manager_state"})
		if err != nil {
			return fmt.Errorf("exec on %s: %v (%s)", names[i], err, stderr)
		}
		files, err := untarBytes(out)
		if err != nil {
			return fmt.Errorf("exec on %s: %w", names[i], err)
		}
		if got := files["cpu_manager_state"]; got != cpuState(names[i]) {
			return fmt.Errorf("exec on %s read %q", names[i], got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d execs of tar in %s", n, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := Client().CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods deleted and gone in %s", n, time.Since(start).Round(time.Millisecond))
}
