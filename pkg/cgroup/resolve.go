package cgroup

import (
	"path"
	"slices"
	"sort"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// PodRef is a pod as the API server has it: its UID and its containers' IDs from its status.
type PodRef struct {
	UID        string
	Containers []ContainerRef
}

// ContainerRef is one container (init containers too) of a pod's status.
type ContainerRef struct {
	Name string
	// ID is as in the status, "<runtime>://<id>"; empty before the container first started.
	ID string
	// Running: the status says the container runs, so its cgroup must exist.
	Running bool
}

// Node is what runs on a node, by its cgroups.
type Node struct {
	// Version is the cgroup version of the cpuset tree; 0 when the node showed none.
	Version int
	// Cut: the node had more directories than were read; what was not read is not reported.
	Cut bool
	// Pods are the pod directories found, by pod UID, whether the API has the pod or not.
	Pods map[string]*PodCgroup
	// Containers are the containers found, by pod UID and container name.
	Containers map[string]map[string]*ContainerCgroup
	// Layouts names the layouts the containers were found by, sorted.
	Layouts []string
	// Missing are running containers whose cgroup was not found.
	Missing []Missing
}

// PodCgroup is a pod's directory.
type PodCgroup struct {
	Path   string
	Driver string
	// Children is how many directories it holds, one per container that has a cgroup (the
	// sandbox's included): 0 means nothing of the pod runs.
	Children int
}

// ContainerCgroup is a container's directory and its cpuset files.
type ContainerCgroup struct {
	Path   string `json:"path"`
	Layout string `json:"layout"`
	// CPUs is cpuset.cpus, EffectiveCPUs the CPUs it may really run on (cpuset.cpus.effective,
	// v1's cpuset.effective_cpus), Mems is cpuset.mems.
	CPUs          Value `json:"cpus"`
	EffectiveCPUs Value `json:"effectiveCpus"`
	Mems          Value `json:"mems"`
}

// Value is one cpuset file: its text, and the set when it parses.
type Value struct {
	Raw     string        `json:"raw"`
	Present bool          `json:"present"`
	Set     cpuset.CPUSet `json:"-"`
	Err     string        `json:"error,omitempty"`
}

// Runs is the CPU (or NUMA node) set the container really uses: the file's set, or, when the
// file is empty (cgroup v2 leaves cpuset.cpus empty unless written), the effective one.
func (c *ContainerCgroup) Runs() (cpuset.CPUSet, bool) {
	switch {
	case c.CPUs.Present && c.CPUs.Err == "" && c.CPUs.Set.Size() > 0:
		return c.CPUs.Set, true
	case c.EffectiveCPUs.Present && c.EffectiveCPUs.Err == "":
		return c.EffectiveCPUs.Set, true
	}
	return cpuset.New(), false
}

// Missing is a running container without a cgroup.
type Missing struct {
	Pod, Container, ID string
	// Reason says why: no directory by any layout, or a runtime no layout knows.
	Reason string
}

// Resolve finds each pod's directory and each container's directory (by the Layouts of the
// dump's cgroup version) and reads their cpuset files.
func Resolve(d *Dump, pods []PodRef) *Node {
	n := &Node{Version: d.Version, Cut: d.Cut, Pods: map[string]*PodCgroup{}, Containers: map[string]map[string]*ContainerCgroup{}}
	h, ok := HierarchyOf(d.Version)
	if !ok {
		return n
	}
	layouts := slices.DeleteFunc(slices.Clone(Layouts), func(l Layout) bool { return l.Version != d.Version })

	dirs := make([]string, 0, len(d.Dirs))
	for p := range d.Dirs {
		dirs = append(dirs, p)
	}
	sort.Strings(dirs) // the first of two directories claiming one pod wins, on every run
	byName := map[string][]string{}
	for _, p := range dirs {
		byName[path.Base(p)] = append(byName[path.Base(p)], p)
		if uid, driver := podOf(layouts, path.Base(p)); uid != "" && n.Pods[uid] == nil {
			n.Pods[uid] = &PodCgroup{Path: p, Driver: driver}
		}
	}
	podAt := map[string]*PodCgroup{}
	for _, pc := range n.Pods {
		podAt[pc.Path] = pc
	}
	for _, p := range dirs {
		if pc := podAt[path.Dir(p)]; pc != nil && p != "." {
			pc.Children++
		}
	}

	found := map[string]bool{}
	for _, pod := range pods {
		pc := n.Pods[pod.UID]
		for _, c := range pod.Containers {
			if c.ID == "" {
				continue
			}
			runtime, id, _ := strings.Cut(c.ID, "://")
			cc, known := locate(layouts, d, h, pc, runtime, pod.UID, id)
			switch {
			case cc != nil:
				if n.Containers[pod.UID] == nil {
					n.Containers[pod.UID] = map[string]*ContainerCgroup{}
				}
				n.Containers[pod.UID][c.Name] = cc
				found[cc.Layout] = true
			case !c.Running:
			case !known:
				n.Missing = append(n.Missing, Missing{Pod: pod.UID, Container: c.Name, ID: c.ID, Reason: "no cgroup layout for runtime " + runtime})
			case pc == nil:
				n.Missing = append(n.Missing, Missing{Pod: pod.UID, Container: c.Name, ID: c.ID, Reason: "no cgroup for the pod"})
			default:
				n.Missing = append(n.Missing, Missing{Pod: pod.UID, Container: c.Name, ID: c.ID, Reason: "no cgroup for the container in " + pc.Path})
			}
		}
	}
	for l := range found {
		n.Layouts = append(n.Layouts, l)
	}
	sort.Strings(n.Layouts)
	return n
}

// podOf reads a pod UID from a directory name by the layouts' pod templates.
func podOf(layouts []Layout, name string) (uid, driver string) {
	for _, l := range layouts {
		for _, t := range l.PodDirs {
			if uid := podUIDOf(t, name); uid != "" {
				return uid, l.Driver
			}
		}
	}
	return "", ""
}

// locate finds a container's directory inside its pod's by the layouts of its runtime; known
// says whether any layout has that runtime.
func locate(layouts []Layout, d *Dump, h Hierarchy, pod *PodCgroup, runtime, uid, id string) (cc *ContainerCgroup, known bool) {
	for _, l := range layouts {
		if l.Runtime != runtime {
			continue
		}
		known = true
		if pod == nil || l.Driver != pod.Driver || !safeName(id) {
			continue
		}
		p := path.Join(pod.Path, fill(l.Container, uid, id))
		if dir := d.Dirs[p]; dir != nil {
			return &ContainerCgroup{Path: p, Layout: l.Name, CPUs: value(dir, h.CPUs), EffectiveCPUs: value(dir, h.EffectiveCPUs), Mems: value(dir, h.Mems)}, true
		}
	}
	return nil, known
}

func value(dir *Dir, file string) Value {
	raw, ok := dir.Files[file]
	if !ok {
		return Value{}
	}
	v := Value{Raw: raw, Present: true}
	set, err := machine.ParseCPUList(raw)
	if err != nil {
		v.Err = err.Error()
	} else {
		v.Set = set
	}
	return v
}

// safeName: an ID from the API is one path element, never a way up or down the tree.
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}
