// Command v1.21.14 writes and restores device manager checkpoints with kubelet v1.21.14's real
// code (see ../README.md).
package main

import (
	"sort"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

type release struct{}

func (release) Write(dir string, c gen.Case) error {
	var entries []checkpoint.PodDevicesEntry
	for _, e := range c.Entries {
		entries = append(entries, checkpoint.PodDevicesEntry{PodUID: e.PodUID, ContainerName: e.ContainerName,
			ResourceName: e.ResourceName, DeviceIDs: checkpoint.DevicesPerNUMA(e.DeviceIDs), AllocResp: e.AllocResp})
	}
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return err
	}
	return m.CreateCheckpoint(gen.FileName, checkpoint.New(entries, c.Registered))
}

func (release) Restore(log *gen.Log) (func(pod, container, resource string) []string, func(), error) {
	// 1.21 logs through the global klog (v2.9.0, logr v0.4.0: Logger is an interface).
	klog.SetLogger(logger{log})
	m, err := devicemanager.NewManagerImpl(nil, nil)
	if err != nil {
		return nil, nil, err
	}
	// Start reads the checkpoint (readCheckpoint), logs its error and goes on, as the kubelet does.
	if err := m.Start(func() []*v1.Pod { return nil }, ready{}); err != nil {
		return nil, nil, err
	}
	devices := func(pod, container, resource string) []string {
		var ids []string
		for id := range m.GetDevices(pod, container)[resource] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return ids
	}
	return devices, func() { _ = m.Stop() }, nil
}

type ready struct{}

func (ready) AddSource(string) {}
func (ready) AllReady() bool   { return true }

// logger hands the manager's logs to gen.Log.
type logger struct{ log *gen.Log }

func (logger) Enabled() bool                                    { return true }
func (l logger) Info(msg string, kv ...interface{})             { l.log.Info(msg, kv...) }
func (l logger) Error(err error, msg string, kv ...interface{}) { l.log.Error(err, msg, kv...) }
func (l logger) V(int) logr.Logger                              { return l }
func (l logger) WithValues(...interface{}) logr.Logger          { return l }
func (l logger) WithName(string) logr.Logger                    { return l }

func main() { gen.Main(release{}) }
