package admit

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// deviceCases calls f with every case of the shipped device sets, its input and expectation.
func deviceCases(t *testing.T, f func(name string, in Input, want expectedCase)) {
	t.Helper()
	n := 0
	for _, set := range admissionSets(t) {
		if !deviceSet(set.Name) {
			continue
		}
		for _, c := range set.Cases {
			var want expectedCase
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			f(set.Name+" "+c.Name, caseInput(t, c, set.MetaString("kubelet"), true), want)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no device case")
	}
}

// Each admitted container's devices sit on the NUMA nodes their plugin advertised, are said
// apart from its exclusive CPUs exactly when they share no NUMA node with them (the classic
// mismatch admitted under best-effort), and its pick is said as the kubelet made it: forced where every pick of the real kubelet was, among
// equivalent devices only where each device taken has a class of interchangeable ones, and
// never among devices that differ (the sets hold no such case: their README).
func TestDeviceNUMAAndPickOnVectors(t *testing.T) {
	counts := map[string]int{}
	deviceCases(t, func(name string, in Input, want expectedCase) {
		got, err := Predict(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		inClass := map[string]bool{}
		for r, classes := range want.DeviceClasses {
			for _, class := range classes {
				for _, id := range class {
					inClass[r+"/"+id] = len(class) > 1
				}
			}
		}
		for _, a := range got.Admissions {
			for _, c := range a.Containers {
				for r := range c.DeviceNUMANodes {
					if kind := apartKind(c, r); kind != "" {
						counts[kind]++
					}
				}
				for r, ids := range c.Devices {
					for _, id := range ids {
						wantNodes := []int{}
						for _, d := range in.Devices.Plugins[r] {
							if d.ID == id && d.Topology != nil {
								for _, n := range d.Topology.Nodes {
									// Node -1 is the kubelet's nodeWithoutTopology: such a device is
									// recorded as without topology (allocateContainerResources).
									if n.ID >= 0 {
										wantNodes = append(wantNodes, int(n.ID))
									}
								}
							}
						}
						slices.Sort(wantNodes)
						if gotNodes := c.DeviceNUMANodes[r][id]; !slices.Equal(gotNodes, wantNodes) {
							t.Errorf("%s: pod %s container %s %s %s: NUMA nodes %v, the plugin says %v", name, a.Pod, c.Name, r, id, gotNodes, wantNodes)
						}
						counts["device"]++
					}
					switch pick := c.DevicesPick[r]; {
					case pick == PickArbitrary:
						t.Errorf("%s: pod %s container %s: %s picked among devices that differ", name, a.Pod, c.Name, r)
					case pick == PickEquivalent && want.DeviceChoice == "exact":
						t.Errorf("%s: pod %s container %s: %s said equivalent, the kubelet's every pick was forced", name, a.Pod, c.Name, r)
					case pick == PickEquivalent:
						counts["equivalent"]++
						// The generator's classes split devices by their checkpoint holders too; on a
						// restart with the sources ready the kubelet drops the holders not yet back
						// before it picks, so its choice may be wider than a class there.
						for _, id := range ids {
							if !inClass[r+"/"+id] && (in.Restart == nil || !in.Restart.SourcesReady) {
								t.Errorf("%s: pod %s container %s: %s %s said one of several equivalent, but it has no interchangeable device", name, a.Pod, c.Name, r, id)
							}
						}
					case pick == PickForced:
						counts["forced"]++
					default:
						t.Errorf("%s: pod %s container %s: %s pick %q", name, a.Pod, c.Name, r, pick)
					}
				}
			}
		}
	})
	if counts["wrong"] > 0 {
		t.Errorf("%d containers' devicesApart disagree with their devices' and CPUs' NUMA nodes", counts["wrong"])
	}
	t.Logf("devices on their NUMA nodes: %d; picks forced %d, equivalent %d; exclusive CPUs beside their devices %d, apart %d",
		counts["device"], counts["forced"], counts["equivalent"], counts["together"], counts["apart"])
	if counts["device"] == 0 || counts["forced"] == 0 || counts["equivalent"] == 0 || counts["together"] == 0 || counts["apart"] == 0 {
		t.Errorf("the device sets exercise too little: %v", counts)
	}
}

var unavailable = regexp.MustCompile(`requested number of devices unavailable for (\S+)\. Requested: \d+, Available: (\d+)`)

// A refused pod is told the devices it found: where the real kubelet's message gives the count
// available, the free devices said are as many. And the most devices it could have had are
// admitted with the rest of it, and are no more than were free.
func TestDevicesFoundAndLargestOnVectors(t *testing.T) {
	checked, largest := 0, 0
	deviceCases(t, func(name string, in Input, want expectedCase) {
		got, err := Predict(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, a := range got.Admissions {
			if a.Admitted || a.Before == nil {
				continue
			}
			if m := unavailable.FindStringSubmatch(a.Message); m != nil && singleRequester(in.Pods[i], m[1]) {
				n, _ := strconv.Atoi(m[2])
				if a.Before.Devices[m[1]].Free != n {
					t.Errorf("%s: pod %s: %d free %s said, the kubelet found %d", name, a.Pod, a.Before.Devices[m[1]].Free, m[1], n)
				}
				checked++
			}
			for r, asked := range DeviceRequests(in.Pods[i], a.Before.Devices) {
				n, ok, err := LargestDeviceRequest(in, i, r)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				largest++
				if n >= asked || n > a.Before.Devices[r].Free {
					t.Errorf("%s: pod %s: %d %s would fit, it asked %d and %d were free", name, a.Pod, n, r, asked, a.Before.Devices[r].Free)
				}
				try := in
				try.Pods = append(slices.Clone(in.Pods[:i]), withDevices(in.Pods[i], v1.ResourceName(r), n))
				res, err := Predict(try)
				if err != nil || !res.Admissions[i].Admitted {
					t.Errorf("%s: pod %s with %d %s: not admitted (%v)", name, a.Pod, n, r, err)
				}
			}
		}
	})
	t.Logf("free devices checked against the kubelet's count: %d; largest device requests found: %d", checked, largest)
	if checked == 0 || largest == 0 {
		t.Error("no refused device pod exercised")
	}
}

// singleRequester: only one container of the pod asks for resource (the kubelet's count of
// available devices is then the pod's first).
func singleRequester(pod *v1.Pod, resource string) bool {
	n := 0
	for _, c := range podContainersOf(pod) {
		if _, ok := c.Resources.Limits[v1.ResourceName(resource)]; ok {
			n++
		}
	}
	return n == 1
}

// A gone pod's devices are named as the cause exactly when replaying without them admits the
// pod: on the device cases with a seeded checkpoint, with none of the seed pods on the node.
// With the seed pods on the node, nothing is named.
func TestStaleDeviceHolderOnVectors(t *testing.T) {
	named, notNamed := 0, 0
	deviceCases(t, func(name string, in Input, want expectedCase) {
		holders := notAdmittedHolders(in)
		if len(holders) == 0 {
			return
		}
		in.KnownPods = map[string]bool{}
		got, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range got.Admissions {
			if a.Admitted || a.Handler != HandlerResourceManagers {
				continue
			}
			// Each holder alone, replayed without it: the named ones are those that admit the pod,
			// unless none alone does and all together do.
			var alone []string
			for _, uid := range slices.Sorted(maps.Keys(holders)) {
				if admittedWithout(t, in, i, uid) {
					alone = append(alone, uid)
				}
			}
			var gotUIDs []string
			for _, h := range a.StaleDeviceHolders {
				gotUIDs = append(gotUIDs, h.PodUID)
				if !slices.Equal(h.Devices[firstKey(h.Devices)], holders[h.PodUID][firstKey(h.Devices)]) {
					t.Errorf("%s: holder %s devices %v, the checkpoint gives %v", name, h.PodUID, h.Devices, holders[h.PodUID])
				}
			}
			wantUIDs := alone
			if len(alone) == 0 && len(holders) > 1 && admittedWithout(t, in, i, slices.Collect(maps.Keys(holders))...) {
				wantUIDs = slices.Sorted(maps.Keys(holders))
			}
			if fmt.Sprint(gotUIDs) != fmt.Sprint(wantUIDs) {
				t.Errorf("%s: pod %s: stale holders named %v, want %v", name, a.Pod, gotUIDs, wantUIDs)
			}
			if len(gotUIDs) > 0 {
				named++
			} else {
				notNamed++
			}
		}
		in.KnownPods = map[string]bool{}
		for uid := range holders {
			in.KnownPods[uid] = true
		}
		got, err = Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got.Admissions {
			if len(a.StaleDeviceHolders) > 0 {
				t.Errorf("%s: pod %s: %v named, yet every holder is on the node", name, a.Pod, a.StaleDeviceHolders)
			}
		}
	})
	t.Logf("refused pods with a gone holder named as the cause: %d; not the cause: %d", named, notNamed)
	if named == 0 || notNamed == 0 {
		t.Error("the seeded device cases do not tell a stale holder that is the cause from one that is not")
	}
}

// admittedWithout replays in with the checkpoint holders uids left out of the device manager's
// restore, and says whether the pod at index i is admitted.
func admittedWithout(t *testing.T, in Input, i int, uids ...string) bool {
	t.Helper()
	dev := *in.Devices
	dev.Without = map[string]bool{}
	for _, u := range uids {
		dev.Without[u] = true
	}
	in.Devices, in.KnownPods = &dev, nil
	r, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	return r.Admissions[i].Admitted
}

func firstKey(m map[string][]string) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// How the kubelet came to the devices: under topology policy none two GPUs on different NUMA
// nodes are alike to it; under best-effort the hint leaves it one; a GPU local to NUMA node 0
// beside one attached to both is a random pick among devices that differ.
func TestDevicePickKinds(t *testing.T) {
	for _, tc := range []struct {
		policy, devices string
		want            string
	}{
		{"none", `[{"ID":"gpu-0","health":"Healthy","topology":{"nodes":[{"ID":0}]}},{"ID":"gpu-1","health":"Healthy","topology":{"nodes":[{"ID":1}]}}]`, PickEquivalent},
		{"best-effort", `[{"ID":"gpu-0","health":"Healthy","topology":{"nodes":[{"ID":0}]}},{"ID":"gpu-1","health":"Healthy","topology":{"nodes":[{"ID":1}]}}]`, PickForced},
		{"best-effort", `[{"ID":"gpu-0","health":"Healthy","topology":{"nodes":[{"ID":0}]}},{"ID":"gpu-1","health":"Healthy","topology":{"nodes":[{"ID":0},{"ID":1}]}}]`, PickArbitrary},
		{"best-effort", `[{"ID":"gpu-0","health":"Healthy"},{"ID":"gpu-1","health":"Healthy"}]`, PickEquivalent},
	} {
		in := node8(t, `{"cpuManagerPolicy":"none","topologyManagerPolicy":"`+tc.policy+`"}`)
		plugins, err := replay.ParseDevicePlugins([]byte(`{"resources":{"example.com/gpu":` + tc.devices + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		in.Devices = &replay.DeviceInput{Plugins: plugins}
		in.Pods = []*v1.Pod{guaranteed("a", "1", "1Gi", "example.com/gpu")}
		res, err := Predict(in)
		if err != nil || len(res.Admissions) != 1 || !res.Admissions[0].Admitted {
			t.Fatalf("%s %s: %v %+v", tc.policy, tc.devices, err, res)
		}
		c := res.Admissions[0].Containers[0]
		if len(c.DevicesApart) > 0 {
			t.Errorf("%s: devices apart %v with CPUs not pinned", tc.policy, c.DevicesApart)
		}
		if got := c.DevicesPick["example.com/gpu"]; got != tc.want {
			t.Errorf("%s %s: pick %q, want %q", tc.policy, tc.devices, got, tc.want)
		}
		if len(c.Devices["example.com/gpu"]) != 1 || len(c.DeviceNUMANodes["example.com/gpu"]) != 1 {
			t.Errorf("%s: devices %v, NUMA %v", tc.policy, c.Devices, c.DeviceNUMANodes)
		}
	}
}

// apartKind checks DevicesApart for one resource of an admitted container: "apart" or
// "together" when the container has exclusive CPUs and the devices have topology, "" else;
// "wrong" when DevicesApart says otherwise.
func apartKind(c Container, r string) string {
	said := slices.Contains(c.DevicesApart, r)
	share, placed := false, false
	for _, nodes := range c.DeviceNUMANodes[r] {
		placed = placed || len(nodes) > 0
		for _, n := range nodes {
			share = share || slices.Contains(c.CPUNUMANodes, n)
		}
	}
	switch {
	case !c.Exclusive || !placed:
		if said {
			return "wrong"
		}
		return ""
	case said == share:
		return "wrong"
	case share:
		return "together"
	}
	return "apart"
}

// A refused pod's partial allocation stays in allocatedDevices until the next allocation frees
// it: the devices the next pod finds are counted after that, as the kubelet's message counts
// them ("Available").
func TestDevicesFoundAfterPartialAllocation(t *testing.T) {
	in := node8(t, `{"cpuManagerPolicy":"none","topologyManagerPolicy":"none"}`)
	plugins, err := replay.ParseDevicePlugins([]byte(`{"resources":{"example.com/gpu":[{"ID":"g0","health":"Healthy"},{"ID":"g1","health":"Healthy"},{"ID":"g2","health":"Healthy"},{"ID":"g3","health":"Healthy"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	in.Devices = &replay.DeviceInput{Plugins: plugins}
	gpus := func(c *v1.Container, n int64) {
		c.Resources.Limits["example.com/gpu"] = *resource.NewQuantity(n, resource.DecimalSI)
		c.Resources.Requests["example.com/gpu"] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	// first: container a takes 2 GPUs, b asks 3 of the 2 left: refused, a's 2 stay allocated.
	first := guaranteed("first", "1", "1Gi", "example.com/gpu")
	first.Spec.Containers = append(first.Spec.Containers, *first.Spec.Containers[0].DeepCopy())
	first.Spec.Containers[1].Name = "b"
	gpus(&first.Spec.Containers[0], 2)
	gpus(&first.Spec.Containers[1], 3)
	second := guaranteed("second", "1", "1Gi", "example.com/gpu")
	gpus(&second.Spec.Containers[0], 5)
	in.Pods = []*v1.Pod{first, second}
	res, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]string{0: "Requested: 3, Available: 2", 1: "Requested: 5, Available: 4"} {
		if a := res.Admissions[i]; a.Admitted || !strings.Contains(a.Message, want) {
			t.Fatalf("pod %s: admitted %v, %q; want %q", a.Pod, a.Admitted, a.Message, want)
		}
	}
	// The first pod found 4 free; the second finds them all again.
	for i, want := range []int{4, 4} {
		if got := res.Admissions[i].Before.Devices["example.com/gpu"].Free; got != want {
			t.Errorf("pod %s: %d free GPUs said, want %d", res.Admissions[i].Pod, got, want)
		}
	}
}

// The holders of the devices a refused pod found are named from the node's pods; those the API
// server no longer has are marked, and nothing is marked when the node's pods are not known.
func TestNameHolders(t *testing.T) {
	ctx := func() *Context {
		return &Context{Devices: map[string]DeviceContext{"nvidia.com/gpu": {Held: map[string][]string{
			"gpu-0": {"uid-trainer/app"}, "gpu-1": {"uid-gone/app"}, "gpu-2": {"(no pod)"}}}}}
	}
	c := ctx()
	nameHolders(c, map[string]string{"uid-trainer": "default/trainer"}, map[string]bool{"uid-trainer": true})
	want := map[string][]string{"gpu-0": {"default/trainer/app"}, "gpu-1": {"uid-gone/app (pod gone)"}, "gpu-2": {"(no pod)"}}
	if got := c.Devices["nvidia.com/gpu"].Held; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held %v, want %v", got, want)
	}
	c = ctx()
	nameHolders(c, nil, nil)
	if got := c.Devices["nvidia.com/gpu"].Held["gpu-1"]; fmt.Sprint(got) != "[uid-gone/app]" {
		t.Errorf("unknown pods: held %v", got)
	}
}

// With the kubelet's active pods known, a checkpoint holder not among them is freed as
// UpdateAllocatedDevices frees it: pods refused for a gone holder's devices (named above) are
// admitted, and no pod admitted with the holders is refused without them. Not every named one:
// the kubelet asks isDevicePluginResource before it frees (allocateContainerResources), so a
// resource its plugin left long ago still counts while a gone pod holds it, and the pod is
// refused as unregistered (plugin-gone-5min), which leaving the entries out of the restore, as
// naming does, cannot show.
func TestInactiveHoldersFreedOnVectors(t *testing.T) {
	freed := 0
	deviceCases(t, func(name string, in Input, want expectedCase) {
		holders := notAdmittedHolders(in)
		if len(holders) == 0 {
			return
		}
		in.KnownPods = map[string]bool{}
		held, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		in.ActivePods = map[string]bool{}
		free, err := Predict(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := StaleHolders(in); len(got) != len(holders) {
			t.Errorf("%s: %d stale holders, the checkpoint has %d not admitted here", name, len(got), len(holders))
		}
		for i, a := range held.Admissions {
			b := free.Admissions[i]
			if len(b.StaleDeviceHolders) > 0 {
				t.Errorf("%s: pod %s: holders named though freed", name, b.Pod)
			}
			switch {
			case len(a.StaleDeviceHolders) > 0 && b.Admitted:
				freed++
			case a.Admitted && !b.Admitted:
				t.Errorf("%s: pod %s admitted beside the gone holders, refused without them: %s", name, a.Pod, b.Message)
			}
		}
	})
	t.Logf("pods refused for gone holders, admitted once the kubelet frees them: %d", freed)
	if freed == 0 {
		t.Error("no seeded device case has a pod refused for a gone holder's devices")
	}
}

// notAdmittedHolders are the device checkpoint's holders, by pod UID, that are not among the
// pods admitted here (a holder among them is on the node: a restart re-admits its holders).
func notAdmittedHolders(in Input) map[string]map[string][]string {
	if in.Devices.Checkpoint == nil {
		return nil
	}
	holders := replay.CheckpointHolders(in.Devices.Checkpoint)
	for _, p := range in.Pods {
		delete(holders, string(p.UID))
	}
	return holders
}
