package decode

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podAllocKubeletView renders a PodAllocationState as the kubelet's decoded value of that file:
// ps-v1 {allocationEntries: pod -> container -> ResourceList, resizeStatusEntries}, ps-v2
// {allocationEntries: pod -> container -> ResourceRequirements}, or the allocation files'
// {entries: pod -> {ContainerResources, PodLevelResources, EmptyDirVolumeLimits}}.
func podAllocKubeletView(kind Kind) func(any) any {
	return func(model any) any {
		m := model.(*PodAllocationState)
		if kind == KindPodStatus {
			alloc, resize := map[string]any{}, map[string]any{}
			for uid, p := range m.Pods {
				containers := map[string]any{}
				for name, r := range p.Containers {
					if m.RequestsOnly {
						containers[name] = r.Requests
					} else {
						containers[name] = r
					}
				}
				alloc[uid] = containers
				if p.ResizeStatus != "" {
					resize[uid] = p.ResizeStatus
				}
			}
			return map[string]any{"allocationEntries": alloc, "resizeStatusEntries": resize}
		}
		if m.FromPodList {
			// 1.38+: the pods it restored, by UID.
			pods := []any{}
			for _, uid := range slices.Sorted(maps.Keys(m.Pods)) {
				pods = append(pods, m.Pods[uid].Pod)
			}
			return map[string]any{"pods": pods}
		}
		entries := map[string]any{}
		for uid, p := range m.Pods {
			entries[uid] = map[string]any{"ContainerResources": p.Containers, "PodLevelResources": p.PodLevel,
				"EmptyDirVolumeLimits": p.EmptyDirVolumeLimits}
		}
		return map[string]any{"entries": entries}
	}
}

// envelope builds a {"data","checksum"} file with the right checksum.
func envelope(data string) []byte {
	b, _ := json.Marshal(map[string]any{"data": data, "checksum": fnv32a(stringPrefix, []byte(data))})
	return b
}

func TestPodAllocationEdgeCases(t *testing.T) {
	const podStatusWrap = `, please drain this node and delete pod allocation checkpoint file "/var/lib/kubelet/pod_status_manager_state" before restarting Kubelet`
	const allocWrap = `, please drain this node and delete pod resource information checkpoint file "/var/lib/kubelet/allocated_pods_state" before restarting Kubelet`
	const actuatedWrap = `, please drain this node and delete pod resource information checkpoint file "/var/lib/kubelet/actuated_pods_state" before restarting Kubelet`
	podLevel := `{"entries":{"p":{"ContainerResources":{"app":{"requests":{"cpu":"1"}}},"PodLevelResources":5}}}`
	cases := []struct {
		name   string
		kind   Kind
		reader string
		raw    []byte
		want   Verdict
		err    string
	}{
		{"ps-v1 empty", KindPodStatus, "v1.27.16", []byte(`{"checksum":670531192}`), Valid, ""},
		{"ps-v1 checksum 0 is not special", KindPodStatus, "v1.31.14", []byte(`{"checksum":0}`), Corrupt,
			"could not restore state from checkpoint: checkpoint is corrupted" + podStatusWrap},
		{"ps-v1 quantity not a quantity", KindPodStatus, "v1.30.14", []byte(`{"allocationEntries":{"p":{"c":{"cpu":"lots"}}},"checksum":1}`), Unreadable,
			"could not restore state from checkpoint: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" + podStatusWrap},
		// 1.32 decodes into NewCheckpoint(nil): absent keys keep data "null" and its checksum.
		{"ps-v2 no keys", KindPodStatus, "v1.32.13", []byte(`{"resizeStatusEntries":{}}`), Valid, ""},
		{"ps-v2 data not JSON", KindPodStatus, "v1.32.13", envelope("{"), Unreadable,
			"could not restore state from checkpoint: failed to get pod resource allocation info: unexpected end of JSON input" + podStatusWrap},
		{"ps-v2 in ps-v1 reader", KindPodStatus, "v1.31.14", envelope("{}"), Corrupt,
			"could not restore state from checkpoint: checkpoint is corrupted" + podStatusWrap},
		{"pod status not read from 1.33", KindPodStatus, "v1.33.13", envelope("{}"), NotRead, notReadError},
		{"alloc no keys", KindAllocated, "v1.33.13", []byte(`{"checksum":0}`), Corrupt,
			"could not restore state from checkpoint: checkpoint is corrupted" + allocWrap},
		{"alloc checksum above uint32", KindAllocated, HomeKubelet, []byte(`{"data":"{}","checksum":18446744073709551615}`), Corrupt,
			"could not restore state from checkpoint: checkpoint is corrupted" + allocWrap},
		{"alloc data not JSON", KindAllocated, "v1.36.4", envelope("nope"), Unreadable,
			"could not restore state from checkpoint: failed to get pod resource information: invalid character 'o' in literal null (expecting 'u')" + allocWrap},
		{"alloc empty data", KindAllocated, "", envelope(""), Unreadable,
			"could not restore state from checkpoint: failed to get pod resource information: unexpected end of JSON input" + allocWrap},
		{"alloc pod-level of the wrong type, 1.34 ignores it", KindAllocated, "v1.34.10", envelope(podLevel), Valid, ""},
		{"alloc pod-level of the wrong type, 1.35 reads it", KindAllocated, "v1.35.8", envelope(podLevel), Unreadable,
			"could not restore state from checkpoint: failed to get pod resource information: json: cannot unmarshal number into Go struct field PodResourceInfo.entries.PodLevelResources of type v1.ResourceRequirements" + allocWrap},
		{"actuated 1.34 wording", KindActuated, "v1.34.10", []byte(`{"data":"{}","checksum":1}`), Corrupt,
			"could not restore state from checkpoint: checkpoint is corrupted" + actuatedWrap},
		{"actuated 1.35+ wording", KindActuated, "v1.35.8", []byte(`{"data":"{}","checksum":1}`), Corrupt,
			"failed to initialize actuated state checkpoint: could not restore state from checkpoint: checkpoint is corrupted" + actuatedWrap},
		{"alloc not read before 1.33", KindActuated, "v1.32.13", envelope("{}"), NotRead, notReadError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := judge(t, c.kind, c.raw, c.reader)
			if rep.Verdict != c.want {
				t.Fatalf("verdict %s (%q), want %s", rep.Verdict, rep.Error, c.want)
			}
			if c.err != "" && rep.Error != c.err {
				t.Errorf("error\n got %q\nwant %q", rep.Error, c.err)
			}
		})
	}
}

func TestPodAllocationModel(t *testing.T) {
	// ps-v1 records requests only, and resize status per pod.
	raw := []byte(`{"allocationEntries":{"p1":{"app":{"cpu":"1","memory":"1Gi"}}},"resizeStatusEntries":{"p1":"InProgress","p2":"Deferred"},"checksum":0}`)
	v, err := newInput(raw).decode(podStatusV1Layout)
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.Replace(string(raw), `"checksum":0`, `"checksum":`+jsonNumber(eraByID(t, "podstatus-v1").Sums[0].Rule.compute(v)), 1))
	rep := judge(t, KindPodStatus, raw, "")
	if rep.Verdict != Valid || rep.Format != "podstatus-v1" || rep.Reader != "v1.31.14" {
		t.Fatalf("%s %s by %s: %s", rep.Verdict, rep.Format, rep.Reader, rep.Error)
	}
	m := rep.Decoded.PodAllocations
	cpu := m.Pods["p1"].Containers["app"].Requests[corev1.ResourceCPU]
	if !m.RequestsOnly || cpu.String() != "1" || m.Pods["p1"].ResizeStatus != "InProgress" || m.Pods["p2"].ResizeStatus != "Deferred" {
		t.Errorf("decoded %+v", m)
	}

	// 1.37 allocation file: pod-level resources and emptyDir limits; a null limit is left out.
	file := envelope(`{"entries":{"p":{"ContainerResources":{"app":{"limits":{"memory":"1Gi"}}},"PodLevelResources":{"requests":{"cpu":"2"}},"EmptyDirVolumeLimits":{"scratch":"2Gi","none":null}}}}`)
	rep = judge(t, KindAllocated, file, "")
	if rep.Format != "alloc-v1c" || rep.Verdict != Valid {
		t.Fatalf("%s %s: %s", rep.Format, rep.Verdict, rep.Error)
	}
	p := rep.Decoded.PodAllocations.Pods["p"]
	scratch := p.EmptyDirVolumeLimits["scratch"]
	if p.PodLevel == nil || scratch.Cmp(resource.MustParse("2Gi")) != 0 || len(p.EmptyDirVolumeLimits) != 1 {
		t.Errorf("decoded %+v", p)
	}
	// 1.35 keeps the pod-level resources and drops the limits, and says so.
	rep = judge(t, KindAllocated, file, "v1.35.8")
	if p := rep.Decoded.PodAllocations.Pods["p"]; p.PodLevel == nil || p.EmptyDirVolumeLimits != nil || len(rep.Notes) == 0 {
		t.Errorf("1.35: %+v, notes %q", p, rep.Notes)
	}
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func FuzzDecodePodAllocation(f *testing.F) {
	fuzzKinds(f, []Kind{KindPodStatus, KindAllocated, KindActuated},
		[]string{"v1.26.15", "v1.27.16", "v1.31.14", "v1.32.13", "v1.33.13", "v1.35.8", HomeKubelet})
}
