package render

import (
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// PodAllocations is one pod-resources file of one node.
type PodAllocations struct {
	Source
	// File is the file's kind: allocated_pods_state, actuated_pods_state or pod_status_manager_state.
	File  nodestate.Kind
	State *nodestate.PodAllocationState
}

// PodRow is the resources the kubelet recorded for one container (or pod-level resources).
type PodRow struct {
	Node      string `json:"node,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	PodUID    string `json:"podUID"`
	Container string `json:"container,omitempty"`
	// Source says which record: "allocated", "actuated" or "allocated (pod_status_manager_state)".
	Source       string              `json:"source"`
	Requests     corev1.ResourceList `json:"requests,omitempty"`
	Limits       corev1.ResourceList `json:"limits,omitempty"`
	LimitsKnown  bool                `json:"limitsKnown"`
	ResizeStatus string              `json:"resizeStatus,omitempty"`
	EmptyDirs    map[string]string   `json:"emptyDirLimits,omitempty"`
	// DebugPod marks the plugin's own debug pod, which the kubelet's files list like any pod.
	DebugPod bool `json:"debugPod,omitempty"`
}

var podSources = map[nodestate.Kind]string{
	nodestate.KindAllocated: "allocated",
	nodestate.KindActuated:  "actuated",
	nodestate.KindPodStatus: "allocated (pod_status_manager_state)",
}

// PodRows flattens the files into one row per container and source.
func PodRows(in []PodAllocations) []PodRow {
	var rows []PodRow
	for _, n := range in {
		var node []PodRow
		for uid, p := range n.State.Pods {
			ns, name := podName(n.Names, uid)
			debug := isDebugPod(n.Names, uid)
			if name == "" {
				// A 1.38+ V2 file names its pods itself (podList), those gone from the API
				// server too: the kubelet keeps a deleted pod in actuated_pods_state until
				// its container GC, earlier debug pods included.
				ns, name = p.Namespace, p.Name
				debug = debug || isDebugPodNamed(n.Names, ns, name)
			}
			base := PodRow{Node: n.Node, Namespace: ns, Pod: name, PodUID: uid, Source: podSources[n.File],
				LimitsKnown: !n.State.RequestsOnly, ResizeStatus: p.ResizeStatus, DebugPod: debug}
			for c, res := range p.Containers {
				r := base
				r.Container, r.Requests, r.Limits = c, res.Requests, res.Limits
				node = append(node, r)
			}
			if p.PodLevel != nil || len(p.EmptyDirVolumeLimits) > 0 || len(p.Containers) == 0 {
				r := base
				if p.PodLevel != nil {
					r.Requests, r.Limits = p.PodLevel.Requests, p.PodLevel.Limits
				}
				for vol, q := range p.EmptyDirVolumeLimits {
					if r.EmptyDirs == nil {
						r.EmptyDirs = map[string]string{}
					}
					r.EmptyDirs[vol] = q.String()
				}
				node = append(node, r)
			}
		}
		rows = append(rows, node...)
	}
	// One node's files come in separately: order rows by node, then pod, so a container's
	// allocated and actuated rows stand together.
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		return a.Node+"\x00"+a.Namespace+a.Pod+a.PodUID+a.Container+a.Source < b.Node+"\x00"+b.Namespace+b.Pod+b.PodUID+b.Container+b.Source
	})
	return rows
}

// PrintPods prints the resources the kubelet allocated to (and actuated for) each container.
func PrintPods(w io.Writer, o Options, in []PodAllocations) error {
	rows := PodRows(in)
	if done, err := printStructured(w, o, "PodResourceList", rows); done {
		return err
	}
	headers := []string{"POD", "CONTAINER", "SOURCE", "REQUESTS", "LIMITS"}
	if o.Format == Wide {
		headers = append(headers, "RESIZE", "EMPTYDIR-LIMITS", "POD-UID")
	}
	t := newTable(w, o, headers...)
	for _, r := range rows {
		pod := podCell(r.Namespace, r.Pod, r.PodUID)
		if r.DebugPod {
			pod += DebugPodMark
		}
		container := r.Container
		if container == "" {
			container = "(pod-level)"
		}
		limits := resourceList(r.Limits)
		if !r.LimitsKnown {
			limits = "(not recorded)"
		}
		cells := []string{pod, container, r.Source, resourceList(r.Requests), limits}
		if o.Format == Wide {
			var dirs []string
			for _, v := range slices.Sorted(maps.Keys(r.EmptyDirs)) {
				dirs = append(dirs, v+"="+r.EmptyDirs[v])
			}
			cells = append(cells, r.ResizeStatus, strings.Join(dirs, ","), r.PodUID)
		}
		t.add(r.Node, cells...)
	}
	t.render()
	return nil
}

// resourceList shows "cpu=500m,memory=128Mi".
func resourceList(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		q := l[corev1.ResourceName(n)]
		parts[i] = n + "=" + q.String()
	}
	return strings.Join(parts, ",")
}
