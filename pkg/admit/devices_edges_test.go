package admit

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// "What would fit: 0": where the real kubelet refused a pod on its devices and admitted, next,
// the same pod asking none of them (pod2.json, the edge-fit-zero cases of
// hack/admitvec/devcases), the most devices the pod could have had is 0, and that is an
// answer (ok), not "the devices are not what refuses it".
func TestLargestDeviceRequestZeroOnVectors(t *testing.T) {
	zero := 0
	deviceCases(t, func(name string, in Input, want expectedCase) {
		if len(in.Pods) != 2 || len(want.Pods) != 2 || want.Pods[0].Admit || !want.Pods[1].Admit {
			return
		}
		// The refused pod left nothing allocated, so the second pod found the node as the first did.
		if s := want.Pods[0].StateAfter; s == nil || len(s.CPUAssignments[want.Pods[0].UID]) > 0 || len(s.DeviceAssignments[want.Pods[0].UID]) > 0 {
			return
		}
		for r, asked := range DeviceRequests(in.Pods[0], devicesOf(in)) {
			if asked == 0 || !reflect.DeepEqual(withDevices(in.Pods[0], v1.ResourceName(r), 0).Spec, in.Pods[1].Spec) {
				continue
			}
			alone := in
			alone.Pods = in.Pods[:1]
			n, ok, err := LargestDeviceRequest(alone, 0, r)
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 || !ok {
				t.Errorf("%s: %s would fit: %d (ok %v); the kubelet admitted the pod with none of them", name, r, n, ok)
			}
			zero++
		}
	})
	if zero == 0 {
		t.Error("no device case where the kubelet admits the pod only without its devices (hack/admitvec/devcases edge-fit-zero)")
	}
}

// devicesOf names the case's device-plugin resources, as DeviceRequests wants them.
func devicesOf(in Input) map[string]DeviceContext {
	out := map[string]DeviceContext{}
	if in.Devices != nil {
		for r := range in.Devices.Plugins {
			out[r] = DeviceContext{}
		}
	}
	return out
}

// Reusable devices with different holders: init-a takes one GPU, init-b reuses it and takes the
// other, then the app takes one of the two its init containers hand on. The kubelet takes it
// from a Go set (devicesToAllocate's allocateRemainingFrom(reusableDevices)), at random, and
// its two picks are not the same up to swapping: the app shares its GPU with init-a or not
// (the real v1.37.1 gives either from run to run: hack/admitvec/devcases/README.md). Where the
// init containers hold both alike, the pick is among equivalent devices.
func TestDevicePickReusableHolders(t *testing.T) {
	gpu := v1.ResourceName("example.com/gpu")
	ctr := func(name string, gpus int64) v1.Container {
		q := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi"), gpu: *resource.NewQuantity(gpus, resource.DecimalSI)}
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: q, Limits: q}}
	}
	for _, tc := range []struct {
		name string
		init []v1.Container
		want string
	}{
		{"init-a 1, init-b 2", []v1.Container{ctr("init-a", 1), ctr("init-b", 2)}, PickArbitrary},
		{"init-a 2", []v1.Container{ctr("init-a", 2)}, PickEquivalent},
	} {
		in := node8(t, `{"cpuManagerPolicy":"none","topologyManagerPolicy":"best-effort"}`)
		plugins, err := replay.ParseDevicePlugins([]byte(`{"resources":{"example.com/gpu":[
			{"ID":"gpu-0","health":"Healthy","topology":{"nodes":[{"ID":0}]}},{"ID":"gpu-1","health":"Healthy","topology":{"nodes":[{"ID":0}]}}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		in.Devices = &replay.DeviceInput{Plugins: plugins}
		p := guaranteed("p", "1", "1Gi")
		p.Spec.InitContainers = tc.init
		p.Spec.Containers = []v1.Container{ctr("app", 1)}
		in.Pods = []*v1.Pod{p}
		res, err := Predict(in)
		if err != nil || len(res.Admissions) != 1 || !res.Admissions[0].Admitted {
			t.Fatalf("%s: %v %+v", tc.name, err, res)
		}
		for _, c := range res.Admissions[0].Containers {
			if c.Name == "app" && c.DevicesPick[string(gpu)] != tc.want {
				t.Errorf("%s: the app's pick %q, want %q", tc.name, c.DevicesPick[string(gpu)], tc.want)
			}
		}
	}
}
