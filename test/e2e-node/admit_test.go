//go:build e2enode

package e2enode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// admitPod is one Guaranteed pod of a sequence: its CPU and memory (requests = limits).
type admitPod struct{ name, cpu, memory string }

// admitGroup is a sequence of pods created one after another on a kubelet running with
// change applied to the e2e node's configuration; the pods of one group stack, and every pod is
// gone (from the API and from the CPU manager's checkpoint) before the next group.
type admitGroup struct {
	name   string
	change func(cfg map[string]any)
	pods   []admitPod
}

// The e2e node has 2 CPUs with reservedSystemCPUs "0": 1 allocatable CPU, one NUMA node, no
// SMT. Rejections this machine cannot produce: OutOfmemory (the Static memory manager refuses a
// Guaranteed pod too big for the NUMA node first, and its free memory is the node's allocatable:
// capacity minus the same 100Mi), OutOfpods (110 pods), and an SMTAlignmentError for a request
// that is not a multiple of the core size (1 thread per core). TopologyAffinityError comes,
// with one NUMA node, only from a CPU request no NUMA node can hold at all.
var admitGroups = []admitGroup{
	{
		name: "static-topology-none",
		pods: []admitPod{
			{"shared-half", "500m", podMemory},               // shared pool, memory pinned to NUMA 0
			{"exclusive-over-shared", "1", podMemory},        // the managers admit it, the predicate says OutOfcpu
			{"shared-half-after-refusal", "500m", podMemory}, // the refused pod's CPU is back in the shared pool
		},
	},
	{
		name: "static-topology-none-full",
		pods: []admitPod{
			{"exclusive", "1", podMemory},
			{"no-cpu-left", "1", podMemory},        // UnexpectedAdmissionError: not enough cpus available
			{"memory-beyond-numa", "100m", "64Gi"}, // the memory manager refuses before the predicate
		},
	},
	{
		name:   "full-pcpus-only",
		change: func(cfg map[string]any) { cfg["cpuManagerPolicyOptions"] = map[string]any{"full-pcpus-only": "true"} },
		pods: []admitPod{
			{"exclusive", "1", podMemory},
			{"no-physical-cpu-left", "1", podMemory}, // SMTAlignmentError: not enough free physical CPUs
		},
	},
	{
		name:   "topology-restricted",
		change: func(cfg map[string]any) { cfg["topologyManagerPolicy"] = "restricted" },
		pods: []admitPod{
			{"exclusive", "1", podMemory},
			{"no-numa-fit", "1", podMemory}, // TopologyAffinityError: no CPU hint at all
		},
	},
}

// The reasons admitGroups must each produce at least once on this machine.
var admitReasonsCovered = []string{"OutOfcpu", "UnexpectedAdmissionError", "SMTAlignmentError", "TopologyAffinityError"}

// TestAdmitPredictsRealKubelet runs `kubectl nodestate admit NODE -f pod.yaml -o json` just
// before creating each pod of admitGroups, then compares the prediction with what the real
// kubelet did: an admitted pod's containers' cpuset.cpus and cpuset.mems, a refused pod's status
// reason and message, word for word.
func TestAdmitPredictsRealKubelet(t *testing.T) {
	orig, err := os.ReadFile(node.KubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(node.Repo, "hack/e2e-node/kubelet.sh")
	restarted := false
	var all []string // every pod made, deleted whatever happens
	t.Cleanup(func() {
		for _, name := range all {
			_ = node.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if !restarted {
			return
		}
		if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
			t.Errorf("stop the kubelet: %v\n%s", err, out)
		}
		if out, err := exec.Command(script, "start").CombinedOutput(); err != nil {
			t.Errorf("restart the kubelet with its configuration: %v\n%s", err, out)
		}
	})
	onlineNUMA := readList(t, "/sys/devices/system/node/online")
	dir := t.TempDir()
	compared, seen := 0, map[string]bool{}
	var runningConfig []byte // the configuration the kubelet runs with, once restarted
	for _, g := range admitGroups {
		// Every group runs on a kubelet started with its configuration; a 1s CPU manager
		// reconcile period only makes the deleted pods' CPUs come back sooner (it plays no part
		// in admission).
		file, b := writeKubeletConfig(t, orig, "admit-"+g.name, func(cfg map[string]any) {
			cfg["cpuManagerReconcilePeriod"] = "1s"
			if g.change != nil {
				g.change(cfg)
			}
		})
		if !bytes.Equal(b, runningConfig) {
			start := time.Now()
			if out, err := exec.Command(script, "stop").CombinedOutput(); err != nil {
				t.Fatalf("stop the kubelet: %v\n%s", err, out)
			}
			restarted = true
			if out, err := exec.Command(script, "start", file).CombinedOutput(); err != nil {
				t.Fatalf("start the kubelet with %s: %v\n%s", file, err, out)
			}
			runningConfig = b
			t.Logf("group %s: kubelet restarted in %s", g.name, time.Since(start).Round(10*time.Millisecond))
		}

		var created []string
		for _, ap := range g.pods {
			p := pod("admit-"+ap.name, nil, nil)
			res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(ap.cpu), corev1.ResourceMemory: resource.MustParse(ap.memory)}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
			want := predictAdmission(t, dir, p)
			if _, err := node.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create pod %s: %v", p.Name, err)
			}
			created = append(created, p.Name)
			all = append(all, p.Name)
			real := waitPod(t, p.Name, func(p *corev1.Pod) bool { return running(p) || p.Status.Phase == corev1.PodFailed })
			compared++
			what := g.name + "/" + p.Name
			if !want.Admitted {
				seen[want.Reason] = true
				// The pod's status carries statusMessage (rejectPod's prefix, then the
				// handler's message); the kubelet's Warning event carries message as is.
				if real.Status.Phase != corev1.PodFailed || real.Status.Reason != want.Reason || real.Status.Message != want.StatusMessage {
					t.Errorf("%s: admit predicted refusal\n  %s: %s\nthe kubelet: phase %s\n  %s: %s", what, want.Reason, want.StatusMessage,
						real.Status.Phase, real.Status.Reason, real.Status.Message)
					continue
				}
				if ev := rejectionEvent(t, real, want.Reason); ev != want.Message {
					t.Errorf("%s: admit predicted message\n  %s\nthe kubelet's %s event says\n  %s", what, want.Message, want.Reason, ev)
					continue
				}
				t.Logf("%s: refused as predicted: %s: %s", what, want.Reason, want.StatusMessage)
				continue
			}
			if !running(real) {
				t.Errorf("%s: admit predicted admission; the kubelet: phase %s\n  %s: %s", what, real.Status.Phase, real.Status.Reason, real.Status.Message)
				continue
			}
			if real.Status.QOSClass != corev1.PodQOSGuaranteed {
				t.Fatalf("%s: QoS %s, want Guaranteed", what, real.Status.QOSClass)
			}
			if len(want.Containers) != len(real.Spec.Containers) {
				t.Errorf("%s: admit predicted %d containers, the pod has %d", what, len(want.Containers), len(real.Spec.Containers))
			}
			for _, c := range want.Containers {
				cpus := containerList(t, real, c.Name, "cpuset.cpus")
				mems := containerList(t, real, c.Name, "cpuset.mems")
				wantMems := cpuset.New(c.MemoryNUMANodes...) // a NUMA node list parses like a CPU list
				if len(c.MemoryNUMANodes) == 0 {
					wantMems = onlineNUMA // nothing pinned: every NUMA node
				}
				if got := mustParseCPUs(t, c.CPUs); !got.Equals(cpus) || !wantMems.Equals(mems) {
					t.Errorf("%s/%s: admit predicted cpus %s (exclusive %v) mems %v; cgroup cpuset.cpus %s cpuset.mems %s",
						what, c.Name, c.CPUs, c.Exclusive, c.MemoryNUMANodes, cpus, mems)
					continue
				}
				t.Logf("%s/%s: admitted as predicted: cpus %s (exclusive %v), mems %s", what, c.Name, cpus, c.Exclusive, mems)
			}
		}
		deleteAndSettle(t, created)
	}
	for _, r := range admitReasonsCovered {
		if !seen[r] {
			t.Errorf("no case was refused with %s", r)
		}
	}
	t.Logf("%d predictions compared with the real kubelet; %s", compared, map[bool]string{true: "all equal", false: "NOT all equal"}[!t.Failed()])
}

// predictAdmission runs the live admit on the node for p, written to a manifest in dir.
func predictAdmission(t *testing.T, dir string, p *corev1.Pod) admit.Admission {
	t.Helper()
	return admitResult(t, dir, p).Admissions[0]
}

// runAdmitJSON writes p to a manifest in dir and runs `admit NODE -f p.yaml -o json` with extra
// arguments.
func runAdmitJSON(t *testing.T, dir string, p *corev1.Pod, extra ...string) result {
	t.Helper()
	// A manifest names its kind, as kubectl's -f requires.
	typed := p.DeepCopy()
	typed.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	b, err := yaml.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, p.Name+".yaml")
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return nodestate(t, "admit", append([]string{"-f", manifest, "-o", "json"}, extra...)...)
}

// admitResult runs `admit NODE -f p.yaml -o json` with extra arguments, and checks it predicted
// one admission and exited accordingly.
func admitResult(t *testing.T, dir string, p *corev1.Pod, extra ...string) render.AdmitResult {
	t.Helper()
	r := runAdmitJSON(t, dir, p, extra...)
	// One node: the result itself, or a list of one (as the command prints it for a named node).
	var list render.List[render.AdmitResult]
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("admit -o json: %v\n%s", err, r)
	}
	res := render.AdmitResult{}
	if len(list.Items) == 1 {
		res = list.Items[0]
	} else if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("admit -o json: %v\n%s", err, r)
	}
	if !res.KubeletStart.Starts || len(res.Admissions) != 1 {
		t.Fatalf("admit: no admission predicted:\n%s", r)
	}
	a := res.Admissions[0]
	wantCode := map[bool]int{true: 0, false: 1}[a.Admitted]
	if a.Verdict == admit.VerdictNotJudged {
		wantCode = 4 // a pod not judged, none refused (cmdutil.ExitNotJudged)
	}
	if r.code != wantCode {
		t.Fatalf("admit: admitted %v (verdict %q) but exit %d:\n%s", a.Admitted, a.Verdict, r.code, r)
	}
	return res
}

// rejectionEvent waits for the kubelet's Warning event refusing p with reason, and returns its
// message ("" if none came).
func rejectionEvent(t *testing.T, p *corev1.Pod, reason string) string {
	t.Helper()
	var msg string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := node.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(p.UID) + ",reason=" + reason})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			msg = e.Message
		}
		return msg != "", nil
	})
	return msg
}

// containerList reads a cpuset file of one container of p from the host's cgroup fs.
func containerList(t *testing.T, p *corev1.Pod, container, file string) cpuset.CPUSet {
	t.Helper()
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container {
			one := p.DeepCopy()
			one.Status.ContainerStatuses = []corev1.ContainerStatus{s}
			return cgroupCPUs(t, one, file)
		}
	}
	t.Fatalf("pod %s has no status for container %s", p.Name, container)
	return cpuset.New()
}

func readList(t *testing.T, file string) cpuset.CPUSet {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return mustParseCPUs(t, strings.TrimSpace(string(b)))
}

// deleteAndSettle deletes the pods and waits until they are gone from the API and the CPU
// manager's checkpoint holds no assignment (the state the next group starts from). The memory
// manager drops a deleted pod's blocks only at its next admission (removeStaleState): with one
// NUMA node those blocks change no answer compared here.
func deleteAndSettle(t *testing.T, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		err := node.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	var entries []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := node.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		b, err := os.ReadFile(filepath.Join(node.KubeletRoot, "cpu_manager_state"))
		if err != nil {
			return false, err
		}
		var st struct {
			Entries map[string]map[string]string `json:"entries"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return false, err
		}
		entries = entries[:0]
		for uid := range st.Entries {
			entries = append(entries, uid)
		}
		slices.Sort(entries)
		return len(entries) == 0, nil
	})
	if err != nil {
		t.Fatalf("pods %v not gone, or CPU assignments left for pods %v: %v", names, entries, err)
	}
}
