package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// gpuResults: one node admits the pod on two equivalent GPUs of NUMA node 1 and an arbitrary
// NIC without topology, one refuses it and says what would fit.
func gpuResults() []AdmitResult {
	ok := AdmitResult{Node: "gpu-a"}
	ok.KubeletStart.Starts = true
	ok.Admissions = []nodestate.Admission{{Pod: "train", Namespace: "ml", Admitted: true, Containers: []nodestate.AdmittedContainer{{
		Name: "app", CPUs: "8-11", Exclusive: true, CPUNUMANodes: []int{1}, MemoryNUMANodes: []int{1},
		Devices:         map[string][]string{"nvidia.com/gpu": {"gpu-2", "gpu-3"}, "example.com/nic": {"nic-0"}},
		DeviceNUMANodes: map[string]map[string][]int{"nvidia.com/gpu": {"gpu-2": {1}, "gpu-3": {1}}, "example.com/nic": {"nic-0": {}}},
		DevicesPick:     map[string]string{"nvidia.com/gpu": nodestate.DevicePickEquivalent, "example.com/nic": nodestate.DevicePickArbitrary},
	}}}}
	no := AdmitResult{Node: "gpu-b", LargestDeviceRequest: map[string]map[string]int{"train": {"nvidia.com/gpu": 1}}}
	no.KubeletStart.Starts = true
	no.Admissions = []nodestate.Admission{{Pod: "train", Namespace: "ml", Reason: "TopologyAffinityError", Message: "Resources cannot be allocated with Topology locality"}}
	return []AdmitResult{ok, no}
}

func TestAdmitDevicesColumn(t *testing.T) {
	var out bytes.Buffer
	if err := Admit(&out, Options{Format: Table, ShowNode: true}, gpuResults()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for _, want := range []string{"NODE", "DEVICES", "REASON"} {
		if !strings.Contains(lines[0], want) || strings.Contains(lines[0], "CPU-NUMA") {
			t.Errorf("header %q: want %s and no CPU-NUMA", lines[0], want)
		}
	}
	for _, want := range []string{
		"example.com/nic nic-0 no NUMA~; nvidia.com/gpu gpu-2,gpu-3 NUMA 1*",
		"* devices: " + nodestate.DevicePickEquivalent,
		"~ devices: " + nodestate.DevicePickArbitrary,
		"ml/train on gpu-b: what would fit: 1 nvidia.com/gpu with the pod's CPUs and memory",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := Admit(&out, Options{Format: Wide, ShowNode: true}, gpuResults()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "CPU-NUMA") || !strings.Contains(out.String(), "8-11   1 ") {
		t.Errorf("wide:\n%s", out.String())
	}
	if got := AdmitWhere(gpuResults()[0]); got != "NUMA 1" {
		t.Errorf("where %q", got)
	}
	// Without devices no DEVICES column, unless wide.
	plain := gpuResults()[1:]
	out.Reset()
	if err := Admit(&out, Options{Format: Table}, plain); err != nil || strings.Contains(out.String(), "DEVICES") {
		t.Errorf("no devices: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Admit(&out, Options{Format: Wide}, plain); err != nil || !strings.Contains(out.String(), "DEVICES") {
		t.Errorf("wide, no devices: %v\n%s", err, out.String())
	}
	// A streamed fleet's first block may hold no device: the pods asking for some decide.
	out.Reset()
	if err := Admit(&out, Options{Format: Table, Stream: true, Devices: true}, plain); err != nil || !strings.Contains(out.String(), "DEVICES") {
		t.Errorf("pods asking devices, first block without: %v\n%s", err, out.String())
	}
}

// The JSON contract: each admitted container's "devices" per resource, their NUMA nodes, and the
// pick; a refused pod's largest device request.
func TestAdmitDevicesJSON(t *testing.T) {
	var out bytes.Buffer
	if err := Admit(&out, Options{Format: JSON}, gpuResults()[:1]); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Admissions []struct {
			Containers []struct {
				Devices         map[string][]string         `json:"devices"`
				DeviceNUMANodes map[string]map[string][]int `json:"deviceNUMANodes"`
				DevicesPick     map[string]string           `json:"devicesPick"`
				CPUNUMANodes    []int                       `json:"cpuNUMANodes"`
			} `json:"containers"`
		} `json:"admissions"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Admissions) != 1 {
		t.Fatalf("%v\n%s", err, out.String())
	}
	c := got.Admissions[0].Containers[0]
	if strings.Join(c.Devices["nvidia.com/gpu"], ",") != "gpu-2,gpu-3" || c.DeviceNUMANodes["nvidia.com/gpu"]["gpu-3"][0] != 1 ||
		c.DevicesPick["nvidia.com/gpu"] != nodestate.DevicePickEquivalent || len(c.CPUNUMANodes) != 1 {
		t.Errorf("container %+v", c)
	}
	out.Reset()
	if err := Admit(&out, Options{Format: JSON}, gpuResults()[1:]); err != nil || !strings.Contains(out.String(), `"largestDeviceRequest"`) {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// threeAnswers: gpu-a admits both pods, gpu-b refuses the first (proven before any device), and
// gpu-c, whose devices were not replayed, cannot judge the GPU pod nor the pod after it.
func threeAnswers() []AdmitResult {
	admitted := func(pod string) nodestate.Admission {
		return nodestate.Admission{Pod: pod, Namespace: "ml", Verdict: nodestate.AdmissionAdmitted, Admitted: true,
			Containers: []nodestate.AdmittedContainer{{Name: "app", CPUs: "2-3", Exclusive: true, CPUNUMANodes: []int{0}, MemoryNUMANodes: []int{0}}}}
	}
	yes := AdmitResult{Node: "gpu-a", AdmitPrediction: nodestate.AdmitPrediction{Admissions: []nodestate.Admission{admitted("train"), admitted("side")}}}
	no := AdmitResult{Node: "gpu-b", AdmitPrediction: nodestate.AdmitPrediction{Admissions: []nodestate.Admission{{Pod: "train", Namespace: "ml", Verdict: nodestate.AdmissionRefused,
		Reason: "TopologyAffinityError", Message: "Resources cannot be allocated with Topology locality"}, admitted("side")}}}
	unknown := AdmitResult{Node: "gpu-c", AdmitPrediction: nodestate.AdmitPrediction{Admissions: []nodestate.Admission{
		{Pod: "train", Namespace: "ml", Verdict: nodestate.AdmissionNotJudged, Containers: []nodestate.AdmittedContainer{},
			NotJudged: []string{"devices: device plugin resource nvidia.com/gpu: give --devices FILE"},
			Why:       []string{"replayed without its devices: admitted (app CPUs 2-3, memory NUMA 0)"}},
		{Pod: "side", Namespace: "ml", Verdict: nodestate.AdmissionNotJudged, Containers: []nodestate.AdmittedContainer{},
			NotJudged: []string{"after pod ml/train, which is not judged: where its CPUs, memory and devices land decides what this pod finds"},
			Why:       []string{"replayed after the pods before it as the replay without their devices left the node: admitted (app CPUs 4-5, memory NUMA 0)"}},
	}}}
	out := []AdmitResult{yes, no, unknown}
	for i := range out {
		out[i].KubeletStart.Starts = true
	}
	return out
}

// The ADMITTED column says yes, no or not judged; a pod not judged shows no CPUs (the replay
// without its devices is no answer), and the notes say why and what that replay said.
func TestAdmitThreeAnswers(t *testing.T) {
	var out bytes.Buffer
	if err := Admit(&out, Options{Format: Table, ShowNode: true}, threeAnswers()); err != nil {
		t.Fatal(err)
	}
	golden(t, "admit-three-answers-table", out.Bytes())
	rows := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[0], "gpu-") {
			rows[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
		}
	}
	for row, want := range map[string]string{
		"gpu-a ml/train": "yes app 2-3 0",
		"gpu-b ml/train": "no - - - TopologyAffinityError",
		"gpu-b ml/side":  "yes app 2-3 0",
		"gpu-c ml/train": "not judged - - - - -",
		"gpu-c ml/side":  "not judged - - - - -",
	} {
		if !strings.HasPrefix(rows[row], want) {
			t.Errorf("row %s: %q, want %q...", row, rows[row], want)
		}
	}
	for _, want := range []string{
		"ml/train on gpu-c: not judged: devices: device plugin resource nvidia.com/gpu: give --devices FILE",
		"ml/train on gpu-c: replayed without its devices: admitted (app CPUs 2-3, memory NUMA 0)",
		"ml/side on gpu-c: not judged: after pod ml/train, which is not judged",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("notes lack %q:\n%s", want, out.String())
		}
	}
	// The JSON: the verdict and reasons; no "admitted": true for a pod not judged.
	out.Reset()
	if err := Admit(&out, Options{Format: JSON}, threeAnswers()[2:]); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Admissions []struct {
			Verdict   string   `json:"verdict"`
			Admitted  *bool    `json:"admitted"`
			NotJudged []string `json:"notJudged"`
		} `json:"admissions"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Admissions) != 2 {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, a := range got.Admissions {
		if a.Verdict != "notJudged" || a.Admitted == nil || *a.Admitted || len(a.NotJudged) != 1 {
			t.Errorf("not judged in JSON: %+v\n%s", a, out.String())
		}
	}
}

// Answered from published states, each node's lines say how old its state is and where it came
// from, before the free text; a node that published none says so, with no age.
func TestAdmitSources(t *testing.T) {
	results := threeAnswers()[:2]
	results[0].Source = &nodestate.Provenance{From: nodestate.FromPublished, AgeSeconds: 90}
	results[1].Source = &nodestate.Provenance{From: nodestate.FromPublished, AgeSeconds: 3600}
	results = append(results, AdmitResult{Node: "gpu-d", Error: nodestate.ErrNoPublishedState.Error()})
	var out bytes.Buffer
	if err := Admit(&out, Options{ShowNode: true, Sources: true}, results); err != nil {
		t.Fatal(err)
	}
	rs := rows(out.String())
	if h := rs[0]; h[6] != "AGE" || h[7] != "FROM" || h[8] != "REASON" {
		t.Fatalf("header %q", h)
	}
	want := map[string]string{"gpu-a": "90s published", "gpu-b": "60m published", "gpu-d": "- -"}
	for _, r := range rs[1:] {
		if got := r[6] + " " + r[7]; got != want[r[0]] {
			t.Errorf("%s: %q, want %q", r[0], got, want[r[0]])
		}
	}
	if d := rs[len(rs)-1]; d[2] != "error" || d[9] != nodestate.ErrNoPublishedState.Error() {
		t.Errorf("a node without a state: %q", d)
	}
}
