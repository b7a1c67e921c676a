package common

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kubelet is one release's real managers (../shapes/harness).
type Kubelet interface {
	// SetFeatureGates sets the process-global gates.
	SetFeatureGates(map[string]bool) error
	// NewManagers creates the topology manager, then the CPU and the memory managers with it
	// as their affinity store, registered as its hint providers. It says which step failed.
	NewManagers(*Config) (phase string, err error)
	// Start starts the CPU manager, then the memory manager (then the device manager), on the
	// checkpoints in the state dir, with these active pods and what the runtime reports.
	Start(active *ActivePods, rt *Runtime) (phase string, err error)
	AllocatableCPUs() string
	// Admit runs the kubelet's GetAllocateResourcesPodAdmitHandler (the topology manager).
	Admit(pod *v1.Pod, others []*v1.Pod) (admit bool, reason, message string)
	// PredicateAdmit runs the kubelet's next handler, lifecycle.NewPredicateAdmitHandler,
	// with the same attributes, on this node object.
	PredicateAdmit(node *v1.Node, pod *v1.Pod, others []*v1.Pod) (admit bool, reason, message string)
	Container(pod *v1.Pod, c *v1.Container) ContainerResult
	PodCPUs(uid string) string
	State() StateAfter
	// WriteCPUState writes a cpu_manager_state through the release's own state writer.
	WriteCPUState(dir string, w *CPUWrite) error
	// StartPlugins registers a real device plugin per resource and waits for their devices
	// (called again with other resources, it registers those too);
	// StopPlugins stops some; DeviceCapacity is GetCapacity; ContainerDevices is GetDevices.
	StartPlugins(map[string][]Device) error
	StopPlugins(resources []string)
	DeviceCapacity() (capacity, allocatable map[string]int)
	ContainerDevices(uid, name string) map[string][]string
	// DropRegistered rewrites the device checkpoint at path through the release's checkpoint
	// package without these resources among its registered devices (the kubelet's own write
	// once a plugin stayed away past its 5-minute grace period); the pods' entries stay.
	DropRegistered(path string, resources []string) error
}

// Runtime is what ContainerManager.Start reads of the node (container_manager_linux.go):
// buildContainerMapAndRunningSetFromRuntime's container map (pod UID, container name,
// container ID) and running set (IDs), and the kubelet's sourcesReady.
type Runtime struct {
	Containers [][3]string
	Running    map[string]bool
	Sources    *Sources
}

// Sources is the kubelet's config.SourcesReady: AllReady is read live by the managers
// (removeStaleState, UpdateAllocatedDevices, devicesToAllocate's running-container skip).
type Sources struct{ ready atomic.Bool }

func NewSources(ready bool) *Sources {
	s := &Sources{}
	s.ready.Store(ready)
	return s
}

func (s *Sources) AddSource(string) {}
func (s *Sources) AllReady() bool   { return s.ready.Load() }
func (s *Sources) Set(ready bool)   { s.ready.Store(ready) }

// runningRuntime: every container known and running, the sources ready (every mode but restart).
func runningRuntime(containers [][2]string) *Runtime {
	rt := &Runtime{Running: map[string]bool{}, Sources: NewSources(true)}
	for _, c := range containers {
		id := containerID(c[0], c[1])
		rt.Containers = append(rt.Containers, [3]string{c[0], c[1], id})
		rt.Running[id] = true
	}
	return rt
}

// containerID is the runtime's ID of a container of the cases.
func containerID(uid, name string) string { return "cid-" + uid + "-" + name }

// CPUWrite is setup/write.json's "cpu": a checkpoint written by the real state writer.
type CPUWrite struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
}

// ActivePods is the kubelet's active pod list (GetActivePods), shared with the managers'
// goroutines.
type ActivePods struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

// List is the managers' ActivePodsFunc.
func (a *ActivePods) List() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*v1.Pod(nil), a.pods...)
}

func (a *ActivePods) add(p *v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = append(a.pods, p)
}

// remove drops every pod of that UID: a running pod the restarted kubelet refuses again is
// listed twice (as a checkpoint owner and as admitted), and the kubelet's refusal ends it.
func (a *ActivePods) remove(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = slices.DeleteFunc(a.pods, func(p *v1.Pod) bool { return p.UID == uid })
}

func (a *ActivePods) others(uid types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range a.List() {
		if p.UID != uid {
			out = append(out, p)
		}
	}
	return out
}

// Release is the k8s.io/kubernetes version this binary was built against.
func Release() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubernetes" {
				return d.Version
			}
		}
	}
	return "unknown"
}

// Main is each release binary's main.
//
//	-mode run  -case DIR [-state DIR] -out FILE   admit DIR's pod.json (and pod2.json)
//	-mode seed -case DIR -out DIR                 write DIR's checkpoints from setup/ (seed pods or write.json)
//	-mode gen  -out DIR                           write the generated cases' inputs
//	-mode manifest -cases DIR -out FILE           MANIFEST.json of a release's cases
//	-mode compact -cases DIR                      rewrite every .json under DIR without indentation
//	-mode start -case DIR -out FILE               would the kubelet start on DIR (kubelet-start layout, start.go)
//	-mode judge -case NODE -pod FILE -out DIR     admit one pod on a node's state (judge.go)
func Main(k Kubelet) {
	mode := flag.String("mode", "run", "run, seed, gen or manifest")
	caseDir := flag.String("case", "", "case directory (inputs)")
	stateDir := flag.String("state", "", "directory of the checkpoints (default: -case)")
	casesDir := flag.String("cases", "", "directory of cases (manifest)")
	out := flag.String("out", "", "output")
	podPath := flag.String("pod", "", "judge: the pod to admit (none: only the managers' garbage collection)")
	flag.BoolVar(&deviceMode, "devices", false, "run the device manager with real device plugins (devices.json; run.sh gives it a private plugin directory)")
	flag.DurationVar(&hangAfter, "hang-after", hangAfter, "an admission not returned by then is recorded as hanging (and the pods after it are not admitted)")
	flag.Parse()
	var err error
	switch *mode {
	case "run":
		if *stateDir == "" {
			*stateDir = *caseDir
		}
		var e *Expected
		if e, err = RunCase(k, *caseDir, *stateDir); err == nil {
			err = WriteJSON(*out, e)
		}
	case "seed":
		err = SeedCase(k, *caseDir, *out)
	case "gen":
		err = Generate(*out)
	case "restartgen":
		err = GenerateRestart(*out)
	case "manifest":
		err = WriteManifest(*casesDir, *out, Release())
	case "compact":
		err = CompactTree(*casesDir)
	case "judge":
		err = JudgeNode(k, *caseDir, *podPath, *out)
	case "start":
		var r *StartResult
		if r, err = StartCase(k, *caseDir); err == nil {
			err = WriteJSON(*out, r)
		}
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "admitvec:", err)
		os.Exit(1)
	}
}

// boot starts the managers on the checkpoints in stateDir as the kubelet does. The pods that own
// checkpoint entries are active (and their containers known to the runtime).
//
// bound are node.json's pods (nil without one): every one is active, and a checkpoint owner
// must be one of them (the predicate counts the pods the kubelet runs, pkg/admit the pods
// bound to the node: the two lists are the same pods).
func boot(k Kubelet, m *Machine, stateDir string, bound []*v1.Pod, plugins map[string][]Device) (*ActivePods, *Expected, error) {
	return bootOnly(k, m, stateDir, bound, plugins, "", false)
}

// bootOnly is boot with only one manager made and started when only is "cpu" or "memory".
// With ownersMayBeGone (judge mode), a checkpoint owner missing from bound is a pod deleted
// since the checkpoint was written: neither active nor running, so the managers' own
// removeStaleState drops its entries, as on a node whose pod was deleted.
func bootOnly(k Kubelet, m *Machine, stateDir string, bound []*v1.Pod, plugins map[string][]Device, only string, ownersMayBeGone bool) (*ActivePods, *Expected, error) {
	e := &Expected{Phase: "ok"}
	// The checkpoints' directory is a temporary one here; the kubelet's errors name the files
	// in its root directory, /var/lib/kubelet by default.
	fail := func(phase string, err error) (*ActivePods, *Expected, error) {
		e.Phase, e.StartError = phase, strings.ReplaceAll(err.Error(), stateDir, "/var/lib/kubelet")
		return nil, e, nil
	}
	if err := k.SetFeatureGates(m.Kubelet.FeatureGates); err != nil {
		return fail("featureGates", err)
	}
	reservation, err := Reservation(m)
	if err != nil {
		return fail("config", err)
	}
	reservedMemory, err := ReservedMemoryOf(m)
	if err != nil {
		return fail("config", err)
	}
	if phase, err := k.NewManagers(&Config{Machine: m, Reservation: reservation, ReservedMemory: reservedMemory, StateDir: stateDir, Devices: deviceMode, Only: only}); err != nil {
		return fail(phase, err)
	}
	owners := map[string]map[string]bool{}
	if err := checkpointOwners(stateDir, owners); err != nil {
		return nil, nil, err
	}
	if deviceMode {
		if err := deviceCheckpointOwners(owners); err != nil {
			return nil, nil, err
		}
	}
	active := &ActivePods{}
	var containers [][2]string
	boundByUID := map[string]*v1.Pod{}
	for _, p := range bound {
		boundByUID[string(p.UID)] = p
	}
	for _, uid := range sortedKeys(owners) {
		if bound != nil && ownersMayBeGone && boundByUID[uid] == nil {
			continue
		}
		p := &v1.Pod{}
		p.UID, p.Name, p.Namespace = types.UID(uid), "owner-"+uid, "default"
		for _, c := range sortedKeys(owners[uid]) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
			containers = append(containers, [2]string{uid, c})
		}
		if bound != nil {
			if p = boundByUID[uid]; p == nil {
				return nil, nil, fmt.Errorf("checkpoint owner %s is not among node.json's pods", uid)
			}
			delete(boundByUID, uid)
		}
		active.add(p)
	}
	for _, p := range bound {
		if boundByUID[string(p.UID)] != nil {
			active.add(p)
		}
	}
	if phase, err := k.Start(active, runningRuntime(containers)); err != nil {
		return fail(phase, err)
	}
	e.Starts = true
	cpus := k.AllocatableCPUs()
	e.AllocatableCPUs = &cpus
	if deviceMode {
		if err := k.StartPlugins(plugins); err != nil {
			return nil, nil, err
		}
		c, a := k.DeviceCapacity()
		e.DeviceCapacity, e.DeviceAllocatable = &c, &a
	}
	return active, e, nil
}

// hangAfter is the watchdog's limit on one admission (-hang-after).
var hangAfter = 20 * time.Second

// admitWithin runs k.Admit, giving up after limit: hung is true when it has not returned (the
// goroutine stays stuck, holding the managers' locks, until the process exits).
func admitWithin(limit time.Duration, k Kubelet, pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string, hung bool) {
	type result struct {
		ok              bool
		reason, message string
	}
	done := make(chan result, 1)
	go func() {
		ok, reason, message := k.Admit(pod, others)
		done <- result{ok, reason, message}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.ok, r.reason, r.message, false
	case <-timer.C:
		return false, "", "", true
	}
}

// admit admits pods one after another on the same kubelet: the pod is active while it is
// admitted (the kubelet adds it to its pod manager first) and stays active only if admitted.
// An admission that hangs ends the list: the kubelet admits nothing after it. With a node
// (node.json), the predicate handler runs after the resource managers admitted the pod, with
// the same attributes, as the kubelet's handler list has it; a pod it refuses keeps what the
// managers gave it until their next removeStaleState.
func admit(k Kubelet, active *ActivePods, pods []*v1.Pod, node *v1.Node) []PodResult {
	return admitEach(k, active, pods, node, nil)
}

// admitEach is admit with before(i) called before the i-th pod's admission (restart cases:
// device plugins registering between the re-admissions).
func admitEach(k Kubelet, active *ActivePods, pods []*v1.Pod, node *v1.Node, before func(int)) []PodResult {
	var out []PodResult
	for i, pod := range pods {
		if before != nil {
			before(i)
		}
		active.add(pod)
		others := active.others(pod.UID)
		ok, reason, message, hung := admitWithin(hangAfter, k, pod, others)
		if hung {
			fmt.Fprintf(os.Stderr, "admitvec: pod %s: admission did not return within %s\n", pod.Name, hangAfter)
			return append(out, PodResult{Pod: pod.Name, UID: string(pod.UID), Hangs: true})
		}
		if ok && node != nil {
			ok, reason, message = k.PredicateAdmit(node, pod, others)
		}
		r := PodResult{Pod: pod.Name, UID: string(pod.UID), Admit: ok, Reason: reason, Message: message}
		if ok {
			r.Containers = map[string]ContainerResult{}
			for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
				cr := k.Container(pod, &c)
				if deviceMode {
					devs := k.ContainerDevices(string(pod.UID), c.Name)
					cr.Devices = &devs
				}
				r.Containers[c.Name] = cr
			}
			r.PodCPUs = k.PodCPUs(string(pod.UID))
		} else {
			active.remove(pod.UID)
		}
		state := k.State()
		if deviceMode {
			state.DeviceAssignments = deviceAssignments(k, active, pods)
		}
		r.StateAfter = &state
		out = append(out, r)
	}
	return out
}

// collectGarbage has the managers drop what rejected pods left in their state before the
// checkpoint is used, as the kubelet's next admission would: their Allocate runs
// removeStaleState first. A BestEffort pod is admitted for that; it allocates nothing.
func collectGarbage(k Kubelet, active *ActivePods) {
	gc := &v1.Pod{}
	gc.Name, gc.Namespace, gc.UID = "gc", "default", "uid-gc"
	gc.Spec.Containers = []v1.Container{{Name: "gc"}}
	active.add(gc)
	k.Admit(gc, active.others(gc.UID))
	active.remove(gc.UID)
}

// RunCase admits caseDir's pod.json (then pod2.json) on a kubelet started with caseDir's
// machine.json and the checkpoints in stateDir (copied: the managers write them).
func RunCase(k Kubelet, caseDir, stateDir string) (*Expected, error) {
	if isRestartCase(caseDir) {
		return RunRestart(k, caseDir, stateDir)
	}
	var m Machine
	if err := readJSON(filepath.Join(caseDir, "machine.json"), &m); err != nil {
		return nil, err
	}
	var pods []*v1.Pod
	for _, name := range []string{"pod.json", "pod2.json"} {
		p, ok, err := readPod(filepath.Join(caseDir, name))
		if err != nil {
			return nil, err
		}
		if ok {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil, errors.New(caseDir + ": no pod.json")
	}
	work, err := stateWorkDir(stateDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	nf, err := readNodeFile(filepath.Join(caseDir, "node.json"))
	if err != nil {
		return nil, err
	}
	var plugins map[string][]Device
	if deviceMode {
		if err := copyFile(filepath.Join(stateDir, deviceCheckpoint), filepath.Join(devicePluginDir, "kubelet_internal_checkpoint")); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if plugins, err = readDevices(filepath.Join(caseDir, "devices.json")); err != nil {
			return nil, err
		}
	}
	active, e, err := boot(k, &m, work, nf.boundPods(), plugins)
	if err != nil || !e.Starts {
		return e, err
	}
	e.Pods = admit(k, active, pods, nf.node())
	if deviceMode {
		classifyDevices(e, &m, plugins, filepath.Join(stateDir, deviceCheckpoint))
	}
	return e, nil
}

// SeedCase writes caseDir's checkpoints into outDir: setup/write.json through the release's
// state writer, or the seed pods setup/seed*.json admitted from no checkpoint by the real
// managers (their results in outDir/seed-result.json).
func SeedCase(k Kubelet, caseDir, outDir string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var w struct {
		CPU *CPUWrite `json:"cpu"`
	}
	if err := readJSON(filepath.Join(caseDir, "setup", "write.json"), &w); err == nil {
		if w.CPU == nil {
			return errors.New("write.json without cpu")
		}
		return k.WriteCPUState(outDir, w.CPU)
	} else if !os.IsNotExist(err) {
		return err
	}
	seeds, _ := filepath.Glob(filepath.Join(caseDir, "setup", "seed[0-9]*.json"))
	sort.Strings(seeds)
	if len(seeds) == 0 {
		return nil
	}
	var m Machine
	if err := readJSON(filepath.Join(caseDir, "machine.json"), &m); err != nil {
		return err
	}
	// A device case's seeds ran on setup/machine.json with setup/devices.json.
	var plugins map[string][]Device
	if deviceMode {
		if err := readJSON(filepath.Join(caseDir, "setup", "machine.json"), &m); err != nil && !os.IsNotExist(err) {
			return err
		}
		var err error
		if plugins, err = readDevices(filepath.Join(caseDir, "setup", "devices.json")); err != nil {
			return err
		}
	}
	// setup/seed-kubelet.json: the seeding kubelet ran with another configuration (a policy
	// changed before the restart).
	var seedKubelet KubeletConfig
	if err := readJSON(filepath.Join(caseDir, "setup", "seed-kubelet.json"), &seedKubelet); err == nil {
		m.Kubelet = seedKubelet
	} else if !os.IsNotExist(err) {
		return err
	}
	// setup/seed-gates.json: the seeding kubelet ran with other gates than the restarted one.
	if err := readJSON(filepath.Join(caseDir, "setup", "seed-gates.json"), &m.Kubelet.FeatureGates); err != nil && !os.IsNotExist(err) {
		return err
	}
	var pods []*v1.Pod
	for _, s := range seeds {
		p, _, err := readPod(s)
		if err != nil {
			return err
		}
		pods = append(pods, p)
	}
	active, e, err := boot(k, &m, outDir, nil, plugins)
	if err != nil {
		return err
	}
	e.Version = Release()
	if e.Starts {
		e.Pods = admit(k, active, pods, nil)
		collectGarbage(k, active)
	}
	if deviceMode {
		if _, err := os.Stat(filepath.Join(caseDir, "setup", "stop-plugins.json")); err == nil {
			return errors.New("setup/stop-plugins.json: a plugin gone past the kubelet's 5-minute grace period is not re-seeded (it would take 5 minutes a case)")
		}
		if err := os.MkdirAll(filepath.Join(outDir, "device-plugins"), 0o755); err != nil {
			return err
		}
		if err := copyFile(filepath.Join(devicePluginDir, "kubelet_internal_checkpoint"), filepath.Join(outDir, deviceCheckpoint)); err != nil {
			return err
		}
		if err := dropRegistered(k, caseDir, filepath.Join(outDir, deviceCheckpoint)); err != nil {
			return err
		}
	}
	return WriteJSON(filepath.Join(outDir, "seed-result.json"), e)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CPUList renders sorted ints as a Linux CPU list.
func CPUList(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", ids[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		}
		i = j + 1
	}
	return b.String()
}

// stateWorkDir is a temporary directory holding a copy of the case's CPU and memory checkpoints
// (those it has), for the managers to start from and write.
func stateWorkDir(stateDir string) (string, error) {
	work, err := os.MkdirTemp("", "admitvec-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"cpu_manager_state", "memory_manager_state"} {
		if err := copyFile(filepath.Join(stateDir, name), filepath.Join(work, name)); err != nil && !os.IsNotExist(err) {
			os.RemoveAll(work)
			return "", err
		}
	}
	return work, nil
}
