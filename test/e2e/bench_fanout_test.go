//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cmdutil"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// TestBenchFanout is `make bench-fanout`: every fan-out verb beside the floor program
// (test/e2e/floor), in one run, interleaved (floor, verify, floor-binary, verify-binary,
// floor-doctor, doctor, floor-admit, admit, admit-gpu, floor-admit-binary, admit-binary, then
// the same in reverse order), on the same kwok nodes, in two node states:
//
//   - nostart: examples/kubelet-root's files, whose CPU and memory manager states this host's
//     machine and the config K refuse: the kubelet would not start, doctor searches fixes,
//     admit says the kubelet would not start;
//   - starts: the same files with a CPU manager state of this host's CPUs (static, K's policy)
//     and no memory manager state: the kubelet starts and admits the pod.
//
// The verbs are those a user runs on a fleet: verify --all-nodes; doctor --all-nodes
// --kubelet-config K; admit --all-nodes -f pod.yaml --kubelet-config K (a pod of 1 exclusive
// CPU); admit --all-nodes -f gpu-pod.yaml --devices FILE --kubelet-config K (the same pod with a
// device-plugin resource, the device manager replayed); and verify and admit again with the
// binary reader (--reader=binary: the debug pod runs the plugin's image and its exec is
// `/kubectl-nodestate node-read`, which kwok's node reader proxy runs as the plugin binary
// under test; admit's also asks the kubelet's PodResources API, which a kwok node does not
// serve: the section says so). Each reads the machine from the node's
// sysfs in the same exec as the files (kwok: this host's). Each verb's floor creates that
// verb's very debug pod (nodestate's Runner.DebugPodOptions: doctor's also mounts the cgroup
// and CDI dirs, a larger object on every write and watch event), runs its very exec command
// (Runner.ExecCommand) and makes its requests: floor for
// verify's (the files), floor-doctor for doctor's (and the sysfs, cgroups, sockets and CDI
// dumps), floor-admit for admit's (and the sysfs and PCI dumps), floor-binary and
// floor-admit-binary for verify's and admit's with the binary reader (its pod and its
// node-read command); the admit floors and floor-doctor also list each
// node's pods, as doctor and admit do (they weigh and name them), and floor-doctor gets the
// ResourceClaims the node's DRA checkpoint prepared, as doctor does, so that a ratio is what the
// plugin adds to the same work. Under kwok every exec's shell runs on the control
// plane's host, not on the node: what a node's script costs is charged to the fleet's time,
// and so to the floor that runs it too. Per state, size and verb it prints
//
//	BENCH fanout state=S nodes=N verb=V time=Xs ratio=X/its-floor cpu_ratio=M/its-floor's own_ratio=O floor=F vs_verify=X/verify [vs_shell=X/busybox-reader's cpu_vs_shell=M/its own_vs_shell=C/its] requests_per_node=R rss=MiB cpu=Cs machine_cpu=Ms
//
// time is the mean of the verb's runs, rss the highest peak RSS (VmHWM) of its runs,
// requests_per_node the API server's count (as bench-scale's, the environment's share taken
// out), cpu the mean of the program's own CPU time (user+system; what the plugin spends, which
// a loaded shared machine disturbs less than the wall time; the execs' shell runs on the
// control plane's host under kwok and is not in it), machine_cpu the mean CPU of the run on
// the whole machine (the program's, etcd's, the API server's and kwok's with the execs'
// commands, from the start until the debug pods are gone) and cpu_ratio its ratio to the
// floor's: the work the verb asks of the machine, which the wall time follows on this
// saturated 2-core machine, less the noise of what else runs on it. own_ratio is the ratio
// the verb's own CPU alone would give: 1 + (its CPU - the floor's) / the floor's machine_cpu.
// The API work of the two is the same request for request (requests_per_node), but the
// control plane's CPU for it varies by up to a quarter from run to run of the same program;
// own_ratio leaves that noise out and keeps what the plugin adds. Each run starts once the
// control plane is back to what it spends idle (settled, up to a minute), so that no run is
// charged the previous one's tail. vs_shell, on the binary reader's verbs and floor, is the
// ratio to the same verb (or floor) with the busybox reader: time, machine CPU and own CPU.
// Environment:
//
//	NODESTATE_BENCH_FANOUT_SIZES   node counts, e.g. "1000 10000" (unset: skip)
//	NODESTATE_BENCH_FANOUT_STATES  "nostart starts" (default both)
//	NODESTATE_BENCH_FANOUT_ROUNDS  1: one run of each verb, 2 (default): both orders
//	NODESTATE_BENCH_FANOUT_WARMUP  runs of the first verb's floor, dropped, before a size's first measured run (default 1)
//	NODESTATE_BENCH_FANOUT_VERBS   a subset of "floor verify floor-binary verify-binary floor-doctor doctor
//	                               floor-admit admit admit-gpu floor-admit-binary admit-binary"
//	NODESTATE_BENCH_FANOUT_CONCURRENCY  --concurrency of all (default: the plugin's)
//	NODESTATE_BENCH_FANOUT_PROFILE      cpu, heap, allocs...: each plugin run writes that profile (the floors: cpu only)
//	                                    (--profile) to DIR/STATE-NODES-VERB.pprof, DIR being
//	                                    NODESTATE_BENCH_FANOUT_PROFILE_DIR (default: a temp dir)
func TestBenchFanout(t *testing.T) {
	if os.Getenv("NODESTATE_BENCH_FANOUT_SIZES") == "" {
		t.Skip("set NODESTATE_BENCH_FANOUT_SIZES (make bench-fanout)")
	}
	raw, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("no sysfs: %v", err)
	}
	hostCPUs := strings.TrimSpace(string(raw))
	sizes := envInts(t, "NODESTATE_BENCH_FANOUT_SIZES", "")
	slices.Sort(sizes)
	rounds := envInts(t, "NODESTATE_BENCH_FANOUT_ROUNDS", "2")[0]
	states := strings.Fields(os.Getenv("NODESTATE_BENCH_FANOUT_STATES"))
	if len(states) == 0 {
		states = []string{"nostart", "starts"}
	}
	verbs := strings.Fields(os.Getenv("NODESTATE_BENCH_FANOUT_VERBS"))
	if len(verbs) == 0 {
		verbs = []string{"floor", "verify", "floor-binary", "verify-binary", "floor-doctor", "doctor",
			"floor-admit", "admit", "admit-gpu", "floor-admit-binary", "admit-binary"}
	}

	// One kubelet dir for every node, rewritten between the states.
	rootFiles := repoDirFiles(t, "examples/kubelet-root")
	dir := KubeletDir(t, rootFiles)
	inputs := t.TempDir()
	write := func(path, content string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	config := write(filepath.Join(inputs, "kubelet-config.yaml"), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n")
	const podTemplate = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      requests: {cpu: "1", memory: 100Mi%[2]s}
      limits: {cpu: "1", memory: 100Mi%[2]s}
`
	pod := write(filepath.Join(inputs, "pod.yaml"), fmt.Sprintf(podTemplate, "bench-pinned", ""))
	gpuPod := write(filepath.Join(inputs, "gpu-pod.yaml"), fmt.Sprintf(podTemplate, "bench-gpu", `, example.com/gpu: "1"`))
	devices := write(filepath.Join(inputs, "devices.json"), `{"resources": {"example.com/gpu": [`+
		`{"ID": "gpu-0", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}}, `+
		`{"ID": "gpu-1", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}}]}}`)

	// The ResourceClaims doctor gets for each node: those its DRA checkpoint prepared.
	var claims []string
	for _, c := range decode.Decode(decode.KindDRA, []byte(rootFiles["dra_manager_state"]), decode.Options{}).Decoded.DRA.Claims {
		claims = append(claims, c.Namespace+"/"+c.ClaimName)
	}
	slices.Sort(claims)
	claims = slices.Compact(claims)

	createSizedNodes(t, "fanout", sizes, dir)
	idle := idleControlPlane(t, slices.Max(sizes))
	floor := buildFloor(t)
	plugin := PluginBin(t)
	ns := NewNamespace(t, nil)
	concurrency := strconv.Itoa(envInts(t, "NODESTATE_BENCH_FANOUT_CONCURRENCY", strconv.Itoa(cmdutil.DefaultConcurrency))[0])
	// Each floor's exec: the verb's own, as its Runner builds it (the kubelet config given, as
	// --kubelet-config gives it: not read from the node), with the verb's reader: the binary
	// reader's pod runs the plugin's image (the same tag for the verb and its floor).
	given := &replay.KubeletConfig{}
	shell, binary := nodestatelib.DebugPod{}, nodestatelib.DebugPod{Reader: nodestatelib.ReaderBinary, Image: benchReaderImage}
	floorRead := map[string]floorExec{
		"floor":              readOf(t, nodestatelib.Engines{}, shell),
		"floor-binary":       readOf(t, nodestatelib.Engines{}, binary),
		"floor-doctor":       readOf(t, nodestatelib.Engines{Doctor: &nodestatelib.DoctorConfig{KubeletConfig: given}}, shell),
		"floor-admit":        readOf(t, nodestatelib.Engines{Admit: &nodestatelib.AdmitConfig{KubeletConfig: given}}, shell),
		"floor-admit-binary": readOf(t, nodestatelib.Engines{Admit: &nodestatelib.AdmitConfig{KubeletConfig: given}}, binary),
	}
	// Under kwok a node reader's exec goes through the node reader proxy (readerproxy.go), which
	// points the node's kubelet endpoint at itself on the node's first such pod: every node is
	// pointed there before the first run, so that every exec, of either reader, takes that path.
	if slices.ContainsFunc(verbs, isBinary) {
		PointNodesAtReaderProxy(t, TestSelector(t))
	}

	profile, profileDir := os.Getenv("NODESTATE_BENCH_FANOUT_PROFILE"), os.Getenv("NODESTATE_BENCH_FANOUT_PROFILE_DIR")
	if profile != "" && profileDir == "" {
		profileDir = t.TempDir()
	}

	warmups := envInts(t, "NODESTATE_BENCH_FANOUT_WARMUP", "1")[0]
	warmed := map[int]bool{} // sizes whose nodes had their warm-up runs (the first state's)
	for _, state := range states {
		files := len(rootFiles)
		switch state {
		case "nostart":
			write(filepath.Join(dir, "cpu_manager_state"), rootFiles["cpu_manager_state"])
			write(filepath.Join(dir, "memory_manager_state"), rootFiles["memory_manager_state"])
		case "starts":
			write(filepath.Join(dir, "cpu_manager_state"), cpuStateV4(t, hostCPUs, nil))
			if err := os.Remove(filepath.Join(dir, "memory_manager_state")); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			files--
		default:
			t.Fatalf("NODESTATE_BENCH_FANOUT_STATES: %q is not nostart or starts", state)
		}
		for _, size := range sizes {
			sel := TestSelector(t) + "," + sizeLabel(size) + "=true"
			live := []string{"--all-nodes", "-l", sel, "-n", ns, "--concurrency", concurrency}
			args := map[string][]string{
				"verify":    append([]string{"verify"}, live...),
				"doctor":    append([]string{"doctor", "--kubelet-config", config}, live...),
				"admit":     append([]string{"admit", "-f", pod, "--kubelet-config", config}, live...),
				"admit-gpu": append([]string{"admit", "-f", gpuPod, "--devices", devices, "--kubelet-config", config}, live...),
			}
			for _, verb := range []string{"verify", "admit"} {
				args[verb+"-binary"] = append(slices.Clone(args[verb]), "--reader=binary", "--image", benchReaderImage)
			}
			for floor, read := range floorRead {
				args[floor] = []string{"-kubeconfig", Kubeconfig(), "-n", ns, "-l", sel, "-concurrency", concurrency, "-command", read.command, "-pod-options", read.podOptions}
				if floor != "floor" && floor != "floor-binary" {
					args[floor] = append(args[floor], "-list-pods") // as doctor and admit do
				}
				if floor == "floor-doctor" && len(claims) > 0 {
					args[floor] = append(args[floor], "-get-claims", strings.Join(claims, ",")) // as doctor does
				}
			}
			order := slices.Clone(verbs)
			runs := map[string][]benchRun{}
			// The first run after node creation may find the control plane in a state no later
			// run does (its caches, etcd before any compaction): it is run and dropped.
			warm := order[0]
			if !isFloor(warm) {
				warm = floorOf(warm)
			}
			for range warmups {
				if warmed[size] {
					break
				}
				settle(t, idle)
				r := measureExit(t, ns, []int{0}, floor, args[warm]...)
				checkFanout(t, warm, state, r, size, files)
				t.Logf("warm-up run of %s dropped", warm)
			}
			warmed[size] = true
			for round := range rounds {
				for _, verb := range order {
					bin, ok := plugin, []int{0, 1} // doctor and admit exit 1 when the kubelet would not start
					a := args[verb]
					if isFloor(verb) {
						bin, ok = floor, []int{0}
						if profile == "cpu" {
							a = append(slices.Clone(a), "-cpuprofile", filepath.Join(profileDir, fmt.Sprintf("%s-%d-%s.pprof", state, size, verb)))
						}
					} else if profile != "" {
						a = append(slices.Clone(a), "--profile", profile, "--profile-output", filepath.Join(profileDir, fmt.Sprintf("%s-%d-%s.pprof", state, size, verb)))
					}
					settle(t, idle)
					r := measureExit(t, ns, ok, bin, a...)
					checkFanout(t, verb, state, r, size, files)
					runs[verb] = append(runs[verb], r)
				}
				if round%2 == 0 {
					slices.Reverse(order)
				}
			}
			printFanout(t, state, size, verbs, runs)
		}
	}
}

// floorExec is what a floor does on each node to match a verb's live read: the debug pod it
// creates (its fetch.Options) and the command it runs in it, both as JSON.
type floorExec struct{ command, podOptions string }

// readOf is the debug pod and exec command of a live read with these engines and this reader, as
// the verb's Runner builds them.
func readOf(t *testing.T, engines nodestatelib.Engines, pod nodestatelib.DebugPod) floorExec {
	t.Helper()
	r, err := nodestatelib.New(context.Background(), nodestatelib.Config{Nodes: []string{"any"}, Client: Client(), RESTConfig: RESTConfig(), Engines: engines, DebugPod: pod})
	if err != nil {
		t.Fatal(err)
	}
	command, err := json.Marshal(r.ExecCommand())
	if err != nil {
		t.Fatal(err)
	}
	podOptions, err := json.Marshal(r.DebugPodOptions())
	if err != nil {
		t.Fatal(err)
	}
	return floorExec{string(command), string(podOptions)}
}

// benchReaderImage is the image of the binary reader's debug pods, the verbs' (--image) and
// their floors': under kwok no image is pulled, what counts is that both create the same pod.
const benchReaderImage = "ghcr.io/kubectl-nodestate/kubectl-nodestate:bench"

func isFloor(verb string) bool { return strings.HasPrefix(verb, "floor") }

// isBinary says whether the verb (or floor) reads with the node reader (--reader=binary).
func isBinary(verb string) bool { return strings.HasSuffix(verb, "-binary") }

// floorOf is the floor a verb is compared with: the one that runs its exec.
func floorOf(verb string) string {
	switch verb {
	case "doctor":
		return "floor-doctor"
	case "admit", "admit-gpu":
		return "floor-admit"
	case "verify-binary":
		return "floor-binary"
	case "admit-binary":
		return "floor-admit-binary"
	}
	return "floor"
}

// shellOf is the busybox reader's counterpart of a binary reader's verb or floor.
func shellOf(verb string) string { return strings.TrimSuffix(verb, "-binary") }

// buildFloor builds test/e2e/floor.
func buildFloor(t *testing.T) string {
	t.Helper()
	floor := filepath.Join(t.TempDir(), "floor")
	build := releaseBuild(floor, "./test/e2e/floor")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the floor: %v\n%s", err, out)
	}
	return floor
}

// checkFanout checks that a verb read every node and said what the state calls for, and that
// stderr says a problem all nodes share once, not once per node.
func checkFanout(t *testing.T, verb, state string, r benchRun, nodes, files int) {
	t.Helper()
	if lines := strings.Count(r.stderr, "\n"); lines > 20 {
		t.Errorf("%s: %d lines on stderr for %d nodes, e.g.:\n%s", verb, lines, nodes, tailLines(r.stderr, 5))
	}
	switch verb = shellOf(verb); verb {
	case "floor", "floor-doctor", "floor-admit":
		if !strings.Contains(r.stdout, fmt.Sprintf("nodes=%d ", nodes)) || !strings.Contains(r.stdout, " failed=0") {
			t.Fatalf("floor: %s", r.stdout)
		}
	case "verify":
		if got := strings.Count(r.stdout, " valid "); got != nodes*files {
			t.Fatalf("verify: %d valid rows, want %d", got, nodes*files)
		}
	case "doctor":
		want := "ok       kubelet-start"
		if state == "nostart" {
			want = "error    kubelet-start"
		}
		if got := strings.Count(r.stdout, want); got != nodes {
			t.Fatalf("doctor: %d nodes say %q, want %d:\n%.2000s", got, want, nodes, r.stdout)
		}
	case "admit", "admit-gpu":
		want := fmt.Sprintf("%d of %d nodes admit the pods", nodes, nodes)
		if state == "nostart" {
			want = fmt.Sprintf("no node of %d admits the pods", nodes)
		}
		if verb == "admit-gpu" {
			// kwok's nodes advertise no example.com/gpu: the node-resource predicate refuses
			// the pod after the device manager placed it; what is measured is the replay.
			want = fmt.Sprintf("of %d", nodes)
		}
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("%s: no %q in:\n%s", verb, want, tailLines(r.stdout, 5))
		}
	}
}

// meanMachineCPU is the mean CPU time a run cost the machine: the program's and the control
// plane's (its execs' commands included). On a machine the run saturates, the wall time
// follows it, less the noise of whatever else the machine runs.
func meanMachineCPU(rs []benchRun) float64 {
	var s float64
	for _, r := range rs {
		s += (r.cpu + r.clusterCPU).Seconds()
	}
	return s / float64(len(rs))
}

// idleControlPlane prints and returns what the control plane spends with nothing to do but
// keep nodes (CPU a second over 20 s, each process's and all together), once it has done
// with creating them (under a quarter of a core, or after three minutes: kwok adopts new
// nodes for a while, which is not upkeep): on this 2-core machine it is the share no run can
// have, and what it takes grows with the runs' wall time.
func idleControlPlane(t *testing.T, nodes int) float64 {
	t.Helper()
	waited, rate := quiet(t, 0.25, 3*time.Minute)
	t.Logf("control plane quiet after node creation in %s, at %.2f cores", waited, rate)
	before := controlPlaneParts(t)
	const window = 20 * time.Second
	time.Sleep(window)
	line := fmt.Sprintf("fanout idle nodes=%d", nodes)
	var all time.Duration
	for _, p := range controlPlaneParts(t).since(before) {
		all += p.cpu
		line += fmt.Sprintf(" %s=%.2f", p.name, p.cpu.Seconds()/window.Seconds())
	}
	cores := all.Seconds() / window.Seconds()
	line += fmt.Sprintf(" control_plane_cores=%.2f", cores)
	fmt.Println("BENCH " + line)
	t.Log(line)
	return cores
}

// settle waits until the control plane is back to what it spends idle (idle cores, within a
// tenth of a core and a fifth), at most a minute, and logs the wait: the previous run's tail
// (kwok finishing its deletes, the API server's and etcd's collections) would otherwise be
// charged to whichever verb runs next, and the interleaving would not take it out in one round.
func settle(t *testing.T, idle float64) {
	t.Helper()
	waited, rate := quiet(t, idle*1.2+0.1, time.Minute)
	t.Logf("settled in %s at %.2f control-plane cores (idle %.2f)", waited, rate, idle)
}

// quiet waits until the control plane spends at most ceiling cores over 2 s, or for most; it
// returns how long it waited and the last rate seen.
func quiet(t *testing.T, ceiling float64, most time.Duration) (time.Duration, float64) {
	t.Helper()
	const window = 2 * time.Second
	start := time.Now()
	var rate float64
	for time.Since(start) < most {
		before := controlPlaneCPU(t)
		time.Sleep(window)
		if rate = (controlPlaneCPU(t) - before).Seconds() / window.Seconds(); rate <= ceiling {
			break
		}
	}
	return time.Since(start).Round(time.Second), rate
}

// meanCPU is the mean of the runs' own CPU time.
func meanCPU(rs []benchRun) float64 {
	var s float64
	for _, r := range rs {
		s += r.cpu.Seconds()
	}
	return s / float64(len(rs))
}

// printFanout prints a BENCH line per verb: time, ratio to the floor and to verify, requests
// per node (the environment's share, measured on the floor, taken out) and peak RSS.
func printFanout(t *testing.T, state string, size int, verbs []string, runs map[string][]benchRun) {
	t.Helper()
	var env float64
	var floors []benchRun
	for _, verb := range verbs {
		if isFloor(verb) {
			floors = append(floors, runs[verb]...)
		}
	}
	for _, r := range floors {
		var own int64
		if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "requests="):], "requests=%d", &own); err != nil {
			t.Fatalf("floor output %q: %v", r.stdout, err)
		}
		env += float64(r.requests-own) / float64(len(floors))
	}
	verifyTime := 0.0
	if rs := runs["verify"]; len(rs) > 0 {
		verifyTime = meanWall(rs)
	}
	for _, verb := range verbs {
		rs := runs[verb]
		x := meanWall(rs)
		var rss int64
		var req float64
		for _, r := range rs {
			rss = max(rss, r.rssKiB)
			req += float64(r.requests) - env
		}
		line := fmt.Sprintf("fanout state=%s nodes=%d verb=%s time=%.1fs", state, size, verb, x)
		if fs := runs[floorOf(verb)]; len(fs) > 0 && !isFloor(verb) {
			line += fmt.Sprintf(" ratio=%.3f cpu_ratio=%.3f own_ratio=%.3f floor=%s", x/meanWall(fs), meanMachineCPU(rs)/meanMachineCPU(fs),
				1+(meanCPU(rs)-meanCPU(fs))/meanMachineCPU(fs), floorOf(verb))
		}
		if verifyTime > 0 {
			line += fmt.Sprintf(" vs_verify=%.3f", x/verifyTime)
		}
		if ss := runs[shellOf(verb)]; isBinary(verb) && len(ss) > 0 {
			line += fmt.Sprintf(" vs_shell=%.3f cpu_vs_shell=%.3f own_vs_shell=%.3f", x/meanWall(ss), meanMachineCPU(rs)/meanMachineCPU(ss), meanCPU(rs)/meanCPU(ss))
		}
		line += fmt.Sprintf(" requests_per_node=%.2f rss=%.0fMiB cpu=%.1fs machine_cpu=%.1fs", req/float64(len(rs))/float64(size), float64(rss)/1024, meanCPU(rs), meanMachineCPU(rs))
		fmt.Println("BENCH " + line)
		t.Log(line)
	}
}
