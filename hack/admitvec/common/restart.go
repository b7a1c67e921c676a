package common

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The restart cases (RESTART.md, issue 44): the node's pods hold devices, CPUs and memory in the
// checkpoints (seeded from setup/ by the real managers, as -mode seed does), then a fresh
// kubelet's managers start from those checkpoints with the runtime restart.json describes, and
// the node's pods (pod.json, pod2.json, ...) are admitted again in the kubelet's order
// (HandlePodAdditions: creation time), the device plugins registering before, between or
// after the re-admissions, or never.

// RestartSpec is a case's restart.json.
type RestartSpec struct {
	// Kind is "reboot" (no container running) or "kubelet-restart".
	Kind string `json:"kind"`
	// Running: "<podUID>/<containerName>" the runtime reports running at start.
	Running []string `json:"running"`
	// Exited (optional): "<podUID>/<containerName>" the runtime also lists as exited (an older
	// instance of that container, e.g. one that restarted before the kubelet did: #135485).
	Exited []string `json:"exited,omitempty"`
	// SourcesReady: sourcesReady.AllReady() during the re-admissions (false at Start).
	SourcesReady bool `json:"sourcesReady"`
	// Register: when each devices.json plugin registers: after that many re-admissions (0:
	// before the first; more than the pods: never). A plugin not listed registers before the first.
	Register []PluginRegistration `json:"register"`
}

// PluginRegistration is one entry of restart.json's register.
type PluginRegistration struct {
	Resource  string `json:"resource"`
	AfterPods int    `json:"afterPods"`
}

var podFile = regexp.MustCompile(`^pod([0-9]*)\.json$`)

// readCasePods reads pod.json, pod2.json, pod3.json, ... in that order.
func readCasePods(caseDir string) ([]*v1.Pod, error) {
	ents, err := os.ReadDir(caseDir)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		n    int
		name string
	}
	var files []numbered
	for _, e := range ents {
		m := podFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n := 1
		if m[1] != "" {
			if n, err = strconv.Atoi(m[1]); err != nil {
				return nil, err
			}
		}
		files = append(files, numbered{n, e.Name()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].n < files[j].n })
	var pods []*v1.Pod
	for _, f := range files {
		p, _, err := readPod(filepath.Join(caseDir, f.name))
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// restartRuntime is what buildContainerMapAndRunningSetFromRuntime finds: the running
// containers (running) and the exited instances, each with its own container ID; sources not
// ready (the kubelet's sourcesReady sees no source before its sync loop handles a first update).
func restartRuntime(spec *RestartSpec) (*Runtime, error) {
	rt := &Runtime{Running: map[string]bool{}, Sources: NewSources(false)}
	if spec.Kind != "reboot" && spec.Kind != "kubelet-restart" {
		return nil, fmt.Errorf("restart.json: kind %q", spec.Kind)
	}
	if spec.Kind == "reboot" && len(spec.Running) > 0 {
		return nil, errors.New("restart.json: a reboot with running containers")
	}
	split := func(s string) (string, string, error) {
		i := strings.LastIndex(s, "/")
		if i <= 0 || i == len(s)-1 {
			return "", "", fmt.Errorf("restart.json: %q is not <podUID>/<containerName>", s)
		}
		return s[:i], s[i+1:], nil
	}
	for i, s := range spec.Exited {
		uid, name, err := split(s)
		if err != nil {
			return nil, err
		}
		rt.Containers = append(rt.Containers, [3]string{uid, name, fmt.Sprintf("%s-exited-%d", containerID(uid, name), i)})
	}
	for _, s := range spec.Running {
		uid, name, err := split(s)
		if err != nil {
			return nil, err
		}
		id := containerID(uid, name)
		rt.Containers = append(rt.Containers, [3]string{uid, name, id})
		rt.Running[id] = true
	}
	return rt, nil
}

// RunRestart is RunCase for a case with restart.json (device mode only).
func RunRestart(k Kubelet, caseDir, stateDir string) (*Expected, error) {
	if !deviceMode {
		return nil, errors.New("a restart case runs with -devices")
	}
	var spec RestartSpec
	if err := readJSON(filepath.Join(caseDir, "restart.json"), &spec); err != nil {
		return nil, err
	}
	var m Machine
	if err := readJSON(filepath.Join(caseDir, "machine.json"), &m); err != nil {
		return nil, err
	}
	pods, err := readCasePods(caseDir)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, errors.New(caseDir + ": no pod.json")
	}
	// HandlePodAdditions: sort.Sort(sliceutils.PodsByCreationTime(pods)). The cases give
	// distinct times in file order; a tie is refused rather than left to sort.Sort.
	for i := 1; i < len(pods); i++ {
		if !pods[i-1].CreationTimestamp.Before(&pods[i].CreationTimestamp) {
			return nil, fmt.Errorf("%s: pod %d is not created after pod %d", caseDir, i+1, i)
		}
	}
	plugins, err := readDevices(filepath.Join(caseDir, "devices.json"))
	if err != nil {
		return nil, err
	}
	after := map[string]int{}
	for r := range plugins {
		after[r] = 0
	}
	for _, r := range spec.Register {
		if _, ok := plugins[r.Resource]; !ok {
			return nil, fmt.Errorf("restart.json: %s has no plugin in devices.json", r.Resource)
		}
		after[r.Resource] = r.AfterPods
	}
	rt, err := restartRuntime(&spec)
	if err != nil {
		return nil, err
	}
	work, err := stateWorkDir(stateDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := copyFile(filepath.Join(stateDir, deviceCheckpoint), filepath.Join(devicePluginDir, "kubelet_internal_checkpoint")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	e := &Expected{Phase: "ok"}
	fail := func(phase string, err error) (*Expected, error) {
		e.Phase, e.StartError = phase, strings.ReplaceAll(err.Error(), work, "/var/lib/kubelet")
		return e, nil
	}
	if err := k.SetFeatureGates(m.Kubelet.FeatureGates); err != nil {
		return fail("featureGates", err)
	}
	reservation, err := Reservation(&m)
	if err != nil {
		return fail("config", err)
	}
	reservedMemory, err := ReservedMemoryOf(&m)
	if err != nil {
		return fail("config", err)
	}
	if phase, err := k.NewManagers(&Config{Machine: &m, Reservation: reservation, ReservedMemory: reservedMemory, StateDir: work, Devices: true}); err != nil {
		return fail(phase, err)
	}
	// The kubelet's pod manager is empty at start: a pod is active once HandlePodAdditions
	// added it (and stays so if admitted).
	active := &ActivePods{}
	if phase, err := k.Start(active, rt); err != nil {
		return fail(phase, err)
	}
	e.Starts = true
	cpus := k.AllocatableCPUs()
	e.AllocatableCPUs = &cpus
	register := func(n int) error {
		now := map[string][]Device{}
		for r, a := range after {
			if a == n {
				now[r] = plugins[r]
			}
		}
		if len(now) == 0 {
			return nil
		}
		return k.StartPlugins(now)
	}
	rt.Sources.Set(spec.SourcesReady)
	var regErr error
	e.Pods = admitEach(k, active, pods, nil, func(i int) {
		if err := register(i); err != nil && regErr == nil {
			regErr = err
		}
	})
	if regErr != nil {
		return nil, regErr
	}
	if err := register(len(pods)); err != nil {
		return nil, err
	}
	c, a := k.DeviceCapacity()
	e.DeviceCapacity, e.DeviceAllocatable = &c, &a
	classifyDevices(e, &m, plugins, filepath.Join(stateDir, deviceCheckpoint))
	return e, nil
}

// isRestartCase: the case has restart.json.
func isRestartCase(caseDir string) bool {
	_, err := os.Stat(filepath.Join(caseDir, "restart.json"))
	return err == nil
}

// dropRegistered applies setup/drop-registered.json (a list of resources) to a seeded device
// checkpoint: the plugins gone past the kubelet's grace period before the restart.
func dropRegistered(k Kubelet, caseDir, checkpoint string) error {
	var drop []string
	if err := readJSON(filepath.Join(caseDir, "setup", "drop-registered.json"), &drop); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	return k.DropRegistered(checkpoint, drop)
}
