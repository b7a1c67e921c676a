package admit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// The admission vectors: what the real topology, CPU and memory managers of a kubelet release
// did when they admitted each case's pods (testdata/admission/<release>/, see its README).
// Every directory holding a MANIFEST.json is a release, keyed by the manifest's "kubelet".
const admissionVectorsDir = "../../testdata/admission"

type admissionManifest struct {
	Schema  string `json:"schema"`
	Kubelet string `json:"kubelet"`
	Cases   map[string]struct {
		Dir      string          `json:"dir"`
		Files    []string        `json:"files"`
		Expected json.RawMessage `json:"expected"`
	} `json:"cases"`
}

type expectedCase struct {
	Starts          bool          `json:"starts"`
	Phase           string        `json:"phase"`
	StartError      string        `json:"startError"`
	AllocatableCPUs string        `json:"allocatableCPUs"`
	Pods            []expectedPod `json:"pods"`
}

type expectedPod struct {
	Pod        string                       `json:"pod"`
	Admit      bool                         `json:"admit"`
	Hangs      bool                         `json:"hangs"`
	Reason     string                       `json:"reason"`
	Message    string                       `json:"message"`
	Containers map[string]expectedContainer `json:"containers"`
	PodCPUs    string                       `json:"podCPUs"`
	StateAfter *struct {
		DefaultCPUSet     string                                     `json:"defaultCpuSet"`
		CPUAssignments    map[string]map[string]string               `json:"cpuAssignments"`
		MemoryAssignments map[string]map[string][]decode.MemoryBlock `json:"memoryAssignments"`
		PodCPUSets        map[string]string                          `json:"podCpuSets"`
		PodMemory         map[string][]decode.MemoryBlock            `json:"podMemory"`
	} `json:"stateAfter"`
}

type expectedContainer struct {
	CPUs         string               `json:"cpus"`
	Exclusive    bool                 `json:"exclusive"`
	MemoryNUMA   []int                `json:"memoryNUMA"`
	MemoryBlocks []decode.MemoryBlock `json:"memoryBlocks"`
}

// releaseDirs are the directories under testdata/admission that hold a MANIFEST.json.
func releaseDirs(t testing.TB) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(admissionVectorsDir, "*", "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) == 0 {
		t.Fatal("no admission vectors under " + admissionVectorsDir)
	}
	dirs := make([]string, len(matches))
	for i, m := range matches {
		dirs[i] = filepath.Dir(m)
	}
	return dirs
}

func loadAdmissionManifest(t testing.TB, dir string) admissionManifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man admissionManifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if man.Kubelet == "" || len(man.Cases) == 0 {
		t.Fatalf("%s: manifest names no kubelet or no cases", dir)
	}
	return man
}

// caseInput loads a case as the engine's input: the machine and its kubelet section, the
// checkpoints decoded for the manifest's kubelet, and the pods in order.
func caseInput(t testing.TB, dir, kubelet string, files []string) Input {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s: manifest lists %s: %v", dir, f, err)
		}
	}
	m, err := machine.Parse(read("machine.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := replay.ParseKubeletConfig(m.Kubelet)
	if err != nil {
		t.Fatal(err)
	}
	k, err := decode.ParseKubelet(kubelet, cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Machine: m, Config: cfg, Kubelet: k}
	for _, f := range files {
		kind, ok := decode.ParseKind(f)
		if !ok {
			continue
		}
		rep := decode.Decode(kind, read(f), decode.Options{Kubelet: &k})
		switch kind {
		case decode.KindCPU:
			in.CPU = rep
		case decode.KindMemory:
			in.Memory = rep
		}
	}
	for _, f := range []string{"pod.json", "pod2.json"} {
		if !slices.Contains(files, f) {
			continue
		}
		var p v1.Pod
		if err := json.Unmarshal(read(f), &p); err != nil {
			t.Fatal(err)
		}
		in.Pods = append(in.Pods, &p)
	}
	return in
}

// compareCase returns the first difference between the prediction and the real kubelet.
func compareCase(got Result, want expectedCase) string {
	p := got.KubeletStart
	if p.Starts != want.Starts || p.Phase != want.Phase || p.Error != want.StartError {
		return fmt.Sprintf("start: got starts=%v phase=%s error=%q, want starts=%v phase=%s error=%q", p.Starts, p.Phase, p.Error, want.Starts, want.Phase, want.StartError)
	}
	if !want.Starts {
		if len(got.Admissions) != 0 {
			return "admissions predicted on a kubelet that does not start"
		}
		return ""
	}
	if got.AllocatableCPUs != want.AllocatableCPUs {
		return fmt.Sprintf("allocatable CPUs: got %q, want %q", got.AllocatableCPUs, want.AllocatableCPUs)
	}
	// The real kubelet records no pod after one whose admission never returns; the prediction
	// lists them as not reached.
	if n := len(want.Pods); len(got.Admissions) < n || len(got.Admissions) > n && (n == 0 || !want.Pods[n-1].Hangs) {
		return fmt.Sprintf("got %d admissions, want %d", len(got.Admissions), len(want.Pods))
	}
	for _, a := range got.Admissions[len(want.Pods):] {
		if !a.NotReached || a.Admitted {
			return fmt.Sprintf("pod %s after a hanging admission: admitted=%v notReached=%v, want not reached", a.Pod, a.Admitted, a.NotReached)
		}
	}
	for i, w := range want.Pods {
		a := got.Admissions[i]
		if a.Hangs != w.Hangs {
			return fmt.Sprintf("pod %s: got hangs=%v (%s), want hangs=%v", w.Pod, a.Hangs, a.Message, w.Hangs)
		}
		if w.Hangs {
			if a.Admitted {
				return fmt.Sprintf("pod %s: admitted, want a hang", w.Pod)
			}
			continue // the kubelet says nothing more of it
		}
		if a.Admitted != w.Admit || a.Reason != w.Reason || a.Message != w.Message {
			return fmt.Sprintf("pod %s: got admit=%v %s %q, want admit=%v %s %q", w.Pod, a.Admitted, a.Reason, a.Message, w.Admit, w.Reason, w.Message)
		}
		if a.PodCPUs != w.PodCPUs {
			return fmt.Sprintf("pod %s: pod CPUs %q, want %q", w.Pod, a.PodCPUs, w.PodCPUs)
		}
		if len(a.Containers) != len(w.Containers) {
			return fmt.Sprintf("pod %s: %d containers, want %d", w.Pod, len(a.Containers), len(w.Containers))
		}
		for _, c := range a.Containers {
			wc, ok := w.Containers[c.Name]
			if !ok {
				return fmt.Sprintf("pod %s: container %s not expected", w.Pod, c.Name)
			}
			if c.CPUs != wc.CPUs || c.Exclusive != wc.Exclusive {
				return fmt.Sprintf("pod %s container %s: cpus %q exclusive=%v, want %q exclusive=%v", w.Pod, c.Name, c.CPUs, c.Exclusive, wc.CPUs, wc.Exclusive)
			}
			if len(c.MemoryNUMANodes) != len(wc.MemoryNUMA) || !slices.Equal(c.MemoryNUMANodes, wc.MemoryNUMA) && len(wc.MemoryNUMA) > 0 {
				return fmt.Sprintf("pod %s container %s: memory NUMA %v, want %v", w.Pod, c.Name, c.MemoryNUMANodes, wc.MemoryNUMA)
			}
			if !sameBlocks(c.MemoryBlocks, wc.MemoryBlocks) {
				return fmt.Sprintf("pod %s container %s: memory blocks %v, want %v", w.Pod, c.Name, c.MemoryBlocks, wc.MemoryBlocks)
			}
		}
		if d := freeBeforeRefusal(a, w, want.AllocatableCPUs); d != "" {
			return d
		}
		if s := w.StateAfter; s != nil {
			st := a.StateAfter
			if st.DefaultCPUSet.String() != s.DefaultCPUSet {
				return fmt.Sprintf("pod %s: default cpuset after %q, want %q", w.Pod, st.DefaultCPUSet, s.DefaultCPUSet)
			}
			gotAssign := map[string]map[string]string{}
			for pod, ctrs := range st.CPUAssignments {
				gotAssign[pod] = map[string]string{}
				for ctr, set := range ctrs {
					gotAssign[pod][ctr] = set.String()
				}
			}
			if !reflect.DeepEqual(gotAssign, nonNil(s.CPUAssignments)) {
				return fmt.Sprintf("pod %s: CPU assignments after %v, want %v", w.Pod, gotAssign, s.CPUAssignments)
			}
			if s.MemoryAssignments != nil {
				for _, pod := range slices.Sorted(maps.Keys(s.MemoryAssignments)) {
					for ctr, blocks := range s.MemoryAssignments[pod] {
						if !sameBlocks(st.MemoryAssignments[pod][ctr], blocks) {
							return fmt.Sprintf("pod %s: memory of %s/%s after %v, want %v", w.Pod, pod, ctr, st.MemoryAssignments[pod][ctr], blocks)
						}
					}
				}
				if len(st.MemoryAssignments) != len(s.MemoryAssignments) {
					return fmt.Sprintf("pod %s: memory assignments after %v, want %v", w.Pod, st.MemoryAssignments, s.MemoryAssignments)
				}
			}
			// The pod-level entries (the vectors of releases whose state has them).
			gotPodCPUs := map[string]string{}
			for pod, set := range st.PodCPUSets {
				gotPodCPUs[pod] = set.String()
			}
			if len(gotPodCPUs)+len(s.PodCPUSets) > 0 && !reflect.DeepEqual(gotPodCPUs, s.PodCPUSets) {
				return fmt.Sprintf("pod %s: pod-level CPU sets after %v, want %v", w.Pod, gotPodCPUs, s.PodCPUSets)
			}
			if len(st.PodMemory) != len(s.PodMemory) {
				return fmt.Sprintf("pod %s: pod-level memory after %v, want %v", w.Pod, st.PodMemory, s.PodMemory)
			}
			for pod, blocks := range s.PodMemory {
				if !sameBlocks(st.PodMemory[pod], blocks) {
					return fmt.Sprintf("pod %s: pod-level memory of %s after %v, want %v", w.Pod, pod, st.PodMemory[pod], blocks)
				}
			}
		}
	}
	return ""
}

// freeBeforeRefusal: the free CPUs a refused pod is told it found are the kubelet's. A pod
// refused with nothing allocated leaves the state as it found it, so the kubelet's state after
// it, less the reserved CPUs, is what was free.
func freeBeforeRefusal(a Admission, w expectedPod, allocatable string) string {
	s := w.StateAfter
	if a.Admitted || a.Before == nil || s == nil || s.CPUAssignments[a.UID] != nil {
		return ""
	}
	defaultSet, err1 := cpuset.Parse(s.DefaultCPUSet)
	allocatableSet, err2 := cpuset.Parse(allocatable)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Sprintf("pod %s: %v", w.Pod, err)
	}
	free := defaultSet.Intersection(allocatableSet)
	if a.Before.FreeCPUs != free.String() {
		return fmt.Sprintf("pod %s: refused with free CPUs %q before it, the kubelet's state says %q", w.Pod, a.Before.FreeCPUs, free)
	}
	return ""
}

// freeMemoryBeforeFirst: the free memory the first pod, if refused, is told it found is the
// free memory of the memory manager's checkpoint the real kubelet wrote (Static policy).
func freeMemoryBeforeFirst(in Input, got Result) string {
	if in.Memory == nil || in.Memory.Decoded.Memory == nil || in.Memory.Decoded.Memory.PolicyName != "Static" || len(got.Admissions) == 0 || got.Admissions[0].Before == nil {
		return ""
	}
	want := map[int]NodeFree{}
	for id, node := range in.Memory.Decoded.Memory.MachineState {
		want[id] = NodeFree{}
		for name, t := range node.MemoryMap {
			want[id][name] = t.Free
		}
	}
	if a := got.Admissions[0]; !reflect.DeepEqual(a.Before.FreeMemory, want) {
		return fmt.Sprintf("pod %s: refused with free memory %v before it, the checkpoint says %v", a.Pod, a.Before.FreeMemory, want)
	}
	return ""
}

func nonNil(m map[string]map[string]string) map[string]map[string]string {
	if m == nil {
		return map[string]map[string]string{}
	}
	return m
}

func sameBlocks(a, b []decode.MemoryBlock) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(x decode.MemoryBlock) string { return fmt.Sprintf("%s/%d/%v", x.Type, x.Size, x.NUMAAffinity) }
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = key(a[i]), key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// TestAdmissionConformance replays every case of every release's vectors and compares with
// what the real kubelet did. The count comes from each manifest; a missing file fails.
func TestAdmissionConformance(t *testing.T) {
	total := 0
	for _, dir := range releaseDirs(t) {
		man := loadAdmissionManifest(t, dir)
		// Every case directory is in the manifest and every manifest case has its directory.
		onDisk, err := filepath.Glob(filepath.Join(dir, "cases", "*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(onDisk) != len(man.Cases) {
			t.Errorf("%s: %d case directories, %d cases in MANIFEST.json", man.Kubelet, len(onDisk), len(man.Cases))
		}
		matched := 0
		for _, name := range slices.Sorted(maps.Keys(man.Cases)) {
			c := man.Cases[name]
			var want expectedCase
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatalf("%s %s: %v", man.Kubelet, name, err)
			}
			// The case's own expected.json says what the manifest says.
			if b, err := os.ReadFile(filepath.Join(dir, c.Dir, "expected.json")); err != nil {
				t.Errorf("%s %s: %v", man.Kubelet, name, err)
			} else if onFile := (expectedCase{}); json.Unmarshal(b, &onFile) != nil || !reflect.DeepEqual(onFile, want) {
				t.Errorf("%s %s: expected.json differs from MANIFEST.json", man.Kubelet, name)
			}
			in := caseInput(t, filepath.Join(dir, c.Dir), man.Kubelet, c.Files)
			got, err := Predict(in)
			if err != nil {
				t.Errorf("%s %s: %v", man.Kubelet, name, err)
				continue
			}
			diff := compareCase(got, want)
			if diff == "" {
				diff = freeMemoryBeforeFirst(in, got)
			}
			if diff != "" {
				t.Errorf("%s %s: %s", man.Kubelet, name, diff)
				continue
			}
			matched++
		}
		total += len(man.Cases)
		t.Logf("admission conformance %s: %d of %d cases match the real kubelet", man.Kubelet, matched, len(man.Cases))
	}
	t.Logf("admission conformance: %d cases", total)
}
