// Package cgroup reads what a node really runs: each container's cpuset (cpuset.cpus, its
// effective CPUs and cpuset.mems) from the host's cgroup filesystem, found from the pod UID and
// the container ID in the pod's status. The cgroup layouts (v1 or v2, the systemd or cgroupfs
// driver, containerd or CRI-O names) are rows of data; the debug pod's shell prints a bounded
// dump of the kubepods trees (Script), Parse reads it and Resolve matches it to the pods.
//
// A pure package: bytes and pod references in, a model out. The comparison with the
// checkpoints' claims is doctor's.
package cgroup

import "strings"

// A Hierarchy is how one cgroup version shows the cpuset controller: where its tree starts
// under the cgroup mount and what its files are called.
type Hierarchy struct {
	Version int
	// Root is the cpuset tree under the cgroup mount: v1 mounts each controller apart.
	Root string
	// CPUs, EffectiveCPUs and Mems are the file names.
	CPUs, EffectiveCPUs, Mems string
}

// Hierarchies are the two cgroup versions, v2 first: a v2 mount is told by its
// cgroup.controllers file, v1 (or a hybrid mount) by its cpuset directory.
var Hierarchies = []Hierarchy{
	{Version: 2, Root: ".", CPUs: "cpuset.cpus", EffectiveCPUs: "cpuset.cpus.effective", Mems: "cpuset.mems"},
	{Version: 1, Root: "cpuset", CPUs: "cpuset.cpus", EffectiveCPUs: "cpuset.effective_cpus", Mems: "cpuset.mems"},
}

// HierarchyOf returns the hierarchy of a version.
func HierarchyOf(version int) (Hierarchy, bool) {
	for _, h := range Hierarchies {
		if h.Version == version {
			return h, true
		}
	}
	return Hierarchy{}, false
}

// A Layout is where one combination of cgroup version, cgroup driver and container runtime puts
// a container: its directory's name inside its pod's directory. In the templates {uid} is the
// pod UID, {uid_} the pod UID with '-' written '_' (systemd unit names), {id} the container ID.
type Layout struct {
	Name    string
	Version int
	// Driver is the kubelet's (and the runtime's) cgroupDriver.
	Driver string
	// Runtime is the scheme of the container ID in the pod's status ("containerd://...").
	Runtime string
	// PodDirs are the names the kubelet gives the pod's directory, one per QoS class.
	PodDirs []string
	// Container is the name the runtime gives the container's directory.
	Container string
}

// The kubelet's pod directories (pkg/kubelet/cm: pod<uid> under kubepods[/burstable|/besteffort],
// converted to systemd slices by the systemd driver: '-' in a name part becomes '_').
var (
	cgroupfsPods = []string{"pod{uid}"}
	systemdPods  = []string{"kubepods-pod{uid_}.slice", "kubepods-burstable-pod{uid_}.slice", "kubepods-besteffort-pod{uid_}.slice"}
)

// Layouts: containerd's CRI puts a container at <parent>/<id> under cgroupfs and in the unit
// cri-containerd-<id>.scope under systemd; CRI-O at <parent>/crio-<id> and crio-<id>.scope. The
// cgroup version changes only the tree's root and file names (Hierarchies).
var Layouts = []Layout{
	{Name: "v1/cgroupfs/containerd", Version: 1, Driver: "cgroupfs", Runtime: "containerd", PodDirs: cgroupfsPods, Container: "{id}"},
	{Name: "v1/systemd/containerd", Version: 1, Driver: "systemd", Runtime: "containerd", PodDirs: systemdPods, Container: "cri-containerd-{id}.scope"},
	{Name: "v1/cgroupfs/cri-o", Version: 1, Driver: "cgroupfs", Runtime: "cri-o", PodDirs: cgroupfsPods, Container: "crio-{id}"},
	{Name: "v1/systemd/cri-o", Version: 1, Driver: "systemd", Runtime: "cri-o", PodDirs: systemdPods, Container: "crio-{id}.scope"},
	{Name: "v2/cgroupfs/containerd", Version: 2, Driver: "cgroupfs", Runtime: "containerd", PodDirs: cgroupfsPods, Container: "{id}"},
	{Name: "v2/systemd/containerd", Version: 2, Driver: "systemd", Runtime: "containerd", PodDirs: systemdPods, Container: "cri-containerd-{id}.scope"},
	{Name: "v2/cgroupfs/cri-o", Version: 2, Driver: "cgroupfs", Runtime: "cri-o", PodDirs: cgroupfsPods, Container: "crio-{id}"},
	{Name: "v2/systemd/cri-o", Version: 2, Driver: "systemd", Runtime: "cri-o", PodDirs: systemdPods, Container: "crio-{id}.scope"},
}

// fill writes a template's placeholders.
func fill(template, uid, id string) string {
	return strings.NewReplacer("{uid_}", strings.ReplaceAll(uid, "-", "_"), "{uid}", uid, "{id}", id).Replace(template)
}

// podUIDOf reads a pod UID back from a pod directory's name by one template ("" when it is not
// one): the text between the template's prefix and suffix, '_' read as '-' for {uid_}.
func podUIDOf(template, name string) string {
	for _, ph := range []string{"{uid_}", "{uid}"} {
		pre, suf, ok := strings.Cut(template, ph)
		if !ok {
			continue
		}
		if len(name) <= len(pre)+len(suf) || !strings.HasPrefix(name, pre) || !strings.HasSuffix(name, suf) {
			return ""
		}
		uid := name[len(pre) : len(name)-len(suf)]
		if ph == "{uid_}" {
			uid = strings.ReplaceAll(uid, "_", "-")
		}
		return uid
	}
	return ""
}
