//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	pubstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// TestJudgeLoop is issue 45's closed loop (make judge-loop): a scheduler binds each workload's
// pods, in order, to kwok nodes with a GPU machine each; every binding is judged by the real
// kubelet managers of v1.37.1 on that node's state (hack/admitvec's judge mode). Admitted: the
// node's checkpoints advance and its published objects (the state ConfigMap, the
// NodeResourceTopology) are rewritten. Refused: a false positive, the pod marked Failed with
// the kubelet's reason and message (as its rejectPod does) and deleted. Pending pods at the
// end are judged on every node of their workload: the false negatives.
//
// Environment:
//
//	NODESTATE_JUDGE_LOOP=1               run it (root: each judgement runs in a private mount namespace)
//	NODESTATE_JUDGE_SCHEDULER=BIN        the scheduler (default: the stock kube-scheduler of the tools)
//	NODESTATE_JUDGE_SCHEDULER_NAME=NAME  the pods' schedulerName (default default-scheduler)
//	NODESTATE_JUDGE_SCHEDULER_ARGS=ARGS  its arguments, {kubeconfig} and {port} replaced (default: a
//	                                     KubeSchedulerConfiguration with one profile of NAME)
//	NODESTATE_JUDGE_SCHEDULER_CONFIG=F   a shipped KubeSchedulerConfiguration instead (its kubeconfig
//	                                     made the harness's), e.g. deploy/scheduler-nrt/scheduler-config.yaml
//	NODESTATE_JUDGE_NODES=N              nodes per workload (default 4)
//	NODESTATE_JUDGE_WORKLOADS=REGEXP     the workloads to run (default all)
//	NODESTATE_JUDGE_REPORT=FILE          the report as JSON
//	NODESTATE_JUDGE_BINDIR=DIR           the admitvec judge binary's directory (judge.sh builds it there)
func TestJudgeLoop(t *testing.T) {
	if os.Getenv("NODESTATE_JUDGE_LOOP") != "1" {
		t.Skip("NODESTATE_JUDGE_LOOP=1 runs the closed loop (make judge-loop)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the judge runs the device manager in a private mount namespace: root only")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodes := 4
	if s := os.Getenv("NODESTATE_JUDGE_NODES"); s != "" {
		if _, err := fmt.Sscan(s, &nodes); err != nil || nodes < 1 {
			t.Fatalf("NODESTATE_JUDGE_NODES=%q", s)
		}
	}
	only := regexp.MustCompile(os.Getenv("NODESTATE_JUDGE_WORKLOADS"))
	schedName := orEnv("NODESTATE_JUDGE_SCHEDULER_NAME", corev1.DefaultSchedulerName)
	schedBin := orEnv("NODESTATE_JUDGE_SCHEDULER", filepath.Join(ToolsBin(), "kube-scheduler"))
	// The sysfs section published is the machine the judge's machine.json describes.
	m, err := machine.FromSysfs(jlSysfs())
	if err != nil {
		t.Fatal(err)
	}
	var got []jlCPU
	for _, c := range m.CPUs {
		got = append(got, jlCPU{ID: c.ID, Core: c.Core, Socket: c.Socket, NUMA: c.NUMA})
	}
	if want := jlCPUs(); !slices.Equal(got, want) || len(m.NUMA) != jlSockets || m.NUMA[1].Memory != jlNUMAMemory {
		t.Fatalf("the sysfs section reads as %+v, not the judge's machine", m)
	}
	ctx := ctxFor(t, 3*time.Hour)
	if err := jlEnsureNRTCRD(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pubstate.PublishedNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	startScheduler(t, ctx, schedBin, schedName)
	judge := &jlJudge{script: filepath.Join(root, "hack", "admitvec", "judge.sh"), bindir: os.Getenv("NODESTATE_JUDGE_BINDIR"), work: t.TempDir()}
	var reports []*jlReport
	for _, wl := range jlWorkloads(schedName) {
		if !only.MatchString(wl.name) {
			continue
		}
		t.Run(wl.name, func(t *testing.T) {
			r := runWorkload(t, ctx, judge, wl, nodes)
			r.Scheduler = schedBin + " (" + schedName + ")"
			reports = append(reports, r)
		})
	}
	fmt.Printf("JUDGELOOP scheduler %s (schedulerName %s), %d nodes a workload, kubelet %s (real managers)\n", schedBin, schedName, nodes, jlKubelet)
	fmt.Printf("JUDGELOOP %-22s %-20s %5s %5s %7s %7s %7s %8s %8s %8s %8s  %s\n", "workload", "pool", "pods", "bound", "refused", "per1000", "pending", "fn-pods", "bind-p50", "bind-p95", "replay=", "refusals")
	for _, r := range reports {
		fmt.Printf("JUDGELOOP %-22s %-20s %5d %5d %7d %7.0f %7d %8d %7.0fms %7.0fms %8s  %v\n", r.Workload, r.Pool, r.Pods, r.Bound, r.Refused, r.RefusedPer1000, r.Pending, r.PendingAdmittable, r.BindP50Ms, r.BindP95Ms, fmt.Sprintf("%d/%d", r.ReplayAgrees, r.Bound), r.Reasons)
	}
	if path := os.Getenv("NODESTATE_JUDGE_REPORT"); path != "" {
		b, _ := json.MarshalIndent(reports, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func orEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// startScheduler runs the scheduler on the control plane until the test ends (stopped by its
// PID's process group).
func startScheduler(t *testing.T, ctx context.Context, bin, name string) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ports[0])
	var args []string
	if f := os.Getenv("NODESTATE_JUDGE_SCHEDULER_CONFIG"); f != "" {
		if !filepath.IsAbs(f) {
			f = filepath.Join(cp.repoRoot, f)
		}
		args = []string{"--config=" + schedulerConfigHere(t, f), "--secure-port=" + port, "--bind-address=127.0.0.1", "--cert-dir=" + t.TempDir()}
	} else if s := os.Getenv("NODESTATE_JUDGE_SCHEDULER_ARGS"); s != "" {
		for _, a := range strings.Fields(s) {
			args = append(args, strings.NewReplacer("{kubeconfig}", Kubeconfig(), "{port}", port).Replace(a))
		}
	} else {
		config := filepath.Join(t.TempDir(), "scheduler.yaml")
		body := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection:\n  kubeconfig: %q\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: %q\n", Kubeconfig(), name)
		if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"--config=" + config, "--secure-port=" + port, "--bind-address=127.0.0.1"}
	}
	p, err := cp.start("scheduler-"+filepath.Base(bin), bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(10 * time.Second) })
	// Ready once it serves /readyz (its informers synced).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if p.exited() {
			t.Fatalf("the scheduler exited: %v\n%s", p.waitErr, tail(p.logPath, 30))
		}
		out, err := exec.CommandContext(ctx, "curl", "-ksf", "https://127.0.0.1:"+port+"/readyz").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler is not ready after 2 min\n%s", tail(p.logPath, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jlJudge runs hack/admitvec/judge.sh, one process per judgement.
type jlJudge struct {
	script, bindir, work string
	seq                  int
	calls                int
	spent                time.Duration
}

// jlVerdict is admitvec's verdict.json, the fields the loop reads.
type jlVerdict struct {
	Starts      bool     `json:"starts"`
	Phase       string   `json:"phase"`
	StartError  string   `json:"startError"`
	Admit       bool     `json:"admit"`
	Reason      string   `json:"reason"`
	Message     string   `json:"message"`
	Hangs       bool     `json:"hangs"`
	StateAfter  *jlState `json:"stateAfter"`
	Checkpoints []string `json:"checkpoints"`
	out         string
}

// judge admits pod (nil: garbage collection only) on the node's state.
func (j *jlJudge) judge(ctx context.Context, n *jlNode, pod *corev1.Pod) (*jlVerdict, error) {
	j.seq++
	out := filepath.Join(j.work, fmt.Sprintf("judgement-%05d", j.seq))
	podPath := ""
	if pod != nil {
		podPath = out + ".pod.json"
		if err := jlWriteJSON(podPath, pod); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, j.script, jlKubelet, n.dir, podPath, out)
	if j.bindir != "" {
		cmd.Env = append(os.Environ(), "BINDIR="+j.bindir)
	}
	start := time.Now()
	b, err := cmd.CombinedOutput()
	j.calls++
	j.spent += time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("judge %s on %s: %v\n%s", podPath, n.name, err, lastLines(string(b), 20))
	}
	raw, err := os.ReadFile(filepath.Join(out, "verdict.json"))
	if err != nil {
		return nil, err
	}
	v := &jlVerdict{out: out}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	if !v.Starts {
		return nil, fmt.Errorf("node %s: the kubelet does not start (%s): %s", n.name, v.Phase, v.StartError)
	}
	return v, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// jlWorkload is pods created in order; a step may first delete a pod the kubelet admitted
// (fragmentation over time).
type jlWorkload struct {
	name string
	pool jlPool
	// steps: the pods, and before which of them an admitted pod is deleted.
	pods         []*corev1.Pod
	deleteBefore map[int]bool
}

// jlCtr is one container of a workload's pod (Guaranteed: requests = limits).
type jlCtr struct {
	name     string
	cpu, mem string
	gpus     int
	init     bool // an init container
	sidecar  bool // a restartable init container
}

var jlPools = map[string]jlPool{
	"single-numa-node": {Name: "single-numa-node", TopologyPolicy: "single-numa-node"},
	"restricted":       {Name: "restricted", TopologyPolicy: "restricted"},
	"best-effort":      {Name: "best-effort", TopologyPolicy: "best-effort"},
	"snn-full-pcpus":   {Name: "snn-full-pcpus", TopologyPolicy: "single-numa-node", FullPCPUsOnly: true},
}

const jlWorkloadLabel = "nodestate-e2e/judge-workload"

func jlPod(wl, sched string, i int, ctrs ...jlCtr) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", wl, i), Labels: map[string]string{jlWorkloadLabel: wl}},
		Spec: corev1.PodSpec{SchedulerName: sched, NodeSelector: map[string]string{jlWorkloadLabel: wl},
			TerminationGracePeriodSeconds: ptr.To[int64](0)}}
	for _, c := range ctrs {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(c.cpu), corev1.ResourceMemory: resource.MustParse(c.mem)}
		if c.gpus > 0 {
			rl[jlGPU] = *resource.NewQuantity(int64(c.gpus), resource.DecimalSI)
		}
		ctr := corev1.Container{Name: c.name, Image: "registry.example/train:1", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}
		switch {
		case c.sidecar:
			ctr.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
		case c.init:
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
		default:
			p.Spec.Containers = append(p.Spec.Containers, ctr)
		}
	}
	return p
}

// jlWorkloads are issue 45's workloads, each on its own nodes of one pool, pods drawn from
// fixed seeds (the same pods in the same order for every scheduler).
func jlWorkloads(sched string) []jlWorkload {
	gpuShapes := [][]jlCtr{
		{{name: "train", cpu: "4", mem: "16Gi", gpus: 1}},
		{{name: "train", cpu: "8", mem: "64Gi", gpus: 2}},
		{{name: "train", cpu: "12", mem: "96Gi", gpus: 3}},
		{{name: "train", cpu: "16", mem: "128Gi", gpus: 4}},
		{{name: "prep", cpu: "20", mem: "32Gi"}},
	}
	draw := func(name string, seed uint64, n int, shapes [][]jlCtr) []*corev1.Pod {
		rng := rand.New(rand.NewPCG(seed, 45))
		var out []*corev1.Pod
		for i := 0; i < n; i++ {
			out = append(out, jlPod(name, sched, i, shapes[rng.IntN(len(shapes))]...))
		}
		return out
	}
	var wls []jlWorkload
	for _, p := range []string{"single-numa-node", "restricted", "best-effort"} {
		name := "gpu-" + p
		wls = append(wls, jlWorkload{name: name, pool: jlPools[p], pods: draw(name, 1, 28, gpuShapes)})
	}
	wls = append(wls, jlWorkload{name: "smt-full-pcpus-only", pool: jlPools["snn-full-pcpus"], pods: draw("smt-full-pcpus-only", 2, 24, [][]jlCtr{
		{{name: "train", cpu: "3", mem: "16Gi", gpus: 1}},
		{{name: "train", cpu: "6", mem: "32Gi", gpus: 2}},
		{{name: "train", cpu: "5", mem: "24Gi", gpus: 1}},
		{{name: "train", cpu: "8", mem: "64Gi", gpus: 2}},
		{{name: "prep", cpu: "7", mem: "8Gi"}},
	})})
	wls = append(wls, jlWorkload{name: "sidecars", pool: jlPools["single-numa-node"], pods: draw("sidecars", 3, 24, [][]jlCtr{
		{{name: "proxy", cpu: "2", mem: "4Gi", sidecar: true}, {name: "train", cpu: "8", mem: "64Gi", gpus: 2}},
		{{name: "proxy", cpu: "2", mem: "4Gi", sidecar: true}, {name: "train", cpu: "12", mem: "96Gi", gpus: 3}},
		{{name: "loader", cpu: "2", mem: "8Gi", gpus: 1, sidecar: true}, {name: "train", cpu: "8", mem: "32Gi", gpus: 2}},
		{{name: "proxy", cpu: "1", mem: "2Gi", sidecar: true}, {name: "train", cpu: "4", mem: "16Gi", gpus: 1}},
	})})
	wls = append(wls, jlWorkload{name: "device-reuse", pool: jlPools["single-numa-node"], pods: draw("device-reuse", 4, 24, [][]jlCtr{
		{{name: "warmup", cpu: "4", mem: "8Gi", gpus: 4, init: true}, {name: "train", cpu: "8", mem: "64Gi", gpus: 2}},
		{{name: "warmup", cpu: "2", mem: "8Gi", gpus: 2, init: true}, {name: "train", cpu: "12", mem: "96Gi", gpus: 3}},
		{{name: "warmup", cpu: "2", mem: "4Gi", gpus: 1, init: true}, {name: "train", cpu: "4", mem: "16Gi", gpus: 1}, {name: "eval", cpu: "4", mem: "16Gi", gpus: 1}},
		{{name: "train", cpu: "8", mem: "64Gi", gpus: 2}},
	})})
	frag := jlWorkload{name: "fragmentation", pool: jlPools["single-numa-node"], pods: draw("fragmentation", 5, 48, gpuShapes), deleteBefore: map[int]bool{}}
	for i := 12; i < len(frag.pods); i++ {
		frag.deleteBefore[i] = true
	}
	wls = append(wls, frag)
	return wls
}

// jlReport is one workload's figures.
type jlReport struct {
	Workload       string         `json:"workload"`
	Pool           string         `json:"pool"`
	Scheduler      string         `json:"scheduler"`
	Nodes          int            `json:"nodes"`
	Pods           int            `json:"pods"`
	Bound          int            `json:"bound"`
	Refused        int            `json:"boundThenRefused"`
	RefusedPer1000 float64        `json:"refusedPer1000Binds"`
	Reasons        map[string]int `json:"refusals"`
	Deleted        int            `json:"deleted"`
	Pending        int            `json:"pending"`
	// PendingAdmittable: pending pods the kubelet would have admitted on some node of the
	// workload (false negatives), with those nodes.
	PendingAdmittable int                 `json:"pendingAdmittable"`
	FalseNegatives    map[string][]string `json:"falseNegatives,omitempty"`
	// PendingWhy: each pending pod's scheduler message and each node's kubelet verdict on it.
	PendingWhy map[string][]string `json:"pendingWhy,omitempty"`
	BindP50Ms  float64             `json:"bindP50Ms"`
	BindP95Ms  float64             `json:"bindP95Ms"`
	BindMaxMs  float64             `json:"bindMaxMs"`
	// ReplayAgrees counts the bindings where the plugin's replay on the published state
	// (PublishedNode.Admit) says what the real kubelet said, word for word; ReplayDiffers the others.
	ReplayAgrees  int      `json:"replayAgrees"`
	ReplayDiffers []string `json:"replayDiffers,omitempty"`
	Judgements    int      `json:"judgements"`
	JudgeMeanMs   float64  `json:"judgeMeanMs"`
}

// jlLoop is one workload's run.
type jlLoop struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	judge   *jlJudge
	nodes   map[string]*jlNode
	events  <-chan watch.Event
	created map[string]time.Time
	// bound: pods whose binding was judged; settled: pods bound or found unschedulable.
	bound, unschedulable map[string]bool
	bindTimes            []time.Duration
	report               *jlReport
	rng                  *rand.Rand
}

func runWorkload(t *testing.T, ctx context.Context, judge *jlJudge, wl jlWorkload, count int) *jlReport {
	calls, spent := judge.calls, judge.spent
	ns := NewNamespace(t, nil)
	l := &jlLoop{t: t, ctx: ctx, ns: ns, judge: judge, nodes: map[string]*jlNode{}, created: map[string]time.Time{},
		bound: map[string]bool{}, unschedulable: map[string]bool{}, rng: rand.New(rand.NewPCG(uint64(len(wl.name)), 45)),
		report: &jlReport{Workload: wl.name, Pool: wl.pool.Name, Nodes: count, Pods: len(wl.pods), Reasons: map[string]int{}, FalseNegatives: map[string][]string{}, PendingWhy: map[string][]string{}}}
	var names []string
	for i := 0; i < count; i++ {
		names = append(names, fmt.Sprintf("%sjl-%s-%d", PrefixPodsPending, wl.name, i))
	}
	// PodsPending: kwok leaves the pods as the loop sets them (the judge is their kubelet).
	created := CreateNodes(t, names, func(string) NodeOptions {
		return NodeOptions{Pods: PodsPending, Labels: map[string]string{jlWorkloadLabel: wl.name}}
	})
	for _, node := range created {
		capacity := jlAllocatable()
		capacity[corev1.ResourceCPU] = *resource.NewQuantity(int64(len(jlCPUs())), resource.DecimalSI)
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(jlSockets*jlNUMAMemory, resource.BinarySI)
		// The API server's TaintNodesByCondition taints a new node not-ready; the node lifecycle
		// controller, which would lift it once Ready, does not run here.
		node.Spec.Taints = nil
		node, err := cp.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, jlAllocatable()
		updated, err := cp.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := &jlNode{name: node.Name, labels: updated.Labels, pool: wl.pool, dir: filepath.Join(t.TempDir(), node.Name), uid: string(node.UID)}
		if err := n.init(); err != nil {
			t.Fatal(err)
		}
		// A started kubelet has written its checkpoints (the device manager's once the plugin
		// registered): its managers start once on the empty node and write them.
		v, err := judge.judge(ctx, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.advance(v.out, v.Checkpoints, v.StateAfter); err != nil {
			t.Fatal(err)
		}
		if err := n.publish(ctx); err != nil {
			t.Fatal(err)
		}
		n.replay = l.checkPublished(updated)
		l.nodes[node.Name] = n
	}
	// Watch the workload's pods from now on.
	list, err := cp.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cp.client.CoreV1().Pods(ns).Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	l.events = rw.ResultChan()

	for i, pod := range wl.pods {
		if wl.deleteBefore[i] {
			l.deleteOne()
		}
		pod = pod.DeepCopy()
		pod.Namespace = ns
		l.created[pod.Name] = time.Now()
		if _, err := cp.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		l.settle(pod.Name)
	}
	// Late bindings (pods retried after a deletion or a refusal): until 5 s without any.
	l.drain(5 * time.Second)
	l.falseNegatives()
	r := l.report
	if r.Bound > 0 {
		r.RefusedPer1000 = 1000 * float64(r.Refused) / float64(r.Bound)
	}
	slices.Sort(l.bindTimes)
	if k := len(l.bindTimes); k > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		r.BindP50Ms, r.BindP95Ms, r.BindMaxMs = ms(l.bindTimes[k/2]), ms(l.bindTimes[min(k-1, k*95/100)]), ms(l.bindTimes[k-1])
	}
	// Every pod is bound once (admitted or refused) or left pending; a best-effort kubelet never
	// refuses a pod for its topology.
	if r.Bound+r.Pending != r.Pods {
		t.Errorf("%d pods, %d bound and %d pending", r.Pods, r.Bound, r.Pending)
	}
	if wl.pool.TopologyPolicy == "best-effort" && r.Reasons["TopologyAffinityError"] > 0 {
		t.Errorf("a best-effort kubelet refused %d pods with TopologyAffinityError", r.Reasons["TopologyAffinityError"])
	}
	r.Judgements = judge.calls - calls
	if r.Judgements > 0 {
		r.JudgeMeanMs = float64((judge.spent - spent).Milliseconds()) / float64(r.Judgements)
	}
	// The workload's pods go: the scheduler stops retrying them.
	if err := cp.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Error(err)
	}
	// The filter's replay on the published state must say what the real kubelet said, binding
	// by binding (with the node's active pods: a deleted pod's GPUs stay in the device
	// checkpoint until the kubelet's next allocation frees them).
	for _, d := range r.ReplayDiffers {
		t.Errorf("replay differs: %s", d)
	}
	t.Logf("%s: %d pods, %d bound, %d bound then refused %v, %d pending (%d the kubelet would admit somewhere), %d deleted, bind p50 %.0f ms p95 %.0f ms, %d judgements of %.0f ms",
		r.Workload, r.Pods, r.Bound, r.Refused, r.Reasons, r.Pending, r.PendingAdmittable, r.Deleted, r.BindP50Ms, r.BindP95Ms, r.Judgements, r.JudgeMeanMs)
	return r
}

// checkPublished reads the node's ConfigMap back as the scheduler's filter does: the replay
// must be able to run on it.
func (l *jlLoop) checkPublished(node *corev1.Node) *pubstate.PublishedNode {
	cm, err := cp.client.CoreV1().ConfigMaps(pubstate.PublishedNamespace).Get(l.ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	s, err := pubstate.PublishedStateOf(cm)
	if err != nil {
		l.t.Fatal(err)
	}
	p := pubstate.PreparePublished(s, node, nil)
	if p.Err != nil {
		l.t.Fatalf("node %s: the published state cannot be replayed: %v (%v)", node.Name, p.Err, p.Notes)
	}
	return p
}

// replayAgrees compares the real kubelet's verdict with the plugin's replay (pkg/admit) on the
// node's published state, as the scheduler's filter would run it: what a filter built on that
// replay would let through.
func (l *jlLoop) replayAgrees(n *jlNode, pod *corev1.Pod, v *jlVerdict) {
	active := map[string]bool{}
	for _, p := range n.pods {
		active[string(p.UID)] = true
	}
	res, err := n.replay.AdmitAmong(active, []*corev1.Pod{pod})
	got := "not replayed"
	switch {
	case err != nil:
		got = "error: " + err.Error()
	case len(res.Admissions) == 0:
	case res.Admissions[len(res.Admissions)-1].Verdict == admit.VerdictNotJudged:
		got = "not judged: " + strings.Join(res.Admissions[len(res.Admissions)-1].NotJudged, "; ")
	case res.Admissions[len(res.Admissions)-1].Admitted:
		got = "admit"
	default:
		a := res.Admissions[len(res.Admissions)-1]
		got = a.Reason + ": " + a.Message
	}
	want := "admit"
	if !v.Admit {
		want = v.Reason + ": " + v.Message
	}
	if got == want {
		l.report.ReplayAgrees++
		return
	}
	l.report.ReplayDiffers = append(l.report.ReplayDiffers, fmt.Sprintf("%s on %s: kubelet %q, replay %q", pod.Name, n.name, want, got))
}

// settle handles the pod events until this pod is bound and judged, or unschedulable.
func (l *jlLoop) settle(name string) {
	timeout := time.After(2 * time.Minute)
	for !l.bound[name] && !l.unschedulable[name] {
		select {
		case ev, ok := <-l.events:
			if !ok {
				l.t.Fatal("the pod watch ended")
			}
			l.handle(ev)
		case <-timeout:
			l.t.Fatalf("pod %s neither bound nor unschedulable after 2 min", name)
		}
	}
}

// drain handles events until quiet passes without one.
func (l *jlLoop) drain(quiet time.Duration) {
	for {
		select {
		case ev, ok := <-l.events:
			if !ok {
				return
			}
			l.handle(ev)
		case <-time.After(quiet):
			return
		}
	}
}

func (l *jlLoop) handle(ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok || ev.Type == watch.Deleted {
		return
	}
	if pod.Spec.NodeName == "" {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				l.unschedulable[pod.Name] = true
			}
		}
		return
	}
	if l.bound[pod.Name] {
		return
	}
	l.bound[pod.Name] = true
	delete(l.unschedulable, pod.Name)
	l.bindTimes = append(l.bindTimes, time.Since(l.created[pod.Name]))
	l.report.Bound++
	n := l.nodes[pod.Spec.NodeName]
	if n == nil {
		l.t.Fatalf("pod %s bound to %s, not a node of the workload", pod.Name, pod.Spec.NodeName)
	}
	v, err := l.judge.judge(l.ctx, n, pod)
	if err != nil {
		l.t.Fatal(err)
	}
	l.replayAgrees(n, pod, v)
	if v.Admit {
		n.pods = append(n.pods, pod)
		if err := n.advance(v.out, v.Checkpoints, v.StateAfter); err != nil {
			l.t.Fatal(err)
		}
		if err := n.publish(l.ctx); err != nil {
			l.t.Fatal(err)
		}
		l.checkHeld(n)
		return
	}
	// Bound then refused: the kubelet's rejectPod, then the pod is deleted.
	reason := v.Reason
	if v.Hangs {
		reason = "admission hangs"
	}
	l.report.Refused++
	l.report.Reasons[reason]++
	pod = pod.DeepCopy()
	pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, v.Reason, "Pod was rejected: "+v.Message
	if _, err := cp.client.CoreV1().Pods(l.ns).UpdateStatus(l.ctx, pod, metav1.UpdateOptions{}); err != nil {
		l.t.Fatal(err)
	}
	if err := cp.client.CoreV1().Pods(l.ns).Delete(l.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		l.t.Fatal(err)
	}
}

// deleteOne deletes an admitted pod drawn at random; its node's kubelet then drops what it held
// (the managers' removeStaleState, through the judge's garbage collection) and republishes.
func (l *jlLoop) deleteOne() {
	type held struct {
		node *jlNode
		i    int
	}
	var all []held
	for _, name := range jlSortedNodeNames(l.nodes) {
		for i := range l.nodes[name].pods {
			all = append(all, held{l.nodes[name], i})
		}
	}
	if len(all) == 0 {
		return
	}
	h := all[l.rng.IntN(len(all))]
	pod := h.node.pods[h.i]
	if err := cp.client.CoreV1().Pods(l.ns).Delete(l.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		l.t.Fatal(err)
	}
	h.node.pods = slices.Delete(h.node.pods, h.i, h.i+1)
	if err := h.node.writeNodeFile(); err != nil {
		l.t.Fatal(err)
	}
	v, err := l.judge.judge(l.ctx, h.node, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := h.node.advance(v.out, v.Checkpoints, v.StateAfter); err != nil {
		l.t.Fatal(err)
	}
	if err := h.node.publish(l.ctx); err != nil {
		l.t.Fatal(err)
	}
	l.checkHeld(h.node)
	l.report.Deleted++
}

// falseNegatives judges every pod still pending on every node of the workload (nothing
// advances): a node whose kubelet would admit it is one the scheduler filtered out wrongly.
func (l *jlLoop) falseNegatives() {
	pods, err := cp.client.CoreV1().Pods(l.ns).List(l.ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		l.report.Pending++
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				l.report.PendingWhy[pod.Name] = append(l.report.PendingWhy[pod.Name], "scheduler: "+c.Reason+": "+c.Message)
			}
		}
		for _, name := range jlSortedNodeNames(l.nodes) {
			v, err := l.judge.judge(l.ctx, l.nodes[name], pod)
			if err != nil {
				l.t.Fatal(err)
			}
			verdict := "admit"
			if !v.Admit {
				verdict = v.Reason + ": " + v.Message
			}
			l.report.PendingWhy[pod.Name] = append(l.report.PendingWhy[pod.Name], name+": "+verdict)
			if v.Admit {
				l.report.FalseNegatives[pod.Name] = append(l.report.FalseNegatives[pod.Name], name)
			}
		}
		if len(l.report.FalseNegatives[pod.Name]) > 0 {
			l.report.PendingAdmittable++
		}
	}
}

// checkHeld holds the node's published objects to what the scheduler counts: the GPUs the
// real device manager holds are the pods' effective requests (init containers' reused by the
// apps, sidecars' added), and the published state can be replayed.
func (l *jlLoop) checkHeld(n *jlNode) {
	want := int64(0)
	for _, p := range n.pods {
		q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[jlGPU]
		want += q.Value()
	}
	zones, err := n.zones()
	if err != nil {
		l.t.Fatal(err)
	}
	held := int64(0)
	for _, z := range zones {
		for _, r := range z.(map[string]any)["resources"].([]any) {
			if r := r.(map[string]any); r["name"] == jlGPU {
				var avail int64
				fmt.Sscan(r["available"].(string), &avail)
				held += jlGPUsPerNUMA - avail
			}
		}
	}
	if held != want {
		l.t.Errorf("node %s: the device manager holds %d GPUs, its pods request %d", n.name, held, want)
	}
	node, err := cp.client.CoreV1().Nodes().Get(l.ctx, n.name, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	n.replay = l.checkPublished(node)
}
