// Command devgen writes and restores device manager checkpoints with the real code of the
// module's kubelet release (see hack/restorevec/device/README.md). What differs by release, the
// files the module links beside this one say: the layout (v1.go or v2.go), the logging
// (klog's printf lines or a logr logger) and the manager's constructor, Start and Stop.
package main

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

type release struct{}

func (release) Write(dir string, c gen.Case) error {
	var entries []checkpoint.PodDevicesEntry
	for _, e := range c.Entries {
		entries = append(entries, checkpoint.PodDevicesEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
			ResourceName: e.ResourceName, DeviceIDs: deviceIDs(e), AllocResp: e.AllocResp})
	}
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return err
	}
	return m.CreateCheckpoint(gen.FileName, checkpoint.New(entries, c.Registered))
}

func (release) Restore(log *gen.Log) (func(pod, container, resource string) []string, func(), error) {
	logger, err := setLogger(log)
	if err != nil {
		return nil, nil, err
	}
	m, err := newManager(logger)
	if err != nil {
		return nil, nil, err
	}
	// Start reads the checkpoint (readCheckpoint), logs its error and goes on, as the kubelet does.
	if err := start(m, logger); err != nil {
		return nil, nil, err
	}
	devices := func(pod, container, resource string) []string {
		ids := held(m, pod, container, resource)
		sort.Strings(ids)
		return ids
	}
	return devices, func() { stop(m, logger) }, nil
}

// The kubelet's active pods (none) and sources (all ready), for Start.
func activePods() []*v1.Pod { return nil }

type ready struct{}

func (ready) AddSource(string) {}
func (ready) AllReady() bool   { return true }

func main() { gen.Main(release{}) }
