package main

// The actuated file (1.38.0-beta.0+): kubelet.go opens actuated_pods_state with
// state.NewStateCheckpoint(logger, rootDirectory, actuatedPodsStateFile,
// kuberuntime.KeepOnlyResourceValues); the runtime manager seeds a pod with SetPod (the allocated
// pod, masked: only the resizable containers' names and resources, and the pod-level resources
// when InPlacePodLevelResourcesVerticalScaling is on), records what it actuated with
// SetContainerResources and SetPodLevelResources, and the volume manager a mounted volume with
// SetPodVolume, an emptyDir's actuated size limit with SetEmptyDirVolumeLimit. The same V2 format
// as the allocated file, written through the same state with the kubelet's own mask.

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/kubelet/allocation/state"
	"k8s.io/kubernetes/pkg/kubelet/kuberuntime"
)

var actuatedCases = []caseSpec{
	{name: "two-pods", description: "two pods started (SetPod of the allocated pods through kuberuntime.KeepOnlyResourceValues: the containers' names and resources only, no image, no node name)",
		set: setPods(webPod(), batchPod())},
	{name: "volumes", description: "a pod with pod-level resources and a memory-backed emptyDir mounted (SetPod, SetPodVolume, SetEmptyDirVolumeLimit 512Mi), and a second pod",
		set: func(logger klog.Logger, s state.State) error {
			if err := setPods(cachePod(), webPod())(logger, s); err != nil {
				return err
			}
			shm := cachePod().Spec.Volumes[0]
			if err := s.SetPodVolume(logger, uidCache, shm); err != nil {
				return err
			}
			return s.SetEmptyDirVolumeLimit(logger, uidCache, shm.Name, shm.EmptyDir)
		}},
	{name: "resized", description: "two pods, then a resize actuated (SetContainerResources: app 1 -> 1500m CPU; SetPodLevelResources: cache-0 3 CPUs)",
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
	{name: "upgraded-from-v1", description: "a 1.37 actuated file of one pod restored by 1.38 (kubelet.go's mask), which migrates it and writes it as V2 at once",
		before: func() ([]byte, error) {
			return v1File(`{"entries":{"` + uidWeb + `":{"ContainerResources":{"app":{"limits":{"cpu":"2","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}},"sidecar":{"requests":{"cpu":"100m","memory":"64Mi"}}},"PodLevelResources":null,"EmptyDirVolumeLimits":null}}}`)
		}},
}

// writeActuated writes the actuated cases as the kubelet does: NewStateCheckpoint with
// kuberuntime.KeepOnlyResourceValues, then the runtime and volume managers' calls.
func writeActuated(work string) ([]written, error) {
	logger := klog.Background()
	var out []written
	for _, c := range actuatedCases {
		dir := filepath.Join(work, actuatedFile, c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if c.before != nil {
			raw, err := c.before()
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, actuatedFile), raw, 0o600); err != nil {
				return nil, err
			}
		}
		s, err := state.NewStateCheckpoint(logger, dir, actuatedFile, kuberuntime.KeepOnlyResourceValues)
		if err != nil {
			return nil, fmt.Errorf("actuated %s: %w", c.name, err)
		}
		if c.set != nil {
			if err := c.set(logger, s); err != nil {
				return nil, fmt.Errorf("actuated %s: %w", c.name, err)
			}
		}
		raw, err := os.ReadFile(filepath.Join(dir, actuatedFile))
		if err != nil {
			return nil, fmt.Errorf("actuated %s: %w", c.name, err)
		}
		var cp state.Checkpoint
		if err := cp.UnmarshalCheckpoint(raw); err != nil || cp.Version != "v2" {
			return nil, fmt.Errorf("actuated %s: the writer wrote no V2 file (%v): %s", c.name, err, raw)
		}
		out = append(out, written{Component: actuatedFile, Case: c.name, Description: c.description, Format: formatV2, Raw: raw, HashedText: hashed(cp.Data)})
		if c.name == "two-pods" {
			m, err := mutations(c.name, raw)
			if err != nil {
				return nil, err
			}
			for _, w := range m {
				w.Component = actuatedFile
				out = append(out, w)
			}
		}
	}
	return out, nil
}
