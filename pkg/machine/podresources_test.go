package machine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const podResourcesDump = PodResourcesHeader + "\n" +
	`{"allocatable":[{"resource":"nvidia.com/gpu","ids":["GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"],"numaNodes":[1]},` +
	`{"resource":"nvidia.com/gpu","ids":["GPU-0c0e7a8e::0","GPU-0c0e7a8e::1"]},{"resource":"amd.com/gpu","ids":["amdgpu_xcp_0"],"numaNodes":[-1]}],` +
	`"pods":[{"namespace":"ml","name":"train-0","containers":[{"name":"main","devices":[{"resource":"nvidia.com/gpu","ids":["GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"],"numaNodes":[1]}]},{"name":"sidecar"}]}]}` +
	"\n" + PodResourcesEnd + "\n"

func TestParsePodResources(t *testing.T) {
	got, err := ParsePodResources([]byte(podResourcesDump))
	if err != nil {
		t.Fatal(err)
	}
	want := &PodResources{
		Allocatable: []PodResourcesDevices{
			{Resource: "nvidia.com/gpu", IDs: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, NUMANodes: []int64{1}},
			{Resource: "nvidia.com/gpu", IDs: []string{"GPU-0c0e7a8e::0", "GPU-0c0e7a8e::1"}},
			{Resource: "amd.com/gpu", IDs: []string{"amdgpu_xcp_0"}, NUMANodes: []int64{-1}},
		},
		Pods: []PodResourcesPod{{Namespace: "ml", Name: "train-0", Containers: []PodResourcesContainer{
			{Name: "main", Devices: []PodResourcesDevices{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, NUMANodes: []int64{1}}}},
			{Name: "sidecar"},
		}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// Other sections around it (the exec's stderr) do not matter.
	if _, err := ParsePodResources([]byte("noise\n" + podResourcesDump + "more noise\n")); err != nil {
		t.Errorf("with noise around: %v", err)
	}
	// The kubelet could not be asked: an error, and nothing else.
	got, err = ParsePodResources([]byte(PodResourcesHeader + "\n" + `{"allocatable":null,"pods":null,"error":"no PodResources socket"}` + "\n" + PodResourcesEnd))
	if err != nil || got.Error != "no PodResources socket" {
		t.Errorf("error dump: %+v, %v", got, err)
	}
}

func TestParsePodResourcesRefuses(t *testing.T) {
	doc := func(s string) string { return PodResourcesHeader + "\n" + s + "\n" + PodResourcesEnd + "\n" }
	many := &PodResources{}
	for range maxPodResourcesItems/2 + 1 {
		many.Allocatable = append(many.Allocatable, PodResourcesDevices{Resource: "r", IDs: []string{"i"}})
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "no \"@@nodestate-podresources v1\" header"},
		{"cut", PodResourcesHeader + "\n" + `{"allocatable":[]}`, "cut short"},
		{"no document", doc(""), "no document"},
		{"two documents", PodResourcesHeader + "\n{}\n{}\n" + PodResourcesEnd, "a second document"},
		{"two values on the line", doc(`{"allocatable":[]} {}`), "data after the document"},
		{"unknown field (a reader of another version)", doc(`{"allocatable":[],"unhealthy":[]}`), `unknown field "unhealthy"`},
		{"not JSON", doc(`allocatable: []`), "invalid character"},
		{"no resource", doc(`{"allocatable":[{"resource":"","ids":["a"]}]}`), "without a resource name"},
		{"no ID", doc(`{"allocatable":[{"resource":"r","ids":[]}]}`), "without a device ID"},
		{"empty ID", doc(`{"pods":[{"namespace":"n","name":"p","containers":[{"name":"c","devices":[{"resource":"r","ids":[""]}]}]}]}`), "an empty device ID"},
		{"pod without a name", doc(`{"pods":[{"namespace":"n","name":""}]}`), "without a name or namespace"},
		{"container without a name", doc(`{"pods":[{"namespace":"n","name":"p","containers":[{"name":""}]}]}`), "a container without a name"},
		{"error beside an answer", doc(`{"allocatable":[{"resource":"r","ids":["a"]}],"error":"timeout"}`), "beside an answer"},
		{"NUMA node not a number", doc(`{"allocatable":[{"resource":"r","ids":["a"],"numaNodes":["0"]}]}`), "cannot unmarshal"},
		{"over the item cap", doc(string(manyJSON)), "over 262144 items"},
		{"over the byte cap", doc(`{"error":"` + strings.Repeat("x", MaxPodResourcesBytes) + `"}`), "over the 4194304-byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePodResources([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
				t.Errorf("got an answer: %t, %v; want an error with %q", got != nil, err, tc.want)
			}
		})
	}
}

func FuzzParsePodResources(f *testing.F) {
	f.Add([]byte(podResourcesDump))
	f.Add([]byte(PodResourcesHeader + "\n" + `{"allocatable":null,"pods":null,"error":"x"}` + "\n" + PodResourcesEnd))
	f.Add([]byte(PodResourcesHeader + "\n{}\n" + PodResourcesEnd))
	f.Fuzz(func(t *testing.T, b []byte) {
		pr, err := ParsePodResources(b)
		if err != nil {
			return
		}
		if err := pr.validate(); err != nil {
			t.Fatalf("accepted an invalid answer: %v", err)
		}
		// What was accepted prints as a section that reads back the same.
		doc, err := json.Marshal(pr)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePodResources([]byte(PodResourcesHeader + "\n" + string(doc) + "\n" + PodResourcesEnd))
		if err != nil {
			t.Fatalf("%s does not parse back: %v", doc, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(doc) {
			t.Fatalf("round trip changed it:\n%s\n%s", doc, again)
		}
	})
}
