//go:build e2enode

package e2enode

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

const (
	ns         = "default"
	podMemory  = "64Mi"
	busybox    = "docker.io/library/busybox:1.37"
	cpusetRoot = "/sys/fs/cgroup/cpuset"
)

// pod returns a pod on the node running sleep, with the given resources for requests and limits.
func pod(name string, requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"e2e-node": "workload"}},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			// No controller-manager publishes kube-root-ca.crt: no token volume.
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command:   []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
	}
}

func createPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := node.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	t.Cleanup(func() {
		_ = node.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
}

// waitPod waits until done says the pod has reached the state wanted, and returns it.
func waitPod(t *testing.T, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := node.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return done(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: %v; last status %+v", name, err, last.Status)
	}
	return last
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// containerCgroup finds a container's directory in a cgroup v1 hierarchy under the kubelet's
// cgroup root (the kubelet names pods, containerd names the container directory by its ID).
func containerCgroup(t *testing.T, hierarchy string, p *corev1.Pod) string {
	t.Helper()
	id := p.Status.ContainerStatuses[0].ContainerID
	_, id, _ = strings.Cut(id, "://")
	var found string
	root := filepath.Join(hierarchy, node.CgroupRoot)
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no cgroup for container %s of %s under %s", id, p.Name, root)
	}
	return found
}

func cgroupCPUs(t *testing.T, p *corev1.Pod, file string) cpuset.CPUSet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(containerCgroup(t, cpusetRoot, p), file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s of %s: %v", file, p.Name, err)
	}
	return s
}

func mustParseCPUs(t *testing.T, s string) cpuset.CPUSet {
	t.Helper()
	c, err := cpuset.Parse(s)
	if err != nil {
		t.Fatalf("cpu list %q: %v", s, err)
	}
	return c
}

func decodeList[T any](t *testing.T, r result) []T {
	t.Helper()
	var l render.List[T]
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	return l.Items
}

// noDebugPodsLeft: every command deletes its debug pod before it exits.
func noDebugPodsLeft(t *testing.T) {
	t.Helper()
	list, err := node.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: fetch.ManagedSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		t.Errorf("debug pod %s/%s left behind", p.Namespace, p.Name)
	}
}

// TestFullNode fills the node's allocatable CPU with Guaranteed pods (exclusive CPUs, NUMA
// memory from the Static memory manager), then reads it with every live command through the
// real kubectl and compares the tables with what the kubelet really did in the cgroups.
func TestFullNode(t *testing.T) {
	ctx := context.Background()
	n, err := node.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := n.Status.Allocatable[corev1.ResourceCPU]
	count := int(alloc.MilliValue() / 1000)
	if count < 1 || alloc.MilliValue()%1000 != 0 {
		t.Fatalf("allocatable CPU %s: want a whole number of CPUs, at least 1", alloc.String())
	}
	t.Logf("node %s: kubelet %s, allocatable cpu %s, memory %s", node.Name, n.Status.NodeInfo.KubeletVersion,
		alloc.String(), ptr.To(n.Status.Allocatable[corev1.ResourceMemory]).String())

	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory)}
	var names []string
	for i := range count {
		p := pod("guaranteed-"+string(rune('a'+i)), guaranteed, guaranteed)
		createPod(t, p)
		names = append(names, p.Name)
	}
	// A BestEffort pod runs in the shared pool: its cpuset is the state's defaultCpuSet.
	createPod(t, pod("shared", nil, nil))
	pods := map[string]*corev1.Pod{}
	for _, name := range append(names, "shared") {
		p := waitPod(t, name, running)
		pods[name] = p
	}
	if q := pods[names[0]].Status.QOSClass; q != corev1.PodQOSGuaranteed {
		t.Fatalf("QoS %s, want Guaranteed", q)
	}

	// The node is full: the debug pod the plugin used to make (requests 10m CPU) is refused.
	t.Run("full node refuses a pod requesting CPU", func(t *testing.T) {
		old := pod("old-debug-pod",
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")})
		createPod(t, old)
		p := waitPod(t, old.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed || running(p) })
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "OutOfcpu" {
			t.Fatalf("pod requesting 10m CPU: phase %s reason %q, want Failed OutOfcpu", p.Status.Phase, p.Status.Reason)
		}
		t.Logf("refused as expected: %s: %s", p.Status.Reason, p.Status.Message)
	})

	t.Run("verify", func(t *testing.T) {
		r := nodestate(t, "verify", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		seen := map[string]bool{}
		for _, f := range decodeList[decode.Report](t, r) {
			seen[f.File] = true
			if f.Verdict != decode.Valid {
				t.Errorf("%s: verdict %s (%s)", f.File, f.Verdict, f.Error)
			}
		}
		for _, want := range []string{"cpu_manager_state", "memory_manager_state", "allocated_pods_state", "actuated_pods_state"} {
			if !seen[want] {
				t.Errorf("verify did not report %s: %s", want, r)
			}
		}
		noDebugPodsLeft(t)
	})

	t.Run("cpus matches each container's cpuset.cpus", func(t *testing.T) {
		r := nodestate(t, "cpus", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		rows := decodeList[render.CPURow](t, r)
		exclusive := cpuset.New()
		for _, name := range names {
			var row *render.CPURow
			for i := range rows {
				if rows[i].Pod == name && rows[i].Container == "main" {
					row = &rows[i]
				}
			}
			if row == nil {
				t.Errorf("no cpus row for %s/main:\n%s", name, r.stdout)
				continue
			}
			got := mustParseCPUs(t, row.CPUs)
			real := cgroupCPUs(t, pods[name], "cpuset.cpus")
			if !got.Equals(real) || got.Size() != 1 {
				t.Errorf("%s: cpus says %s, the container's cpuset.cpus is %s (want one exclusive CPU)", name, got, real)
			}
			exclusive = exclusive.Union(got)
		}
		var shared *render.CPURow
		for i := range rows {
			if rows[i].Scope == "shared" {
				shared = &rows[i]
			}
		}
		if shared == nil {
			t.Fatalf("no shared pool row:\n%s", r.stdout)
		}
		sharedReal := cgroupCPUs(t, pods["shared"], "cpuset.cpus")
		if got := mustParseCPUs(t, shared.CPUs); !got.Equals(sharedReal) || !got.Intersection(exclusive).IsEmpty() {
			t.Errorf("shared pool: cpus says %s, the BestEffort container's cpuset.cpus is %s, exclusive %s", got, sharedReal, exclusive)
		}
		t.Logf("exclusive %s, shared %s (cgroup: %s)", exclusive, shared.CPUs, sharedReal)
		noDebugPodsLeft(t)
	})

	t.Run("memory matches the Guaranteed pods and their cpuset.mems", func(t *testing.T) {
		r := nodestate(t, "memory", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		mnodes := decodeList[render.MemoryNode](t, r)
		if len(mnodes) != 1 || mnodes[0].Policy != "Static" {
			t.Fatalf("want one node with policy Static:\n%s", r.stdout)
		}
		want := resource.MustParse(podMemory)
		for _, name := range names {
			var blocks []render.MemoryAssignRow
			for _, a := range mnodes[0].Assignments {
				if a.Pod == name && a.Container == "main" && a.Type == "memory" {
					blocks = append(blocks, a)
				}
			}
			if len(blocks) != 1 || int64(blocks[0].Size) != want.Value() {
				t.Errorf("%s: memory blocks %+v, want one of %d bytes", name, blocks, want.Value())
				continue
			}
			mems := cgroupCPUs(t, pods[name], "cpuset.mems") // a NUMA node list parses like a CPU list
			if !mems.Equals(cpuset.New(blocks[0].NUMANodes...)) {
				t.Errorf("%s: memory says NUMA %v, the container's cpuset.mems is %s", name, blocks[0].NUMANodes, mems)
			}
		}
		noDebugPodsLeft(t)
	})

	t.Run("pods marks the debug pod", func(t *testing.T) {
		r := nodestate(t, "pods", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		debugRows := 0
		for _, row := range decodeList[render.PodRow](t, r) {
			isOurs := strings.HasPrefix(row.Pod, "nodestate-") || (row.Pod == "" && row.Container == fetch.ContainerName)
			if row.DebugPod != isOurs && row.Pod != "" {
				t.Errorf("row %+v: debugPod %v", row, row.DebugPod)
			}
			if row.DebugPod {
				debugRows++
				// BestEffort: the kubelet recorded no requests and no limits for it.
				if len(row.Requests) > 0 || len(row.Limits) > 0 {
					t.Errorf("debug pod recorded with resources %+v", row)
				}
			}
			for _, name := range names {
				if row.Pod == name && (row.Requests.Cpu().String() != "1" || row.Requests.Memory().String() != podMemory) {
					t.Errorf("%s recorded with requests %v", name, row.Requests)
				}
			}
		}
		if debugRows == 0 {
			t.Errorf("no row marked as the debug pod (it is in allocated_pods_state while it runs):\n%s", r.stdout)
		}
		table := nodestate(t, "pods")
		if !strings.Contains(table.stdout, render.DebugPodMark) {
			t.Errorf("table does not mark the debug pod:\n%s", table.stdout)
		}
		noDebugPodsLeft(t)
	})

	// Before the fix, a wrong --kubelet-root-dir waited out --pod-running-timeout and said
	// "not Running after ..."; and --pod-running-timeout 3m was refused outright.
	t.Run("wrong kubelet root dir fails at once, from the kubelet's event", func(t *testing.T) {
		r := nodestate(t, "verify", "--kubelet-root-dir", "/nonexistent/kubelet", "--pod-running-timeout", "3m")
		if r.code != 2 {
			t.Errorf("exit %d, want 2", r.code)
		}
		// The plugin's own advice for a root dir that is not there, after the kubelet's words.
		for _, want := range []string{"--kubelet-root-dir", `"/nonexistent/kubelet"`, "FailedMount", "set --kubelet-root-dir to the node kubelet's --root-dir"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r)
			}
		}
		// The kubelet's words: up to 1.37 the type check fails; 1.38 checks existence first
		// (1.38.0-beta.0 pkg/volume/hostpath/host_path.go:408).
		if !strings.Contains(r.stderr, "hostPath type check failed") && !strings.Contains(r.stderr, "hostPath /nonexistent/kubelet doesn't exist") {
			t.Errorf("stderr lacks the kubelet's hostPath check (1.37 or 1.38 words):\n%s", r)
		}
		if strings.Contains(r.stderr, "not Running after") {
			t.Errorf("waited out the timeout:\n%s", r)
		}
		noDebugPodsLeft(t)
	})

	t.Run("long pod-running timeout accepted", func(t *testing.T) {
		r := nodestate(t, "cpus", "--pod-running-timeout", "3m")
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		noDebugPodsLeft(t)
	})
}
