package admit

// The answers about devices beyond the replay's own: what a gone pod's devices cost, and the
// most devices a refused pod could have had. Both replay the same node again with one input
// changed; nothing is computed beside the replay.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// StaleHolder is a pod the device checkpoint gives devices to, which the API server no longer
// has on the node.
type StaleHolder struct {
	PodUID string `json:"podUID"`
	// Devices are the devices it holds, per resource.
	Devices map[string][]string `json:"devices"`
}

// StaleHolders are the device checkpoint's holders that are neither among the node's pods
// (the active ones when known, else all the API server has) nor among those admitted here,
// sorted by UID.
func StaleHolders(in Input) []StaleHolder {
	known := in.ActivePods
	if known == nil {
		known = in.KnownPods
	}
	if known == nil || in.Devices == nil || in.Devices.Checkpoint == nil {
		return nil
	}
	admitted := map[string]bool{}
	for _, p := range in.Pods {
		admitted[string(p.UID)] = true
	}
	holders := replay.CheckpointHolders(in.Devices.Checkpoint)
	var out []StaleHolder
	for _, uid := range slices.Sorted(maps.Keys(holders)) {
		if !known[uid] && !admitted[uid] {
			out = append(out, StaleHolder{PodUID: uid, Devices: holders[uid]})
		}
	}
	return out
}

// maxStaleTries bounds the replays nameStaleHolders makes one holder at a time.
const maxStaleTries = 16

// nameStaleHolders names, for each pod the resource managers refused, the gone pods whose
// devices are the cause: each holder alone when dropping it admits the pod, else all of them
// together when that does. The proof is the same admissions replayed without their entries, as
// the kubelet would run once it had freed them.
func nameStaleHolders(in Input, res *Result) error {
	if in.ActivePods != nil {
		return nil // the kubelet's active pods known: their devices were freed as it frees them
	}
	stale := StaleHolders(in)
	if len(stale) == 0 {
		return nil
	}
	refused := func(r Result) []int {
		var out []int
		for i, a := range r.Admissions {
			if !a.Admitted && !a.NotReached && a.Handler == HandlerResourceManagers {
				out = append(out, i)
			}
		}
		return out
	}
	todo := refused(*res)
	if len(todo) == 0 {
		return nil
	}
	without := func(holders []StaleHolder) (Result, error) {
		try := in
		dev := *in.Devices
		dev.Without = map[string]bool{}
		for _, h := range holders {
			dev.Without[h.PodUID] = true
		}
		try.Devices, try.KnownPods = &dev, nil
		return Predict(try)
	}
	// Each holder alone, up to maxStaleTries of them (a checkpoint may hold many gone pods;
	// beyond that only all of them together are tried).
	alone := stale
	if len(alone) > maxStaleTries {
		alone = nil
	}
	for _, h := range alone {
		r, err := without([]StaleHolder{h})
		if err != nil {
			return err
		}
		for _, i := range todo {
			if i < len(r.Admissions) && r.Admissions[i].Admitted {
				res.Admissions[i].StaleDeviceHolders = append(res.Admissions[i].StaleDeviceHolders, h)
			}
		}
	}
	var rest []int
	for _, i := range todo {
		if len(res.Admissions[i].StaleDeviceHolders) == 0 {
			rest = append(rest, i)
		}
	}
	if len(rest) > 0 && len(stale) > 1 {
		r, err := without(stale)
		if err != nil {
			return err
		}
		for _, i := range rest {
			if i < len(r.Admissions) && r.Admissions[i].Admitted {
				res.Admissions[i].StaleDeviceHolders = stale
			}
		}
	}
	for _, i := range todo {
		if a := &res.Admissions[i]; len(a.StaleDeviceHolders) > 0 {
			a.Why = append(a.Why, staleText(a.StaleDeviceHolders))
		}
	}
	return nil
}

func staleText(holders []StaleHolder) string {
	var parts []string
	for _, h := range holders {
		var devs []string
		for _, r := range slices.Sorted(maps.Keys(h.Devices)) {
			devs = append(devs, r+" "+strings.Join(h.Devices[r], ","))
		}
		parts = append(parts, fmt.Sprintf("pod UID %s (%s)", h.PodUID, strings.Join(devs, "; ")))
	}
	return "the cause: device-plugins/kubelet_internal_checkpoint gives devices to " + strings.Join(parts, " and ") +
		", not among the node's pods; replayed without them the pod is admitted. The kubelet frees a gone pod's devices at its next allocation only once it no longer counts the pod active (stale bookkeeping, kubernetes/kubernetes#130145, where a kubelet restart cleared it)"
}

// DeviceRequests are the device-plugin resources the pod's app containers ask for, in all.
func DeviceRequests(pod *v1.Pod, devices map[string]DeviceContext) map[string]int {
	out := map[string]int{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if _, ok := devices[string(name)]; ok {
				out[string(name)] += int(q.Value())
			}
		}
	}
	return out
}

// LargestDeviceRequest is the most devices of resourceName the pod at index i of in.Pods is
// admitted with, the pods before it admitted first and its other requests (CPUs, memory, other
// devices, init containers') as they are: its app containers' request is cut from the last
// container. ok is false when even none of them admits it (the devices are not what refuses it).
func LargestDeviceRequest(in Input, i int, resourceName string) (n int, ok bool, err error) {
	pod := in.Pods[i]
	name := v1.ResourceName(resourceName)
	asked := 0
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[name]; ok {
			asked += int(q.Value())
		}
	}
	for n := asked - 1; n >= 0; n-- {
		try := in
		try.Pods = append(slices.Clone(in.Pods[:i]), withDevices(pod, name, n))
		try.KnownPods = nil
		r, err := Predict(try)
		if err != nil {
			return 0, false, err
		}
		if len(r.Admissions) == i+1 && r.Admissions[i].Admitted {
			return n, true, nil
		}
	}
	return 0, false, nil
}

// withDevices is the pod whose app containers ask n of name in all, the cut taken from the
// last containers.
func withDevices(pod *v1.Pod, name v1.ResourceName, n int) *v1.Pod {
	p := pod.DeepCopy()
	left := n
	for j := range p.Spec.Containers {
		c := &p.Spec.Containers[j]
		q, ok := c.Resources.Limits[name]
		if !ok {
			continue
		}
		keep := min(int(q.Value()), left)
		left -= keep
		for _, list := range []v1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			if _, ok := list[name]; !ok {
				continue
			}
			if keep == 0 {
				delete(list, name)
			} else {
				list[name] = *resource.NewQuantity(int64(keep), resource.DecimalSI)
			}
		}
	}
	return p
}

// podContainersOf is the pod's init containers, then its app containers.
func podContainersOf(pod *v1.Pod) []v1.Container {
	return append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

// nameHolders names the pods holding the devices a refused pod found ("<pod UID>/<ctr>" becomes
// "<namespace>/<pod>/<ctr>"), and marks those the API server no longer has.
func nameHolders(c *Context, names map[string]string, known map[string]bool) {
	for _, dc := range c.Devices {
		for _, holders := range dc.Held {
			for j, h := range holders {
				uid, ctr, ok := strings.Cut(h, "/")
				if !ok {
					continue
				}
				if name, found := names[uid]; found {
					holders[j] = name + "/" + ctr
				} else if known != nil {
					holders[j] = h + " (pod gone)"
				}
			}
		}
	}
}
