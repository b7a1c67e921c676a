//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// The bench's node states: examples/admit-node's machine (2 NUMA nodes of 8 cores x 2 threads,
// CPUs 0 and 16 reserved on NUMA node 0, full-pcpus-only, memory manager Static) under
// single-numa-node, pod scope; half the nodes with the example's checkpoints (a pod holding
// CPUs 1,17 on NUMA node 0; no such pod runs here, so the replay frees them as the kubelet's
// removeStaleState would), half fresh. Either way only NUMA node 1 has 16 free CPUs: a node
// holding one 16-CPU pod refuses the next.
const (
	sbStateLabel = "nodestate-e2e/sched-bench-state"
	sbLoaded     = "loaded"
	sbFresh      = "fresh"
	sbWideCPUs   = 16
)

// sbScheduler is one scheduler the bench runs: its binary, the schedulerName its pods carry,
// and its KubeSchedulerConfiguration (a shipped file, or nil: one default profile).
type sbScheduler struct {
	name, bin, schedulerName string
	config                   string
}

// sbResult is one scheduler's run on one cluster size.
type sbResult struct {
	nodes, pods, bound int
	wall               time.Duration // first create to last bind
	cpu                time.Duration // the scheduler's user+system CPU over that span
	// From its /metrics: the Filter extension point per scheduling cycle (every filter plugin,
	// every node it filtered), and NodeStateAdmission's Filter per call (one node, one pod; the
	// framework samples 10% of cycles for per-plugin figures).
	filterPhase, pluginFilter histogram
	pluginRefused             float64 // NodeStateAdmission Filter calls that failed the node (sampled)
	pluginEvaluations         float64 // NodeStateAdmission Filter calls, every cycle (scheduler_plugin_evaluation_total)
	attempts                  map[string]float64
	// createSpan: first create to last create (the pods come faster than they bind).
	createSpan time.Duration
	// wideTwice: nodes bound two or more 16-CPU pods, which their kubelet refuses.
	wideTwice int
}

func (r sbResult) podsPerSecond() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.bound) / r.wall.Seconds()
}

// histogram is a Prometheus histogram's sum and count.
type histogram struct{ sum, count float64 }

func (h histogram) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(h.sum / h.count * float64(time.Second))
}

func (h histogram) minus(o histogram) histogram { return histogram{h.sum - o.sum, h.count - o.count} }

// TestBenchScheduler is `make bench-scheduler` (issue 45's cost): on N kwok nodes, each with a
// published state ConfigMap, the same M Guaranteed pods are scheduled by the stock
// kube-scheduler, then by the nodestate-scheduler (deploy/scheduler's profile), one after the
// other on the same nodes, for each N in one run. Prints per scheduler and size one BENCH line
// (pods/s from the first create to the last bind, the scheduler's CPU seconds, the Filter
// extension point's time per pod, NodeStateAdmission's Filter time per node per pod) and one
// with the ratios.
//
// Environment:
//
//	NODESTATE_BENCH_SCHED_NODES="1000 10000"  the sizes (nodes added to reach each); 0 skips
//	NODESTATE_BENCH_SCHED_PODS=500            pods per scheduler and size
//	NODESTATE_BENCH_SCHED_QPS=500             both schedulers' client QPS (burst twice that): the
//	                                          default 50 would cap both at the same binding rate
//	NODESTATE_BENCH_SCHED_PROFILE=DIR         each scheduler's CPU profile (20 s from its first pod) as DIR/NAME-N.pprof
//	NODESTATE_BENCH_SCHED_STOCK=BIN           the stock kube-scheduler (default: the tools')
//	NODESTATE_SCHEDULER=BIN                   the nodestate-scheduler (make bench-scheduler: this tree's build)
func TestBenchScheduler(t *testing.T) {
	sizes := envInts(t, "NODESTATE_BENCH_SCHED_NODES", "0")
	if sizes[0] == 0 {
		t.Skip("set NODESTATE_BENCH_SCHED_NODES (make bench-scheduler)")
	}
	podCount := envInts(t, "NODESTATE_BENCH_SCHED_PODS", "500")[0]
	qps := envInts(t, "NODESTATE_BENCH_SCHED_QPS", "500")[0]
	schedulers := []sbScheduler{
		{name: "stock", bin: orEnv("NODESTATE_BENCH_SCHED_STOCK", filepath.Join(ToolsBin(), "kube-scheduler")), schedulerName: corev1.DefaultSchedulerName},
		{name: "nodestate", bin: schedulerBin(t), schedulerName: "nodestate-scheduler",
			config: filepath.Join(cp.repoRoot, "deploy", "scheduler", "scheduler-config.yaml")},
	}
	ctx := ctxFor(t, 3*time.Hour)
	if _, err := Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodestatelib.PublishedNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).DeleteCollection(ctxFor(t, 5*time.Minute), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: nodestatelib.PublishedLabel})
	})
	example := publishedtest.Example{Root: cp.repoRoot}
	now := time.Now()
	templates := map[string]*nodestatelib.PublishedState{
		sbLoaded: example.State(t, "template", true, "single-numa-node", now),
		sbFresh:  example.State(t, "template", false, "single-numa-node", now),
	}
	kubeletDir := t.TempDir() // no exec here: one empty dir for every node
	names := numberedNodes("sbench", sizes[len(sizes)-1])
	stateOf := func(i int) string {
		if i%2 == 0 {
			return sbLoaded
		}
		return sbFresh
	}
	pods := sbPods(t, podCount)
	have := 0
	for _, n := range sizes {
		if n <= have {
			continue
		}
		start := time.Now()
		CreateNodes(t, names[have:n], func(name string) NodeOptions {
			var i int
			fmt.Sscanf(strings.TrimPrefix(name, "sbench-"), "%d", &i)
			return NodeOptions{KubeletDir: kubeletDir, Labels: map[string]string{sbStateLabel: stateOf(i)}}
		})
		var g errgroup.Group
		g.SetLimit(16)
		for i := have; i < n; i++ {
			// Encoded here (publishedtest fails the test, which only this goroutine may do), created
			// concurrently.
			s := *templates[stateOf(i)]
			s.Node, s.ReadAt = names[i], time.Now().UTC().Truncate(time.Second)
			cm := publishedtest.ConfigMap(t, &s, nodestatelib.PublishedNamespace)
			g.Go(func() error {
				_, err := Client().CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d nodes and their published states (%d new) in %s", n, n-have, time.Since(start).Round(time.Second))
		sbSettle(t)
		have = n
		results := map[string]sbResult{}
		for _, s := range schedulers {
			r := sbRun(t, ctx, s, qps, pods, n)
			results[s.name] = r
			line := fmt.Sprintf("sched %-9s nodes=%d pods=%d bound=%d wall=%.2fs pods_per_s=%.1f cpu=%.2fs cpu_per_pod_ms=%.1f filter_phase_per_pod_ms=%.2f (%0.f cycles) create_span=%.2fs wide_twice=%d attempts=%v",
				s.name, n, r.pods, r.bound, r.wall.Seconds(), r.podsPerSecond(), r.cpu.Seconds(), float64(r.cpu.Microseconds())/1000/float64(max(r.bound, 1)),
				float64(r.filterPhase.mean().Microseconds())/1000, r.filterPhase.count, r.createSpan.Seconds(), r.wideTwice, r.attempts)
			if r.pluginFilter.count > 0 {
				line += fmt.Sprintf(" nodestate_filter_per_node_us=%.0f (%.0f sampled calls, %.0f failed the node) nodestate_filter_calls_per_pod=%.0f",
					float64(r.pluginFilter.mean().Nanoseconds())/1000, r.pluginFilter.count, r.pluginRefused, r.pluginEvaluations/float64(max(r.bound, 1)))
			}
			fmt.Fprintln(os.Stdout, "BENCH "+line)
			t.Log(line)
			if r.bound != r.pods {
				t.Errorf("%s at %d nodes: %d of %d pods bound", s.name, n, r.bound, r.pods)
			}
		}
		stock, ours := results["stock"], results["nodestate"]
		// The plugin must have judged (sampled Filter calls there) and kept a second 16-CPU pod
		// off every node, whose kubelet refuses it.
		if ours.pluginFilter.count == 0 {
			t.Errorf("at %d nodes: no NodeStateAdmission Filter call in the nodestate-scheduler's metrics", n)
		}
		if ours.wideTwice > 0 {
			t.Errorf("at %d nodes: the nodestate-scheduler bound two 16-CPU pods to each of %d nodes, whose kubelet refuses the second", n, ours.wideTwice)
		}
		ratio := func(a, b float64) string {
			if b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.3f", a/b)
		}
		// What the plugin adds, per Filter call: the scheduler's CPU beyond the stock one's, over
		// every NodeStateAdmission Filter call (the other plugins' work being the same).
		extra := "-"
		if ours.pluginEvaluations > 0 {
			extra = fmt.Sprintf("%.0f", float64((ours.cpu-stock.cpu).Microseconds())/ours.pluginEvaluations)
		}
		line := fmt.Sprintf("sched ratio     nodes=%d pods_per_s=%s cpu=%s filter_phase_per_pod=%s (nodestate/stock) extra_cpu_per_filter_call_us=%s",
			n, ratio(ours.podsPerSecond(), stock.podsPerSecond()), ratio(ours.cpu.Seconds(), stock.cpu.Seconds()),
			ratio(ours.filterPhase.mean().Seconds(), stock.filterPhase.mean().Seconds()), extra)
		fmt.Fprintln(os.Stdout, "BENCH "+line)
		t.Log(line)
	}
}

// sbPods are the bench's pods, drawn from a fixed seed (the same pods in the same order for
// every scheduler and size): Guaranteed, one container, CPUs in whole cores (full-pcpus-only),
// a fifth of them 16-CPU pods (one NUMA node's worth: one a node).
func sbPods(t *testing.T, n int) []*corev1.Pod {
	shapes := []struct {
		cpu, mem string
		weight   int
	}{{"2", "4Gi", 35}, {"4", "8Gi", 25}, {"8", "8Gi", 20}, {strconv.Itoa(sbWideCPUs), "16Gi", 20}}
	rng := rand.New(rand.NewPCG(45, 1))
	var pods []*corev1.Pod
	for i := range n {
		pick := rng.IntN(100)
		s := shapes[0]
		for _, c := range shapes {
			if pick < c.weight {
				s = c
				break
			}
			pick -= c.weight
		}
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse(s.mem)}
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sb-%04d-%scpu", i, s.cpu)},
			Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{TestLabel: TestID(t)},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				// No node lifecycle controller lifts the not-ready taint the API server puts on a new node.
				Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}}}})
	}
	return pods
}

// sbConfig writes the scheduler's KubeSchedulerConfiguration for the harness: the shipped
// profile (or one default profile), the harness's kubeconfig at the given QPS, no leader
// election.
func sbConfig(t *testing.T, s sbScheduler, qps int) string {
	t.Helper()
	config := map[string]any{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
		"profiles": []any{map[string]any{"schedulerName": s.schedulerName}}}
	if s.config != "" {
		raw, err := os.ReadFile(s.config)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &config); err != nil {
			t.Fatal(err)
		}
	}
	config["clientConnection"] = map[string]any{"kubeconfig": Kubeconfig(), "qps": qps, "burst": 2 * qps}
	// The states are published once, before the first size: NodeStateAdmission's maxAge (10m in
	// the profile) would turn them stale during a long run, and a stale state is the fallback's,
	// not judged. Everything else is the shipped profile.
	for _, p := range config["profiles"].([]any) {
		pc, _ := p.(map[string]any)["pluginConfig"].([]any)
		for _, c := range pc {
			if c := c.(map[string]any); c["name"] == "NodeStateAdmission" {
				c["args"].(map[string]any)["maxAge"] = "6h"
			}
		}
	}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), s.name+"-scheduler-config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sbRun starts the scheduler, creates the pods in a namespace of their own, waits for every
// binding, and measures; then stops the scheduler and deletes the pods.
func sbRun(t *testing.T, ctx context.Context, s sbScheduler, qps int, pods []*corev1.Pod, nodes int) sbResult {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	procName := fmt.Sprintf("bench-scheduler-%s-%d", s.name, nodes)
	p, err := cp.start(procName, s.bin, "--config="+sbConfig(t, s, qps), "--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]), "--cert-dir="+t.TempDir(),
		// Its metrics and profiles over loopback without a token (no delegated authorization here).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(10 * time.Second)
	// Its own self-signed serving certificate, on loopback.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path string) (string, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return string(b), err
	}
	if err := waitFor(p, 5*time.Minute, func() bool { body, err := get("/readyz"); return err == nil && body == "ok" }); err != nil {
		t.Fatal(err)
	}
	scrape := func() schedMetrics {
		body, err := get("/metrics")
		if err != nil {
			t.Fatalf("%s's metrics: %v", s.name, err)
		}
		return parseSchedMetrics(body)
	}
	ns := NewNamespace(t, nil)
	list, err := Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A retry watcher: a plain watch may end (the API server's request timeout) before the last bind.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return Client().CoreV1().Pods(ns).Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wide := map[string]bool{}
	for _, pod := range pods {
		if pod.Spec.Containers[0].Resources.Requests.Cpu().Value() == sbWideCPUs {
			wide[pod.Name] = true
		}
	}
	// The pods come from a client of their own, fast enough not to be what is measured.
	rc := RESTConfig()
	rc.QPS, rc.Burst = 2000, 4000
	creator, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	widePerNode := map[string]int{}

	before := scrape()
	cpuBefore := controlPlaneCPU(t, procName)
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(32)
	var lastCreate time.Time
	var createMu sync.Mutex
	for _, pod := range pods {
		pod = pod.DeepCopy()
		pod.Namespace, pod.Spec.SchedulerName = ns, s.schedulerName
		g.Go(func() error {
			_, err := creator.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			createMu.Lock()
			lastCreate = time.Now()
			createMu.Unlock()
			return err
		})
	}
	// A CPU profile of the scheduler while it schedules them, for where its time goes.
	profiled := make(chan struct{})
	if dir := os.Getenv("NODESTATE_BENCH_SCHED_PROFILE"); dir != "" {
		go func() {
			defer close(profiled)
			body, err := get("/debug/pprof/profile?seconds=20")
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", s.name, nodes)), []byte(body), 0o644)
			}
			if err != nil {
				t.Errorf("%s's CPU profile: %v", s.name, err)
			}
		}()
	} else {
		close(profiled)
	}
	r := sbResult{nodes: nodes, pods: len(pods)}
	bound := map[string]bool{}
	var lastBind time.Time
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		timeout := time.After(15 * time.Minute)
		for len(bound) < len(pods) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod || ev.Type == watch.Deleted || pod.Spec.NodeName == "" || bound[pod.Name] {
					continue
				}
				mu.Lock()
				bound[pod.Name], lastBind = true, time.Now()
				if wide[pod.Name] {
					if widePerNode[pod.Spec.NodeName]++; widePerNode[pod.Spec.NodeName] == 2 {
						r.wideTwice++
					}
				}
				mu.Unlock()
			case <-timeout:
				return
			}
		}
	}()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	<-done
	cpuAfter := controlPlaneCPU(t, procName)
	after := scrape()
	<-profiled
	mu.Lock()
	r.bound, r.wall, r.cpu, r.createSpan = len(bound), lastBind.Sub(start), cpuAfter-cpuBefore, lastCreate.Sub(start)
	mu.Unlock()
	r.filterPhase = after.filterPhase.minus(before.filterPhase)
	r.pluginFilter = after.nodestateFilter.minus(before.nodestateFilter)
	r.pluginRefused = after.nodestateRefused - before.nodestateRefused
	r.pluginEvaluations = after.nodestateEvaluations - before.nodestateEvaluations
	r.attempts = map[string]float64{}
	for k, v := range after.attempts {
		r.attempts[k] = v - before.attempts[k]
	}
	p.stop(10 * time.Second)
	// The next run starts from the same nodes: these pods go, and are gone before it starts.
	if err := Client().CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		left, err := Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(left.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods of %s left after 5 min", len(left.Items), ns)
		}
	}
	return r
}

// schedMetrics are the figures the bench reads from a kube-scheduler's /metrics.
type schedMetrics struct {
	filterPhase, nodestateFilter histogram
	nodestateRefused             float64
	nodestateEvaluations         float64
	attempts                     map[string]float64
}

// parseSchedMetrics reads the text exposition: scheduler_framework_extension_point_duration_seconds
// for extension_point Filter (every profile), scheduler_plugin_execution_duration_seconds for
// NodeStateAdmission's Filter (every status; the count of those not Success),
// scheduler_plugin_evaluation_total for its Filter, and scheduler_schedule_attempts_total by result.
func parseSchedMetrics(body string) schedMetrics {
	m := schedMetrics{attempts: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader([]byte(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if strings.HasPrefix(line, "#") || open < 0 || end < open {
			continue
		}
		name := line[:open]
		labels := map[string]string{}
		for _, l := range metricLabelRE.FindAllStringSubmatch(line[open:end], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		filter := labels["extension_point"] == "Filter"
		ours := filter && labels["plugin"] == "NodeStateAdmission"
		switch {
		case name == "scheduler_framework_extension_point_duration_seconds_sum" && filter:
			m.filterPhase.sum += v
		case name == "scheduler_framework_extension_point_duration_seconds_count" && filter:
			m.filterPhase.count += v
		case name == "scheduler_plugin_execution_duration_seconds_sum" && ours:
			m.nodestateFilter.sum += v
		case name == "scheduler_plugin_execution_duration_seconds_count" && ours:
			m.nodestateFilter.count += v
			if labels["status"] != "Success" {
				m.nodestateRefused += v
			}
		case name == "scheduler_plugin_evaluation_total" && ours:
			m.nodestateEvaluations += v
		case name == "scheduler_schedule_attempts_total":
			m.attempts[labels["result"]] += v
		}
	}
	return m
}

// sbSettle waits, up to 3 minutes, for the control plane to be done with the new nodes (their
// Ready updates, kwok's first leases): etcd, kube-apiserver and kwok together under one core
// over 5 s. Otherwise the first scheduler's pods are created, and bound, in their wake.
func sbSettle(t *testing.T) {
	t.Helper()
	start := time.Now()
	for {
		before := controlPlaneCPU(t, "etcd", "kube-apiserver", "kwok")
		time.Sleep(5 * time.Second)
		used := controlPlaneCPU(t, "etcd", "kube-apiserver", "kwok") - before
		if used < 5*time.Second || time.Since(start) > 3*time.Minute {
			t.Logf("control plane at %.2f cores after %s", used.Seconds()/5, time.Since(start).Round(time.Second))
			return
		}
	}
}
