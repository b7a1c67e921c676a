//go:build e2e

package e2e

// `make bench-scale`: the plugin's `verify --all-nodes` against the floor program
// (test/e2e/floor) on the same simulated nodes, side by side in one run, in both orders
// (plugin, floor, floor, plugin), at each size of NODESTATE_BENCH_SIZES. Per size it prints
//
//	nodes=N nodestate=Xs floor=Ys ratio=X/Y baseline_extrapolated=Zs speedup=Z/X rss=MiB requests_per_node=R
//
// nodestate and floor are the means of their two runs; rss is the plugin's peak RSS (VmHWM,
// what /usr/bin/time -v reports as maximum resident set size); requests_per_node is the plugin's share
// of the API server's apiserver_request_total (see requestCount); baseline_extrapolated is a
// `kubectl run` + `wait` + `exec` + `delete` loop over a few nodes, scaled to N.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

var metricLabelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requestCount sums apiserver_request_total over what the plugin does: pods, nodes and events
// (core group, no subresource; events for the shared Warning-event watch), pods/exec, and
// resourceclaims (doctor gets those a node's DRA checkpoint prepared). The harness's own requests of those kinds (the exec
// mapper's probe exec, patch and relists) are counted on its client and subtracted by the
// caller; kwok only writes pods/status and node status, which are not counted.
func requestCount(t testing.TB) (total int64, byVerb map[string]int64) {
	t.Helper()
	b, err := cp.client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctxFor(t, 30*time.Second))
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	byVerb = map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		labels := map[string]string{}
		for _, m := range metricLabelRE.FindAllStringSubmatch(line[:end], -1) {
			labels[m[1]] = m[2]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		res, sub := labels["resource"], labels["subresource"]
		core := labels["group"] == "" && (res == "pods" || res == "nodes" || res == "events")
		claims := labels["group"] == "resource.k8s.io" && res == "resourceclaims"
		if !(core || claims) || (sub != "" && !(res == "pods" && sub == "exec")) {
			continue
		}
		total += int64(v)
		key := labels["verb"] + " " + res
		if sub != "" {
			key += "/" + sub
		}
		byVerb[key] += int64(v)
	}
	return total, byVerb
}

// benchRun is one measured run of a program.
type benchRun struct {
	wall   time.Duration
	rssKiB int64
	// Peaks of the two parts of RSS, sampled: the program's own memory (RssAnon) and the pages
	// of its binary (RssFile, shared and clean; all of a large binary on a kernel that maps
	// file pages in 2 MiB folios).
	anonKiB, fileKiB int64
	// cpu is the program's own CPU time (user and system): what it costs the machine, which
	// the shared machine's load does not change as much as the wall time.
	cpu time.Duration
	// clusterCPU is what the control plane (etcd, kube-apiserver, kwok and the execs' commands
	// it runs) spent from the program's start until its debug pods were gone.
	clusterCPU     time.Duration
	requests       int64            // API server's count minus the harness's
	byVerb         map[string]int64 // API server's count (harness included), by verb and resource
	stdout, stderr string
}

// benchRunTimeout bounds one measured run.
var benchRunTimeout = 20 * time.Minute

// measure runs bin with args and measures its wall time, its peak RSS and the API requests
// made meanwhile (after every debug pod of ns is gone).
func measure(t *testing.T, ns string, bin string, args ...string) benchRun {
	t.Helper()
	return measureExit(t, ns, []int{0}, bin, args...)
}

// measureExit is measure for a program whose exit status may be any of okExit (doctor and admit
// exit 1 when the kubelet would not start).
func measureExit(t *testing.T, ns string, okExit []int, bin string, args ...string) benchRun {
	t.Helper()
	before, verbsBefore := requestCount(t)
	harnessBefore := harnessRequests.Load()
	partsBefore := controlPlaneParts(t)
	ctx, cancel := context.WithTimeout(context.Background(), benchRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = Env(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Peak RSS: the kernel's high-water mark of the program's own memory (VmHWM), read until
	// it exits. (The child's ru_maxrss would not do: it starts from this test binary's RSS,
	// which the child shares between fork and exec.)
	hwm := make(chan [3]int64)
	stop := make(chan struct{})
	go func() {
		var peak [3]int64 // VmHWM, RssAnon, RssFile
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for i, v := range procStatus(cmd.Process.Pid, "VmHWM:", "RssAnon:", "RssFile:") {
				peak[i] = max(peak[i], v)
			}
			select {
			case <-stop:
				hwm <- peak
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	r := benchRun{wall: time.Since(start), stdout: stdout.String()}
	if st := cmd.ProcessState; st != nil {
		r.cpu = st.UserTime() + st.SystemTime()
	}
	close(stop)
	peak := <-hwm
	r.rssKiB, r.anonKiB, r.fileKiB = peak[0], peak[1], peak[2]
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && slices.Contains(okExit, exitErr.ExitCode()) {
		err = nil
	}
	r.stderr = stderr.String()
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, tailLines(stderr.String(), 20))
	}
	WaitNoManagedPods(t, ns, 2*time.Minute)
	time.Sleep(time.Second) // let the API server record the requests that ended with the process (watches, execs)
	var partsText []string
	for _, p := range controlPlaneParts(t).since(partsBefore) {
		r.clusterCPU += p.cpu
		partsText = append(partsText, fmt.Sprintf("%s %s", p.name, p.cpu.Round(10*time.Millisecond)))
	}
	after, verbsAfter := requestCount(t)
	r.requests = after - before - (harnessRequests.Load() - harnessBefore)
	r.byVerb = map[string]int64{}
	for k, v := range verbsAfter {
		if d := v - verbsBefore[k]; d != 0 {
			r.byVerb[k] = d
		}
	}
	if n := strings.Count(stderr.String(), "warning:"); n > 0 {
		t.Errorf("%s: %d warnings, e.g.: %s", filepath.Base(bin), n, tailLines(stderr.String(), 3))
	}
	t.Logf("ran %s %s: %s, CPU %s own + %s control plane (%s), peak RSS %.1f MiB (anon %.1f, file %.1f), %d requests (API server by verb, harness included: %v)",
		filepath.Base(bin), strings.Join(args, " "), r.wall.Round(time.Millisecond), r.cpu.Round(10*time.Millisecond), r.clusterCPU.Round(10*time.Millisecond), strings.Join(partsText, ", "), float64(r.rssKiB)/1024,
		float64(r.anonKiB)/1024, float64(r.fileKiB)/1024, r.requests, r.byVerb)
	return r
}

// controlPlaneCPU is the CPU time (user and system) the named control-plane processes (all of
// them when none is named) have used so far, with their children's that they waited for: kwok
// runs each exec's command as its child, so what a node's script costs is in kwok's.
func controlPlaneCPU(t testing.TB, names ...string) time.Duration {
	t.Helper()
	cp.mu.Lock()
	var pids []int
	for _, p := range cp.procs {
		if len(names) == 0 || slices.Contains(names, p.name) {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	cp.mu.Unlock()
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the command name (which ends with ')'): utime, stime, cutime and cstime
		// are the 12th to the 15th.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// cpuParts is controlPlaneCPU of each control-plane process, by name.
type cpuParts map[string]time.Duration

// controlPlaneParts is what each control-plane process has used so far (controlPlaneCPU).
func controlPlaneParts(t testing.TB) cpuParts {
	t.Helper()
	cp.mu.Lock()
	var names []string
	for _, p := range cp.procs {
		names = append(names, p.name)
	}
	cp.mu.Unlock()
	parts := cpuParts{}
	for _, name := range names {
		parts[name] = controlPlaneCPU(t, name)
	}
	return parts
}

// cpuPart is one process's CPU over a span.
type cpuPart struct {
	name string
	cpu  time.Duration
}

// since is what each process used after before, by name.
func (now cpuParts) since(before cpuParts) []cpuPart {
	var out []cpuPart
	for _, name := range slices.Sorted(maps.Keys(now)) {
		out = append(out, cpuPart{name, now[name] - before[name]})
	}
	return out
}

// procStatus reads the named fields (e.g. "VmHWM:") of /proc/PID/status in KiB, 0 for each
// once the process is gone.
func procStatus(pid int, names ...string) []int64 {
	out := make([]int64, len(names))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		for i, name := range names {
			if v, ok := strings.CutPrefix(line, name); ok {
				out[i], _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	return out
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func envInts(t *testing.T, name, def string) []int {
	s := os.Getenv(name)
	if s == "" {
		s = def
	}
	var out []int
	for _, f := range strings.Fields(strings.ReplaceAll(s, ",", " ")) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			t.Fatalf("%s: %q is not a number ≥ 0", name, f)
		}
		out = append(out, n)
	}
	return out
}

// TestBenchScale is `make bench-scale`. Environment:
//
//	NODESTATE_BENCH_SIZES           node counts, e.g. "100 300 1000" (unset: skip)
//	NODESTATE_BENCH_CONCURRENCY     --concurrency for both, or a list to compare (default: the plugin's default)
//	NODESTATE_BENCH_ARGS            extra plugin arguments, e.g. "-o json"
//	NODESTATE_BENCH_BASELINE_NODES  nodes the kubectl loop reads (default 5)
//	NODESTATE_BENCH_FLOOR=0         skip the floor (memory-only runs)
func TestBenchScale(t *testing.T) {
	if os.Getenv("NODESTATE_BENCH_SIZES") == "" {
		t.Skip("set NODESTATE_BENCH_SIZES (make bench-scale)")
	}
	sizes := envInts(t, "NODESTATE_BENCH_SIZES", "")
	slices.Sort(sizes)
	concurrencies := envInts(t, "NODESTATE_BENCH_CONCURRENCY", strconv.Itoa(cmdutil.DefaultConcurrency))
	baselineNodes := envInts(t, "NODESTATE_BENCH_BASELINE_NODES", "5")[0]
	withFloor := os.Getenv("NODESTATE_BENCH_FLOOR") != "0"
	extra := strings.Fields(os.Getenv("NODESTATE_BENCH_ARGS"))

	dir := KubeletDir(t, repoDirFiles(t, "examples/kubelet-root"))
	names := createSizedNodes(t, "bench", sizes, dir)

	var floor string
	if withFloor {
		floor = buildFloor(t)
	}
	plugin := PluginBin(t)
	ns := NewNamespace(t, nil)

	// The kubectl loop, once: its cost per node is what a user without the plugin pays.
	var perNode time.Duration
	var baselineReq float64
	if baselineNodes > 0 {
		perNode, baselineReq = kubectlLoop(t, ns, names[:min(baselineNodes, len(names))])
	}

	for _, size := range sizes {
		for _, concurrency := range concurrencies {
			benchSize(t, ns, plugin, floor, size, concurrency, len(concurrencies) > 1, withFloor, extra, perNode, baselineReq)
		}
	}
}

// benchSize measures the plugin and the floor on the first size nodes, in both orders, and
// prints the figures.
func benchSize(t *testing.T, ns, plugin, floor string, size, concurrency int, showConcurrency, withFloor bool, extra []string, perNode time.Duration, baselineReq float64) {
	{
		sel := TestSelector(t) + "," + sizeLabel(size) + "=true"
		pluginArgs := append([]string{"verify", "--all-nodes", "-l", sel, "-n", ns, "--concurrency", strconv.Itoa(concurrency)}, extra...)
		floorArgs := []string{"-kubeconfig", Kubeconfig(), "-n", ns, "-l", sel, "-concurrency", strconv.Itoa(concurrency)}
		var plugins, floors []benchRun
		plugins = append(plugins, measure(t, ns, plugin, pluginArgs...))
		if withFloor {
			floors = append(floors, measure(t, ns, floor, floorArgs...), measure(t, ns, floor, floorArgs...))
		}
		plugins = append(plugins, measure(t, ns, plugin, pluginArgs...))
		for _, r := range plugins {
			checkPluginOutput(t, r.stdout, size, extra)
		}
		for _, r := range floors {
			t.Logf("floor says: %s (server-side attribution: %d requests)", strings.TrimSpace(r.stdout), r.requests)
		}

		// What the API server counts beyond the program's own requests (kwok deletes each pod
		// once more after the program's grace-0 delete): the floor's server-side count minus
		// the count its client reports. Taken out of the plugin's count.
		var env float64
		for _, r := range floors {
			var own int64
			if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "requests="):], "requests=%d", &own); err != nil {
				t.Fatalf("floor output %q: %v", r.stdout, err)
			}
			env += float64(r.requests-own) / float64(len(floors))
		}
		x := meanWall(plugins)
		var rss, req int64
		for _, r := range plugins {
			rss = max(rss, r.rssKiB)
			req += r.requests
		}
		req -= int64(env) * int64(len(plugins))
		line := fmt.Sprintf("nodes=%d nodestate=%.1fs", size, x)
		if withFloor {
			y := meanWall(floors)
			line += fmt.Sprintf(" floor=%.1fs ratio=%.2f", y, x/y)
		}
		if perNode > 0 {
			z := perNode.Seconds() * float64(size)
			line += fmt.Sprintf(" baseline_extrapolated=%.0fs speedup=%.0f", z, z/x)
		}
		line += fmt.Sprintf(" rss=%.0fMiB requests_per_node=%.2f", float64(rss)/1024, float64(req)/float64(len(plugins))/float64(size))
		if showConcurrency {
			line += fmt.Sprintf(" concurrency=%d", concurrency)
		}
		if withFloor {
			var freq, frss int64
			for _, r := range floors {
				freq += r.requests
				frss = max(frss, r.rssKiB)
			}
			t.Logf("floor: rss=%.0fMiB requests_per_node=%.2f (its client's count); environment's requests per run: %.0f; kubectl loop: requests_per_node=%.1f (environment's share included)",
				float64(frss)/1024, (float64(freq)/float64(len(floors))-env)/float64(size), env, baselineReq)
		}
		fmt.Println("BENCH " + line)
		t.Log(line)
	}
}

// createSizedNodes creates nodes PREFIX-00000.. as many as the largest size, all reading dir,
// each labelled with every size it belongs to (sizeLabel), so one cluster serves all sizes.
func createSizedNodes(t *testing.T, prefix string, sizes []int, dir string) []string {
	t.Helper()
	n := slices.Max(sizes)
	names := numberedNodes(prefix, n)
	start := time.Now()
	CreateNodes(t, names, func(name string) NodeOptions {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, prefix+"-"))
		labels := map[string]string{}
		for _, s := range sizes {
			if i < s {
				labels[sizeLabel(s)] = "true"
			}
		}
		return NodeOptions{KubeletVersion: decode.HomeKubelet, KubeletDir: dir, Labels: labels}
	})
	t.Logf("%d nodes created and Ready in %s", n, time.Since(start).Round(time.Millisecond))
	return names
}

func sizeLabel(size int) string { return fmt.Sprintf("nodestate-bench/n%d", size) }

func meanWall(rs []benchRun) float64 {
	var s float64
	for _, r := range rs {
		s += r.wall.Seconds()
	}
	return s / float64(len(rs))
}

// checkPluginOutput checks that every node's 7 files came back valid.
func checkPluginOutput(t *testing.T, stdout string, nodes int, extra []string) {
	t.Helper()
	files := len(repoDirFiles(t, "examples/kubelet-root"))
	if slices.Contains(extra, "json") {
		var out struct {
			Items []struct{ Verdict string } `json:"items"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("plugin -o json: %v", err)
		}
		if len(out.Items) != nodes*files {
			t.Fatalf("plugin: %d items, want %d", len(out.Items), nodes*files)
		}
		return
	}
	if slices.Contains(extra, "yaml") || slices.Contains(extra, "-oyaml") {
		if got := strings.Count(stdout, "\n  verdict: valid\n"); got != nodes*files {
			t.Fatalf("plugin -o yaml: %d valid items, want %d", got, nodes*files)
		}
		return
	}
	valid := 0
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, " valid ") {
			valid++
		}
	}
	if valid != nodes*files {
		t.Fatalf("plugin: %d valid rows, want %d", valid, nodes*files)
	}
}

// kubectlLoop reads nodes one after the other the way a user would without the plugin, and
// returns the time and the API requests per node.
func kubectlLoop(t *testing.T, ns string, nodes []string) (time.Duration, float64) {
	t.Helper()
	before, _ := requestCount(t)
	harnessBefore := harnessRequests.Load()
	start := time.Now()
	script := fetch.CollectCommand(decode.Paths())
	for i, node := range nodes {
		pod := fetch.GenerateDebugPod(&corev1.Node{}, fetch.Options{Namespace: ns})
		pod.Spec.NodeName = node
		overrides, err := json.Marshal(map[string]any{"apiVersion": "v1", "spec": pod.Spec})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("kubectl-loop-%d", i)
		for _, args := range [][]string{
			{"run", name, "-n", ns, "--image", fetch.DefaultImage, "--restart=Never",
				"--labels", fetch.LabelManagedBy + "=" + fetch.ManagedBy + "," + fetch.LabelNode + "=" + node,
				"--overrides", string(overrides)},
			{"wait", "-n", ns, "--for=condition=Ready", "pod/" + name, "--timeout=2m"},
			append([]string{"exec", "-n", ns, name, "-c", fetch.ContainerName, "--"}, script...),
			{"delete", "pod", "-n", ns, name},
		} {
			if r := RunKubectl(t, args...); r.ExitCode != 0 {
				t.Fatalf("kubectl %s: %s", args[0], r)
			}
		}
	}
	per := time.Since(start) / time.Duration(len(nodes))
	WaitNoManagedPods(t, ns, time.Minute)
	time.Sleep(time.Second)
	after, _ := requestCount(t)
	req := float64(after-before-(harnessRequests.Load()-harnessBefore)) / float64(len(nodes))
	t.Logf("kubectl loop over %d nodes: %s per node, %.1f requests per node", len(nodes), per.Round(time.Millisecond), req)
	return per, req
}
