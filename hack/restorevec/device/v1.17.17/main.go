// Command v1.17.17 writes and restores device manager checkpoints with kubelet v1.17.17's real
// code (see ../README.md). 1.17 writes the V1 layout (a flat list of device IDs per entry) and
// logs with klog v1's printf calls, which this reads back from klog's output.
package main

import (
	"errors"
	"flag"
	"io"
	"regexp"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog"
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
			ResourceName: e.ResourceName, DeviceIDs: e.FlatDeviceIDs(), AllocResp: e.AllocResp})
	}
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return err
	}
	return m.CreateCheckpoint(gen.FileName, checkpoint.New(entries, c.Registered))
}

// The two lines of 1.17's manager.go:234 and pod_devices.go:172.
var (
	readErrLine = regexp.MustCompile(`Continue after failing to read checkpoint file\. Device allocation info may NOT be up-to-date\. Err: (.*)\n`)
	droppedLine = regexp.MustCompile(`Can't unmarshal allocResp for (\S*) (\S*) (\S*): (.*)\n`)
)

// klogOut hands klog's lines to gen.Log.
type klogOut struct{ log *gen.Log }

func (o klogOut) Write(p []byte) (int, error) {
	if m := readErrLine.FindSubmatch(p); m != nil {
		o.log.Error(errors.New(string(m[1])), "Continue after failing to read checkpoint file")
	}
	if m := droppedLine.FindSubmatch(p); m != nil {
		o.log.Error(errors.New(string(m[4])), "Can't unmarshal allocResp", "podUID", string(m[1]), "containerName", string(m[2]), "resourceName", string(m[3]))
	}
	return len(p), nil
}

func (release) Restore(log *gen.Log) (func(pod, container, resource string) []string, func(), error) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(k, v); err != nil {
			return nil, nil, err
		}
	}
	// klog writes a line to the output of its severity and of every lower one: only INFO's
	// sees each line once.
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("INFO", klogOut{log})
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
		for _, d := range m.GetDevices(pod, container) {
			if d.ResourceName == resource {
				ids = append(ids, d.DeviceIds...)
			}
		}
		sort.Strings(ids)
		return ids
	}
	return devices, func() { _ = m.Stop() }, nil
}

type ready struct{}

func (ready) AddSource(string) {}
func (ready) AllReady() bool   { return true }

func main() { gen.Main(release{}) }
