package main

// The V2 allocation checkpoint (1.38.0-beta.0+: pkg/kubelet/allocation/state/checkpoint_v2.go):
// the cases are written through the real state (NewStateCheckpoint, SetPod, ...; its storeState
// calls NewCheckpointV2 and the checkpoint manager), the corrupted variants are rebuilt from the
// written file with the release's own types and checksum package, and the restore is the
// allocation manager's (NewStateCheckpoint with no mask).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/kubelet/allocation/state"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager/checksum"
	"k8s.io/utils/dump"
)

const formatV2 = "alloc-v2: {version:\"v2\",data,checksum}; data={podList: base64 of the protobuf v1.PodList (pods sorted by UID: UID, name, namespace, spec), entries: the alloc-v1c map kept for older kubelets}; fnv32a(\"(string)\"+data)"

func q(s string) resource.Quantity { return resource.MustParse(s) }

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = q(kv[i+1])
	}
	return out
}

func pod(uid, ns, name string, spec v1.PodSpec) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: ns, Name: name,
		Labels: map[string]string{"app": name}}, Spec: spec}
}

const (
	uidWeb   = "3f6a1b2c-0d4e-4f5a-8b6c-7d8e9f0a1b2c"
	uidBatch = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d"
	uidCache = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
)

// The pods of the cases: what the allocation manager's SetPod receives at admission.
func webPod() *v1.Pod {
	return pod(uidWeb, "default", "web-0", v1.PodSpec{
		NodeName: "worker-1",
		Containers: []v1.Container{
			{Name: "app", Image: "registry.example/app:1.4",
				Resources: v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "1Gi")}},
			{Name: "sidecar", Image: "registry.example/proxy:2",
				Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi")}},
		}})
}

func batchPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	return pod(uidBatch, "jobs", "batch-1", v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "fetch", Image: "registry.example/fetch:1", Resources: v1.ResourceRequirements{Requests: rl("cpu", "250m")}},
			{Name: "log-shipper", Image: "registry.example/ship:3", RestartPolicy: &always,
				Resources: v1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "32Mi")}},
		},
		Containers: []v1.Container{
			{Name: "work", Image: "registry.example/work:7", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m")}},
		}})
}

func cachePod() *v1.Pod {
	return pod(uidCache, "team-a", "cache-0", v1.PodSpec{
		Resources: &v1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "4Gi"), Limits: rl("cpu", "4", "memory", "4Gi")},
		Containers: []v1.Container{
			{Name: "redis", Image: "registry.example/redis:8"},
		},
		Volumes: []v1.Volume{
			{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(q("512Mi"))}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr(q("1Gi"))}}},
		}})
}

func ptr[T any](v T) *T { return &v }

// A caseSpec drives the real state: set runs the allocation manager's calls on a fresh state.
type caseSpec struct {
	name, description string
	set               func(logger klog.Logger, s state.State) error
	// before, if set, is the file the state is restored from first (an upgrade's V1 file).
	before func() ([]byte, error)
}

func setPods(pods ...*v1.Pod) func(klog.Logger, state.State) error {
	return func(logger klog.Logger, s state.State) error {
		for _, p := range pods {
			if err := s.SetPod(logger, p); err != nil {
				return err
			}
		}
		return nil
	}
}

// v1File is a V1 checkpoint (1.33-1.37: no version) of data, its checksum from this release's
// checksum package (the V1 rule is the V2 rule).
func v1File(data string) ([]byte, error) {
	return json.Marshal(&state.Checkpoint{Data: data, Checksum: checksum.New(data)})
}

var cases = []caseSpec{
	{name: "two-pods", description: "two pods admitted (SetPod): containers with requests and limits, an init and a sidecar container",
		set: setPods(webPod(), batchPod())},
	{name: "three-pods", description: "three pods, one with pod-level resources and a memory-backed emptyDir with a size limit (and a disk one)",
		set: setPods(cachePod(), webPod(), batchPod())},
	{name: "resized", description: "two pods, then a resize allocated (SetContainerResources: app 1 -> 1500m CPU) and the pod-level resources changed",
		set: func(logger klog.Logger, s state.State) error {
			if err := setPods(webPod(), cachePod())(logger, s); err != nil {
				return err
			}
			if err := s.SetContainerResources(logger, uidWeb, "app", podutil.Containers,
				v1.ResourceRequirements{Requests: rl("cpu", "1500m", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "1Gi")}); err != nil {
				return err
			}
			return s.SetPodLevelResources(logger, uidCache, &v1.ResourceRequirements{Requests: rl("cpu", "3", "memory", "4Gi"), Limits: rl("cpu", "4", "memory", "4Gi")})
		}},
	{name: "upgraded-empty", description: "an empty 1.37 file (data {}) restored by 1.38, which migrates it and writes it as V2 at once",
		before: func() ([]byte, error) { return v1File("{}") }},
	{name: "upgraded-from-v1", description: "a 1.37 file of two pods (one with pod-level resources and a memory emptyDir limit) restored by 1.38, which migrates it (pods without names) and writes it as V2",
		before: func() ([]byte, error) {
			return v1File(`{"entries":{"` + uidCache + `":{"ContainerResources":{"redis":{}},"PodLevelResources":{"limits":{"cpu":"4","memory":"4Gi"},"requests":{"cpu":"2","memory":"4Gi"}},"EmptyDirVolumeLimits":{"shm":"512Mi"}},"` +
				uidWeb + `":{"ContainerResources":{"app":{"limits":{"cpu":"2","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}},"sidecar":{"requests":{"cpu":"100m","memory":"64Mi"}}},"PodLevelResources":null,"EmptyDirVolumeLimits":null}}}`)
		}},
}

func writeCases(work string) ([]written, error) {
	logger := klog.Background()
	var out []written
	for _, c := range cases {
		dir := filepath.Join(work, c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if c.before != nil {
			raw, err := c.before()
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, fileName), raw, 0o600); err != nil {
				return nil, err
			}
		}
		s, err := state.NewStateCheckpoint(logger, dir, fileName, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if c.set != nil {
			if err := c.set(logger, s); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
		}
		raw, err := os.ReadFile(filepath.Join(dir, fileName))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		var cp state.Checkpoint
		if err := cp.UnmarshalCheckpoint(raw); err != nil || cp.Version != "v2" {
			return nil, fmt.Errorf("%s: the writer wrote no V2 file (%v): %s", c.name, err, raw)
		}
		out = append(out, written{Case: c.name, Description: c.description, Format: formatV2, Raw: raw, HashedText: hashed(cp.Data)})
		if c.name == "two-pods" {
			m, err := mutations(c.name, raw)
			if err != nil {
				return nil, err
			}
			out = append(out, m...)
		}
	}
	act, err := writeActuated(work)
	if err != nil {
		return nil, err
	}
	return append(out, act...), nil
}

// hashed is the text checksum.New feeds to fnv32a: the pkg/util/hash spew of the data string.
func hashed(data string) *string {
	s := dump.ForHash(data)
	return &s
}

// A mutation rebuilds a written file: the checkpoint and its data as the release's types hold
// them, changed, then (resum) given their checksum by the release's checksum package.
type mutation struct {
	name, description string
	resum             bool
	change            func(cp *state.Checkpoint, data map[string]json.RawMessage, pods *v1.PodList) error
}

func setPodList(data map[string]json.RawMessage, pods *v1.PodList) error {
	b, err := pods.Marshal()
	if err != nil {
		return err
	}
	data["podList"], err = json.Marshal(b)
	return err
}

var mutationList = []mutation{
	{name: "checksum-wrong", description: "checksum off by one, data as written",
		change: func(cp *state.Checkpoint, _ map[string]json.RawMessage, _ *v1.PodList) error {
			cp.Checksum++
			return nil
		}},
	{name: "checksum-zero", description: "checksum 0, data as written",
		change: func(cp *state.Checkpoint, _ map[string]json.RawMessage, _ *v1.PodList) error {
			cp.Checksum = 0
			return nil
		}},
	{name: "content-changed", description: "the legacy entries changed (a memory request 1Gi -> 2Gi), checksum as written",
		change: func(cp *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["entries"] = bytes.Replace(data["entries"], []byte(`"1Gi"`), []byte(`"2Gi"`), 1)
			return nil
		}},
	{name: "podlist-not-protobuf", resum: true, description: "podList is base64 of bytes that are not a protobuf PodList, checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["podList"], _ = json.Marshal([]byte("not a protobuf PodList"))
			return nil
		}},
	{name: "podlist-truncated", resum: true, description: "podList's protobuf cut short by 7 bytes, checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, pods *v1.PodList) error {
			b, err := pods.Marshal()
			if err != nil {
				return err
			}
			data["podList"], _ = json.Marshal(b[:len(b)-7])
			return nil
		}},
	{name: "podlist-unsorted", resum: true, description: "podList's pods in reverse UID order (the writer sorts them), checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, pods *v1.PodList) error {
			sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].UID > pods.Items[j].UID })
			return setPodList(data, pods)
		}},
	{name: "podlist-duplicate-uid", resum: true, description: "podList holds a second pod with the first pod's UID (another name, 3 CPUs), checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, pods *v1.PodList) error {
			dup := *pods.Items[0].DeepCopy()
			dup.Name = "duplicate"
			dup.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q("3")
			pods.Items = append(pods.Items, dup)
			return setPodList(data, pods)
		}},
	{name: "podlist-empty", resum: true, description: "podList is empty bytes (\"\"), entries as written, checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["podList"] = json.RawMessage(`""`)
			return nil
		}},
	{name: "podlist-absent", resum: true, description: "no podList, entries as written (a V1 data document under version v2), checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			delete(data, "podList")
			return nil
		}},
	{name: "entries-disagree", resum: true, description: "podList as written, entries of other pods (one pod, other resources), checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["entries"] = json.RawMessage(`{"` + uidWeb + `":{"ContainerResources":{"app":{"requests":{"cpu":"4","memory":"8Gi"}}},"PodLevelResources":null,"EmptyDirVolumeLimits":null}}`)
			return nil
		}},
	{name: "entries-not-an-object", resum: true, description: "entries is a string, podList as written, checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["entries"] = json.RawMessage(`"none"`)
			return nil
		}},
	{name: "base64-broken", resum: true, description: "podList is not base64 (\"@@@@\"), checksum recomputed",
		change: func(_ *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			data["podList"] = json.RawMessage(`"@@@@"`)
			return nil
		}},
	{name: "data-not-json", resum: true, description: "data is not JSON (\"{\"), checksum recomputed",
		change: func(cp *state.Checkpoint, data map[string]json.RawMessage, _ *v1.PodList) error {
			clear(data)
			cp.Data = "{"
			return nil
		}},
	{name: "version-unknown", description: "version v3, data and checksum as written",
		change: func(cp *state.Checkpoint, _ map[string]json.RawMessage, _ *v1.PodList) error {
			cp.Version = "v3"
			return nil
		}},
}

func mutations(caseName string, raw []byte) ([]written, error) {
	var out []written
	for _, m := range mutationList {
		var cp state.Checkpoint
		if err := cp.UnmarshalCheckpoint(raw); err != nil {
			return nil, err
		}
		var data map[string]json.RawMessage
		var typed state.CheckpointData
		if err := json.Unmarshal([]byte(cp.Data), &data); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(cp.Data), &typed); err != nil {
			return nil, err
		}
		pods := &v1.PodList{}
		if err := pods.Unmarshal(typed.PodListProto); err != nil {
			return nil, err
		}
		if err := m.change(&cp, data, pods); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", caseName, m.name, err)
		}
		if len(data) > 0 {
			// The writer's key order: podList, entries (json.Marshal of CheckpointData).
			var b strings.Builder
			b.WriteByte('{')
			for _, k := range []string{"podList", "entries"} {
				if v, ok := data[k]; ok {
					if b.Len() > 1 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, "%q:%s", k, v)
				}
			}
			b.WriteByte('}')
			cp.Data = b.String()
		}
		w := written{Case: caseName, Mutation: m.name, Description: m.description, Format: formatV2}
		if m.resum {
			cp.Checksum = checksum.New(cp.Data)
			w.HashedText = hashed(cp.Data)
		}
		var err error
		if w.Raw, err = cp.MarshalCheckpoint(); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	// The file cut short, as a crash mid-write on a filesystem without the rename's atomicity.
	out = append(out, written{Case: caseName, Mutation: "truncated", Description: "the file cut at 60% of its bytes", Format: formatV2, Raw: raw[:len(raw)*6/10]})
	return out, nil
}

// restore is the allocation manager's: NewStateCheckpoint (no mask), then the pods it holds,
// sorted by UID.
func restore(dir, name string) (any, error) {
	s, err := state.NewStateCheckpoint(klog.Background(), dir, name, nil)
	if err != nil {
		return nil, err
	}
	uids := s.GetPodUIDs()
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	pods := []*v1.Pod{}
	for _, uid := range uids {
		p, _ := s.GetPod(uid)
		pods = append(pods, p)
	}
	return map[string]any{"pods": pods}, nil
}
