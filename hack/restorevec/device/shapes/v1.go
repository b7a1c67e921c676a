// 1.17 and 1.19: the V1 layout (a flat list of device IDs per entry), GetDevices as a list, and
// klog's printf lines (1.17's manager.go:234, 1.19's :243, and pod_devices.go:172), read back
// from klog's output.
package main

import (
	"errors"
	"flag"
	"io"
	"regexp"

	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

func deviceIDs(e gen.Entry) []string { return e.FlatDeviceIDs() }

func held(m *devicemanager.ManagerImpl, pod, container, resource string) []string {
	var ids []string
	for _, d := range m.GetDevices(pod, container) {
		if d.ResourceName == resource {
			ids = append(ids, d.DeviceIds...)
		}
	}
	return ids
}

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

// setLogger points klog (klog.go: v1 or v2) at log.
func setLogger(log *gen.Log) (klogOut, error) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klogInitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(k, v); err != nil {
			return klogOut{}, err
		}
	}
	// klog writes a line to the output of its severity and of every lower one: only INFO's
	// sees each line once.
	klogSetOutput(io.Discard)
	out := klogOut{log}
	klogSetOutputBySeverity("INFO", out)
	return out, nil
}
