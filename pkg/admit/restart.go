package admit

// The kubelet starting again over the pods it ran (issue 44): it restores the managers from
// their checkpoints, then re-admits the node's pods in its order (creation time) while the
// device plugins have not all registered again. A reboot finds no container running; a kubelet
// restart finds the containers the node runs now. Each pod comes back, is refused, or comes back
// only if its plugin registers first.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Kinds of restart.
const (
	RestartReboot  = "reboot"
	RestartKubelet = "kubelet-restart"
)

// Restart is how the kubelet starts again.
type Restart struct {
	// Kind is RestartReboot or RestartKubelet (what the runtime reports at start follows from
	// Running: a reboot has none).
	Kind string `json:"kind"`
	// Running is pod UID -> the containers the runtime reports running at the kubelet's start.
	Running map[string]map[string]bool `json:"running,omitempty"`
	// Exited is pod UID -> the containers with an exited instance beside (a container that
	// restarted before the kubelet did).
	Exited map[string]map[string]bool `json:"exited,omitempty"`
	// SourcesReady is the kubelet's sourcesReady.AllReady() during the re-admissions.
	SourcesReady bool `json:"sourcesReady"`
	// Register is, per device plugin resource, how many re-admissions come before its plugin
	// registers (0 or absent: before the first; more than the pods: never).
	Register map[string]int `json:"register,omitempty"`
}

// ParseRestart reads a restart file (the restart vectors' restart.json):
//
//	{"kind": "reboot" | "kubelet-restart",
//	 "running": ["<pod UID>/<container>", ...],  // running at the kubelet's start
//	 "exited": ["<pod UID>/<container>", ...],   // an exited instance beside (optional)
//	 "sourcesReady": false,
//	 "register": [{"resource": "nvidia.com/gpu", "afterPods": 0}]}
func ParseRestart(b []byte) (*Restart, error) {
	var f struct {
		Kind         string   `json:"kind"`
		Running      []string `json:"running"`
		Exited       []string `json:"exited"`
		SourcesReady bool     `json:"sourcesReady"`
		Register     []struct {
			Resource  string `json:"resource"`
			AfterPods int    `json:"afterPods"`
		} `json:"register"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("restart file: %w", err)
	}
	if f.Kind != RestartReboot && f.Kind != RestartKubelet {
		return nil, fmt.Errorf("restart file: kind %q, want %q or %q", f.Kind, RestartReboot, RestartKubelet)
	}
	r := &Restart{Kind: f.Kind, SourcesReady: f.SourcesReady, Register: map[string]int{}}
	for _, set := range []struct {
		list []string
		into *map[string]map[string]bool
	}{{f.Running, &r.Running}, {f.Exited, &r.Exited}} {
		for _, s := range set.list {
			pod, ctr, ok := strings.Cut(s, "/")
			if !ok || pod == "" || ctr == "" {
				return nil, fmt.Errorf("restart file: container %q, want <pod UID>/<container>", s)
			}
			if *set.into == nil {
				*set.into = map[string]map[string]bool{}
			}
			if (*set.into)[pod] == nil {
				(*set.into)[pod] = map[string]bool{}
			}
			(*set.into)[pod][ctr] = true
		}
	}
	if f.Kind == RestartReboot && len(r.Running) > 0 {
		return nil, fmt.Errorf("restart file: a reboot with containers running")
	}
	for _, reg := range f.Register {
		if reg.Resource == "" || reg.AfterPods < 0 {
			return nil, fmt.Errorf("restart file: registration %+v", reg)
		}
		r.Register[reg.Resource] = reg.AfterPods
	}
	return r, nil
}

// replayRestart is the replay's view of r: the runtime's containers.
func (r *Restart) replayRestart() *replay.Restart {
	out := &replay.Restart{SourcesReady: r.SourcesReady, Containers: map[string]map[string]replay.RuntimeContainer{}}
	add := func(set map[string]map[string]bool, running bool) {
		for pod, ctrs := range set {
			if out.Containers[pod] == nil {
				out.Containers[pod] = map[string]replay.RuntimeContainer{}
			}
			for ctr, on := range ctrs {
				if !on {
					continue
				}
				c := out.Containers[pod][ctr]
				if running {
					c.Running++
				} else {
					c.Exited++
				}
				out.Containers[pod][ctr] = c
			}
		}
	}
	add(r.Running, true)
	add(r.Exited, false)
	return out
}

// deferred are the plugins of devices that register after some re-admissions, sorted.
func (r *Restart) deferred(devices *replay.DeviceInput) []string {
	var out []string
	for resource := range devices.Plugins {
		if r.Register[resource] > 0 {
			out = append(out, resource)
		}
	}
	sort.Strings(out)
	return out
}

// registerBefore registers the deferred plugins due before re-admission i (0-based), in the
// order of their names.
func (r *Restart) registerBefore(node *replay.Node, deferred []string, i int) {
	for _, resource := range deferred {
		if r.Register[resource] == i {
			node.RegisterPlugin(resource)
		}
	}
}

// restartDevices is in.Devices with the late plugins deferred.
func restartDevices(in Input) *replay.DeviceInput {
	if in.Devices == nil || in.Restart == nil {
		return in.Devices
	}
	dev := *in.Devices
	dev.Deferred = map[string]bool{}
	for _, resource := range in.Restart.deferred(in.Devices) {
		dev.Deferred[resource] = true
	}
	return &dev
}

// Fates of a pod after a restart.
const (
	FateComesBack = "comes back"
	FateRefused   = "refused"
	// FateWaitsOnPlugin: refused as the plugins register, admitted had they registered before
	// the re-admissions began.
	FateWaitsOnPlugin = "comes back only if its plugin registers first"
)

// RestartResult is the restart replayed: the re-admissions as the plugins register, and each
// pod's fate.
type RestartResult struct {
	Result
	Restart Restart `json:"restart"`
	// Fates are the pods', in the order of Admissions.
	Fates []PodFate `json:"fates"`
}

// PodFate is one pod's after the restart.
type PodFate struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace,omitempty"`
	UID       string `json:"uid,omitempty"`
	Fate      string `json:"fate"`
	// WaitsOn are the plugins (resources) it waits on: those it asks for that register late.
	WaitsOn []string `json:"waitsOn,omitempty"`
	// Reason and Message are the kubelet's refusal, word for word (FateRefused and
	// FateWaitsOnPlugin): Message as its Warning event says it, StatusMessage as the pod's
	// status.message (the release's rejectPod prefix before Message).
	Reason        string `json:"reason,omitempty"`
	Message       string `json:"message,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// IfRegistered is the refusal had every plugin registered before the re-admissions, where
	// its words differ (a pod refused either way: its devices are no longer healthy, say).
	IfRegistered *Refusal `json:"ifRegistered,omitempty"`
	// NotJudged: the replay cannot tell (Admission.NotJudged says why, or Why for a pod
	// rebuilt from the node's files).
	NotJudged bool   `json:"notJudged,omitempty"`
	Why       string `json:"why,omitempty"`
}

// Refusal is the kubelet's refusal of a pod: its reason, its Warning event's message and the
// pod's status.message.
type Refusal struct {
	Reason        string `json:"reason"`
	Message       string `json:"message"`
	StatusMessage string `json:"statusMessage"`
}

// PredictRestart replays the kubelet starting again (in.Restart; in.Pods in the kubelet's
// order, see SortByCreation), then, for the pods refused, the same restart with every plugin
// registered before the first re-admission: a pod admitted there waits on its plugin.
func PredictRestart(in Input) (RestartResult, error) {
	if in.Restart == nil {
		return RestartResult{}, fmt.Errorf("a restart prediction needs the restart (reboot or kubelet restart)")
	}
	res, err := Predict(in)
	if err != nil {
		return RestartResult{}, err
	}
	out := RestartResult{Result: res, Restart: *in.Restart, Fates: []PodFate{}}
	// The plugins that register late: what a refused pod may wait on.
	var late map[string]bool
	if dev := restartDevices(in); dev != nil {
		late = dev.Deferred
	}
	var early *Result
	if len(late) > 0 && slices.ContainsFunc(res.Admissions, func(a Admission) bool { return !a.Admitted }) {
		try := in
		r := *in.Restart
		r.Register = nil
		try.Restart = &r
		e, err := Predict(try)
		if err != nil {
			return RestartResult{}, err
		}
		early = &e
	}
	for i, a := range res.Admissions {
		f := PodFate{Pod: a.Pod, Namespace: a.Namespace, UID: a.UID, Fate: FateComesBack, NotJudged: a.Verdict == VerdictNotJudged}
		if f.NotJudged {
			f.Why = strings.Join(a.NotJudged, "; ")
		}
		if !a.Admitted {
			f.Fate, f.Reason, f.Message, f.StatusMessage = FateRefused, a.Reason, a.Message, a.StatusMessage
			switch {
			case early == nil || i >= len(early.Admissions):
			case early.Admissions[i].Admitted:
				f.Fate = FateWaitsOnPlugin
				f.WaitsOn = podResources(in.Pods[i], late)
			case early.Admissions[i].Message != a.Message || early.Admissions[i].Reason != a.Reason:
				e := early.Admissions[i]
				f.IfRegistered = &Refusal{Reason: e.Reason, Message: e.Message, StatusMessage: e.StatusMessage}
			}
		}
		out.Fates = append(out.Fates, f)
	}
	return out, nil
}

// podResources are the resources of set the pod's containers ask for, sorted.
func podResources(pod *v1.Pod, set map[string]bool) []string {
	found := map[string]bool{}
	for _, c := range podContainersOf(pod) {
		for name := range c.Resources.Limits {
			if set[string(name)] {
				found[string(name)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// SortByCreation orders pods as the kubelet's HandlePodAdditions does (PodsByCreationTime: by
// creation time, a stable sort).
func SortByCreation(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
}
