package admit

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The restart vector packs of every release the generator ran (hack/admitvec/RESTART.md): the
// real kubelet's checkpoints before it restarted and each pod's fate after.
var restartVectors = filepath.Join(admissionVectorsDir, "*-restart"+vectorpack.Ext)

// rebuildTally counts a set's pods by what the files-only rebuild made of them.
type rebuildTally struct {
	cases, casesJudged int
	pods, equal        int
	// equalFilesOnly are the pods judged equal with no plugin registering during the case: the
	// plugins wholly the device checkpoint's, as in doctor's outlook.
	equalFilesOnly int
	// notJudged counts the pods not judged by why; notInFiles the case's pods the files do not
	// hold, by why; specChanged the pods whose case spec asks for other resources than the
	// files hold (answered as the files say, which the real kubelet was not given).
	notJudged, notInFiles map[string]int
	specChanged           int
	// specChangedDiffer are those of specChanged whose fate differs from the real kubelet's.
	specChangedDiffer int
	// casesFilePodsJudged are the cases whose every pod the files hold is judged (and equal).
	casesFilePodsJudged int
}

// TestRestartFromFilesMatchesTheRealKubelet rebuilds each restart case's pods from its
// checkpoints alone (no pod.json), finds the plugins in its device checkpoint, replays the case's
// restart (its runtime's containers, its sources, its plugins' registrations), and compares every
// pod the rebuild judges with the real kubelet's fate: all must be equal, but for a pod whose
// spec the case changed after the files were written (the files cannot know it; counted).
func TestRestartFromFilesMatchesTheRealKubelet(t *testing.T) {
	sets, err := vectorpack.ReadGlob(restartVectors)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 {
		t.Fatalf("no restart vectors: %s", restartVectors)
	}
	var all rebuildTally
	for _, set := range sets {
		kubelet := set.MetaString("kubelet")
		tally := rebuildTally{notJudged: map[string]int{}, notInFiles: map[string]int{}}
		for _, c := range set.Cases {
			var want expectedCase
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatalf("%s %s: %v", set.Name, c.Name, err)
			}
			if !want.Starts {
				continue
			}
			tally.cases++
			if diff := rebuildCase(t, c, kubelet, want, false, &tally); diff != "" {
				t.Errorf("%s %s: %s", set.Name, c.Name, diff)
			}
		}
		t.Logf("%s: %d cases: %d with every pod judged, %d with every pod the files hold judged; %d pods: %d judged equal to the real kubelet (%d with the checkpoint's plugins only), %d spec changed after the files (%d of them fare otherwise); not judged %v; not in the files %v",
			kubelet, tally.cases, tally.casesJudged, tally.casesFilePodsJudged, tally.pods, tally.equal, tally.equalFilesOnly, tally.specChanged, tally.specChangedDiffer, tally.notJudged, tally.notInFiles)
		if tally.equal == 0 {
			t.Errorf("%s: the rebuild judged no pod", kubelet)
		}
		all.add(tally)
	}
	t.Logf("all releases: %d cases: %d with every pod judged, %d with every pod the files hold judged; %d pods: %d judged equal (%d with the checkpoint's plugins only), %d spec changed after the files (%d of them fare otherwise); not judged %v; not in the files %v",
		all.cases, all.casesJudged, all.casesFilePodsJudged, all.pods, all.equal, all.equalFilesOnly, all.specChanged, all.specChangedDiffer, all.notJudged, all.notInFiles)
}

// The same cases with the pods' UIDs sorting against their creation order: the files give no
// creation times, so every pod whose fate depends on the order must be not judged (the rebuild
// re-admits them in the wrong order), and every pod judged still equals the real kubelet.
func TestRestartFromFilesWithoutTheOrder(t *testing.T) {
	set, err := vectorpack.ReadFile(filepath.Join(admissionVectorsDir, "v1.37.1-restart"+vectorpack.Ext))
	if err != nil {
		t.Fatal(err)
	}
	tally := rebuildTally{notJudged: map[string]int{}, notInFiles: map[string]int{}}
	for _, c := range set.Cases {
		var want expectedCase
		if err := json.Unmarshal(c.Expected, &want); err != nil {
			t.Fatal(err)
		}
		if diff := rebuildCase(t, c, set.MetaString("kubelet"), want, true, &tally); diff != "" {
			t.Errorf("%s: %s", c.Name, diff)
		}
	}
	t.Logf("UIDs reversed: %d pods judged equal; not judged %v", tally.equal, tally.notJudged)
	if tally.equal == 0 || tally.notJudged[whyClass(notJudgedOrder)] == 0 {
		t.Errorf("the reversed order exercised nothing: %d equal, not judged %v", tally.equal, tally.notJudged)
	}
}

func (a *rebuildTally) add(b rebuildTally) {
	a.cases, a.casesJudged, a.pods, a.equal, a.specChanged = a.cases+b.cases, a.casesJudged+b.casesJudged, a.pods+b.pods, a.equal+b.equal, a.specChanged+b.specChanged
	a.equalFilesOnly, a.specChangedDiffer, a.casesFilePodsJudged = a.equalFilesOnly+b.equalFilesOnly, a.specChangedDiffer+b.specChangedDiffer, a.casesFilePodsJudged+b.casesFilePodsJudged
	for _, m := range []struct {
		into *map[string]int
		from map[string]int
	}{{&a.notJudged, b.notJudged}, {&a.notInFiles, b.notInFiles}} {
		if *m.into == nil {
			*m.into = map[string]int{}
		}
		for k, n := range m.from {
			(*m.into)[k] += n
		}
	}
}

// rebuildCase replays one case from its files and tallies its pods; it returns the first pod
// judged otherwise than the real kubelet.
func rebuildCase(t *testing.T, c vectorpack.Case, kubelet string, want expectedCase, reverseUIDs bool, tally *rebuildTally) string {
	t.Helper()
	in := caseInput(t, c, kubelet, true)
	if reverseUIDs {
		in, want = withUIDsReversed(in, want)
	}
	casePods := in.Pods
	rb := RebuildPods(RebuildInput{CPU: in.CPU, Memory: in.Memory, Devices: in.Devices.Checkpoint})
	// The plugins are the device checkpoint's; one that registers during the case reports then
	// what the case's plugin reports (its devices' health and NUMA nodes), which no file holds.
	plugins, _ := FilePlugins(in.Devices.Checkpoint)
	if plugins == nil {
		plugins = map[string][]replay.Device{}
	}
	fromFiles := true
	for resource, devices := range in.Devices.Plugins {
		if in.Restart.Register[resource] <= len(casePods) {
			plugins[resource] = devices
			fromFiles = false
		}
	}
	in.Devices = &replay.DeviceInput{Plugins: plugins, Checkpoint: in.Devices.Checkpoint}
	in.Restart = rebuiltRegistrations(in.Restart, casePods, rb)
	res, err := PredictRestartRebuilt(in, rb)
	if err != nil {
		return err.Error()
	}
	index := map[string]int{}
	for i, p := range casePods {
		index[string(p.UID)] = i
	}
	whole, filePodsJudged := true, 0
	seen := map[string]bool{}
	for i, f := range res.Fates {
		j, ok := index[f.UID]
		if !ok {
			continue // a holder the API server no longer has: the kubelet re-admits no such pod
		}
		seen[f.UID] = true
		tally.pods++
		if f.NotJudged {
			tally.notJudged[whyClass(f.Why)]++
			whole = false
			filePodsJudged = -len(res.Fates)
			continue
		}
		w := want.Pods[j]
		got := f.Fate == FateComesBack
		same := got == w.Admit && (got || f.Reason == w.Reason && f.Message == w.Message)
		if changed := specDiffers(rb.Pods[i].Pod, casePods[j]); changed {
			tally.specChanged++
			if !same {
				tally.specChangedDiffer++
			}
			whole = false
			continue
		}
		filePodsJudged++
		if !same {
			return fmt.Sprintf("pod %s: rebuilt from %v: %s %q, the real kubelet: admit=%v %q", f.UID, rb.Pods[i].Sources, f.Fate, f.Message, w.Admit, w.Message)
		}
		tally.equal++
		if fromFiles {
			tally.equalFilesOnly++
		}
	}
	for _, p := range casePods {
		if seen[string(p.UID)] {
			continue
		}
		tally.pods++
		whole = false
		if asksTheManagersNothing(p) {
			// In no checkpoint, and nothing for the managers to refuse: it comes back.
			if w := want.Pods[index[string(p.UID)]]; !w.Admit {
				return fmt.Sprintf("pod %s asks the managers for nothing, yet the real kubelet refused it: %q", p.UID, w.Message)
			}
			tally.notInFiles["asks the managers for nothing (comes back)"]++
			continue
		}
		tally.notInFiles["a new pod: asks for devices or exclusive CPUs, in no checkpoint"]++
	}
	if whole {
		tally.casesJudged++
	}
	if filePodsJudged > 0 {
		tally.casesFilePodsJudged++
	}
	return ""
}

// withUIDsReversed renames the case's pods so that their UIDs sort in the reverse of their
// creation order, in its pods, its decoded checkpoints, its runtime's containers and its
// expectations: the files then give the rebuild the wrong order.
func withUIDsReversed(in Input, want expectedCase) (Input, expectedCase) {
	rename := map[string]string{}
	for i, p := range in.Pods {
		rename[string(p.UID)] = fmt.Sprintf("uid-%03d-%s", len(in.Pods)-i, p.UID)
	}
	to := func(uid string) string {
		if r, ok := rename[uid]; ok {
			return r
		}
		return uid
	}
	renameKeys := func(m map[string]map[string]bool) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for k, v := range m {
			out[to(k)] = v
		}
		return out
	}
	for i, p := range in.Pods {
		p = p.DeepCopy()
		p.UID = types.UID(to(string(p.UID)))
		in.Pods[i] = p
	}
	if cpu := cpuState(in.CPU); cpu != nil {
		entries := map[string]map[string]string{}
		for uid, e := range cpu.Entries {
			entries[to(uid)] = e
		}
		cpu.Entries = entries
	}
	if mem := memoryState(in.Memory); mem != nil {
		entries := map[string]map[string][]decode.MemoryBlock{}
		for uid, e := range mem.Entries {
			entries[to(uid)] = e
		}
		mem.Entries = entries
	}
	if dev := deviceState(in.Devices.Checkpoint); dev != nil {
		for i := range dev.PodDeviceEntries {
			dev.PodDeviceEntries[i].PodUID = to(dev.PodDeviceEntries[i].PodUID)
		}
	}
	if in.Restart != nil {
		r := *in.Restart
		r.Running, r.Exited = renameKeys(r.Running), renameKeys(r.Exited)
		in.Restart = &r
	}
	pods := slices.Clone(want.Pods)
	for i := range pods {
		pods[i].UID = to(pods[i].UID)
	}
	want.Pods = pods
	return in, want
}

// rebuiltRegistrations moves the case's registrations (after so many of its pods) onto the
// rebuilt pods judged: a plugin registering before case pod k registers before the first
// judged rebuilt pod that comes at or after k.
func rebuiltRegistrations(r *Restart, casePods []*v1.Pod, rb Rebuild) *Restart {
	if r == nil {
		return nil
	}
	out := *r
	out.Register = map[string]int{}
	index := map[string]int{}
	for i, p := range casePods {
		index[string(p.UID)] = i
	}
	for resource, k := range r.Register {
		if k > len(casePods) {
			out.Register[resource] = len(rb.Pods) + 1 // never
			continue
		}
		n := 0
		for _, p := range rb.Pods {
			if i, ok := index[string(p.Pod.UID)]; ok && i < k && p.NotJudged == "" {
				n++
			}
		}
		out.Register[resource] = n
	}
	return &out
}

// specDiffers: the case's pod asks for other devices or CPUs than the rebuilt one, which asks
// for what its containers hold.
func specDiffers(rebuilt, given *v1.Pod) bool {
	limits := map[string]v1.ResourceList{}
	for _, c := range podContainersOf(given) {
		limits[c.Name] = c.Resources.Limits
	}
	for _, c := range podContainersOf(rebuilt) {
		for name, q := range c.Resources.Limits {
			if name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				continue // blocks may exceed the request
			}
			if g, ok := limits[c.Name][name]; !ok || !g.Equal(q) {
				return true
			}
		}
	}
	return false
}

// whyClass is a not-judged reason without its pod's particulars.
func whyClass(why string) string {
	for _, prefix := range []string{"its containers' types", "it has pod-level resources", "its fate depends on the order", "its spec asks"} {
		if strings.HasPrefix(why, prefix) {
			return prefix
		}
	}
	return why
}

// asksTheManagersNothing: no device-plugin resource, and no container whose CPU or memory
// request equals its limit (what a Guaranteed pod's exclusive CPUs or memory blocks need).
func asksTheManagersNothing(p *v1.Pod) bool {
	for _, c := range podContainersOf(p) {
		for name, limit := range c.Resources.Limits {
			req, ok := c.Resources.Requests[name]
			if IsExtendedResource(name) || (name == v1.ResourceCPU || name == v1.ResourceMemory) && (!ok || req.Equal(limit)) {
				return false
			}
		}
	}
	return true
}

// allocationReport decodes a real kubelet's allocated_pods_state for kubelet.
func allocationReport(t *testing.T, file, kubelet string) *decode.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../testdata/kubelet/allocated_pods_state", file))
	if err != nil {
		t.Fatal(err)
	}
	k, err := decode.ParseKubelet(kubelet, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := decode.Decode(decode.KindAllocated, b, decode.Options{Kubelet: &k})
	if rep.Verdict != decode.Valid {
		t.Fatalf("%s: %s %s", file, rep.Verdict, rep.Error)
	}
	return rep
}

// The allocation files of real kubelets: 1.38's V2 gives each pod's name and containers by
// type (an init-container pod is judged); a V1 file gives containers without their types (a pod
// of two is not judged), and so does a V2 file the kubelet migrated from V1 (no names).
func TestRebuildFromAllocationFiles(t *testing.T) {
	for _, tc := range []struct {
		file, kubelet string
		// want is pod UID -> name, its init and app containers, and whether it is judged.
		want map[string]string
	}{
		{"v1.38.0-beta.0/two-pods.json", "v1.38.0-beta.0", map[string]string{
			"3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c": "default/web-0 init=0 app=2 judged",
			"9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d": "jobs/batch-1 init=2 app=1 judged"}},
		{"v1.37.1/one-pod-two-containers.json", "v1.37.1", map[string]string{
			"3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c": "/3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c init=0 app=2 not judged"}},
		{"v1.38.0-beta.0/upgraded-from-v1.json", "v1.38.0-beta.0", map[string]string{
			"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f": "/1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f init=0 app=1 judged",
			"3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c": "/3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c init=0 app=2 not judged"}},
	} {
		rb := RebuildPods(RebuildInput{Allocation: allocationReport(t, tc.file, tc.kubelet)})
		got := map[string]string{}
		for _, p := range rb.Pods {
			judged := "judged"
			if p.NotJudged != "" {
				judged = "not judged"
			}
			got[string(p.Pod.UID)] = fmt.Sprintf("%s/%s init=%d app=%d %s", p.Pod.Namespace, p.Pod.Name, len(p.Pod.Spec.InitContainers), len(p.Pod.Spec.Containers), judged)
			if p.OwnerKnown {
				t.Errorf("%s: pod %s: the owner is not in the file", tc.file, p.Pod.UID)
			}
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.file, got, tc.want)
		}
		if rb.OrderKnown {
			t.Errorf("%s: no allocation file holds creation times", tc.file)
		}
	}
}

// A V2 pod whose spec asks for other CPUs or devices than its containers hold (a resize the node
// has not actuated, or a checkpoint of another pod's making) is not judged; one that asks for
// what it holds is.
func TestRebuildV2HeldAgainstSpec(t *testing.T) {
	const web = "3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c" // web-0: app asks for 1 CPU, no device
	alloc := allocationReport(t, "v1.38.0-beta.0/two-pods.json", "v1.38.0-beta.0")
	cpu := func(set string) *decode.Report {
		return &decode.Report{Kind: decode.KindCPU, Verdict: decode.Valid, Decoded: decode.Model{CPU: &decode.CPUState{PolicyName: "static",
			Entries: map[string]map[string]string{web: {"app": set}}}}}
	}
	gpu := &decode.Report{Kind: decode.KindDevices, Verdict: decode.Valid, Decoded: decode.Model{Devices: &decode.DeviceState{
		PodDeviceEntries:  []decode.DeviceEntry{{PodUID: web, ContainerName: "app", ResourceName: "nvidia.com/gpu", DevicesPerNUMA: map[int64][]string{0: {"gpu-0"}}}},
		RegisteredDevices: map[string][]string{"nvidia.com/gpu": {"gpu-0"}}}}}
	for _, tc := range []struct {
		name      string
		in        RebuildInput
		wantJudge bool
	}{
		{"holds the CPU it asks for", RebuildInput{Allocation: alloc, CPU: cpu("1")}, true},
		{"holds two CPUs, asks for one", RebuildInput{Allocation: alloc, CPU: cpu("1-2")}, false},
		{"holds a GPU it does not ask for", RebuildInput{Allocation: alloc, Devices: gpu}, false},
	} {
		rb := RebuildPods(tc.in)
		i := slices.IndexFunc(rb.Pods, func(p RebuiltPod) bool { return string(p.Pod.UID) == web })
		if i < 0 {
			t.Fatalf("%s: web-0 not rebuilt", tc.name)
		}
		if got := rb.Pods[i].NotJudged == ""; got != tc.wantJudge || !tc.wantJudge && !strings.HasPrefix(rb.Pods[i].NotJudged, "its spec asks") {
			t.Errorf("%s: not judged %q", tc.name, rb.Pods[i].NotJudged)
		}
	}
}

// The plugins of a real kubelet 1.37.1's device checkpoint: every registered resource with its
// devices, each held one on the NUMA node the checkpoint records (none for -1), the others
// without topology, and said.
func TestFilePlugins(t *testing.T) {
	b, err := os.ReadFile("../../testdata/kubelet/kubelet_internal_checkpoint/v1.37.1/multi-resource.json")
	if err != nil {
		t.Fatal(err)
	}
	k, err := decode.ParseKubelet("v1.37.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	plugins, unplaced := FilePlugins(decode.Decode(decode.KindDevices, b, decode.Options{Kubelet: &k}))
	got := map[string]string{}
	for resource, devices := range plugins {
		for _, d := range devices {
			numa := "-"
			if d.Topology != nil {
				numa = fmt.Sprint(d.Topology.Nodes)
			}
			got[resource+" "+d.ID] = d.Health + " " + numa
		}
	}
	want := map[string]string{
		"nvidia.com/gpu GPU-8c1f3b2e-5d6a-4f7b-9e0c-1a2b3c4d5e6f": "Healthy [{0}]",
		"nvidia.com/gpu GPU-2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a": "Healthy [{0}]",
		"nvidia.com/gpu GPU-7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b": "Healthy [{1}]",
		"nvidia.com/gpu GPU-4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d": "Healthy [{1}]",
		"intel.com/sriov_netdevice 0000:3b:02.0":                  "Healthy -",
		"intel.com/sriov_netdevice 0000:3b:02.1":                  "Healthy -",
		"intel.com/sriov_netdevice 0000:af:02.0":                  "Healthy -",
		"intel.com/sriov_netdevice 0000:af:02.1":                  "Healthy [{1}]",
		"example.com/fpga fpga-0":                                 "Healthy -",
		"example.com/fpga fpga-1":                                 "Healthy -",
	}
	if !maps.Equal(got, want) {
		t.Errorf("plugins:\n got %v\nwant %v", got, want)
	}
	if wantUnplaced := []string{"example.com/fpga: 1 of 2 devices held by no pod, NUMA node not known",
		"intel.com/sriov_netdevice: 3 of 4 devices held by no pod, NUMA node not known"}; !slices.Equal(unplaced, wantUnplaced) {
		t.Errorf("unplaced: %q", unplaced)
	}
}
