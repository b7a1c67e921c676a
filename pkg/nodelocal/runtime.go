package nodelocal

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// A Runtime is where a container runtime keeps the OCI bundle of each container it runs, and
// which annotations of the bundle's config.json name the container's pod and name: what the
// debug pod reads from the pods' statuses, to find each container's cgroup.
type Runtime struct {
	// Name is the scheme of the container IDs in pod statuses ("containerd://<id>").
	Name string
	// Bundles matches each container's config.json; the ID is the directory IDLevel levels
	// above it (1: the file's own directory).
	Bundles string
	IDLevel int
	// Type, PodUID and Container are the annotations holding the container's type (Workload:
	// a pod's container; Sandbox: its sandbox), its pod's UID and its name. Labels, when set, is
	// an annotation holding the kubelet's labels as JSON, where PodUID and Container are looked
	// up instead (CRI-O).
	Type, Workload, Sandbox, PodUID, Container, Labels string
}

// Runtimes are the runtimes' default state dirs: containerd's CRI (namespace k8s.io, its v2
// shims' task dirs; containerd's internal/cri/annotations) and CRI-O (its run root's
// userdata dirs; cri-o's pkg/annotations, the kubelet's labels in io.kubernetes.cri-o.Labels).
var Runtimes = []Runtime{
	{Name: "containerd", Bundles: "/run/containerd/io.containerd.runtime.v2.task/k8s.io/*/config.json", IDLevel: 1,
		Type: "io.kubernetes.cri.container-type", Workload: "container", Sandbox: "sandbox", PodUID: "io.kubernetes.cri.sandbox-uid", Container: "io.kubernetes.cri.container-name"},
	{Name: "cri-o", Bundles: "/run/containers/storage/overlay-containers/*/userdata/config.json", IDLevel: 2,
		Type: "io.kubernetes.cri-o.ContainerType", Workload: "container", Sandbox: "sandbox", Labels: "io.kubernetes.cri-o.Labels", PodUID: "io.kubernetes.pod.uid", Container: "io.kubernetes.container.name"},
}

// Bounds: a node runs at most a few hundred containers; a bundle's config.json is tens of KiB.
const (
	maxBundles     = 8192
	maxBundleBytes = 4 << 20
)

// runningContainers lists the containers of the runtimes' bundles as the pods' statuses would
// (every one running: the runtime removes a bundle when its task is deleted), and the pods whose
// sandbox runs.
func runningContainers(runtimes []Runtime) (*fetch.PodIndex, []string) {
	ix := &fetch.PodIndex{Statuses: map[string][]fetch.ContainerStatus{}, Sandboxes: map[string]bool{}}
	var warnings []string
	seen := 0
	for _, rt := range runtimes {
		files, err := filepath.Glob(rt.Bundles)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s bundles: %v", rt.Name, err))
			continue
		}
		for _, f := range files {
			if seen++; seen > maxBundles {
				return ix, append(warnings, fmt.Sprintf("over %d container bundles: the rest not read", maxBundles))
			}
			uid, name, sandbox, ok, err := readBundle(rt, f)
			switch {
			case err != nil:
				warnings = append(warnings, fmt.Sprintf("%s: %v", f, err))
			case ok && sandbox:
				ix.Sandboxes[uid] = true
			case ok:
				id := f
				for range rt.IDLevel {
					id = filepath.Dir(id)
				}
				ix.Statuses[uid] = append(ix.Statuses[uid], fetch.ContainerStatus{Name: name, ID: rt.Name + "://" + filepath.Base(id), Running: true})
			}
		}
	}
	for uid := range ix.Statuses {
		sort.Slice(ix.Statuses[uid], func(i, j int) bool { return ix.Statuses[uid][i].Name < ix.Statuses[uid][j].Name })
	}
	return ix, warnings
}

// readBundle reads a config.json's annotations: ok when it is a pod's container (its pod's UID
// and its name) or a pod's sandbox (its UID only).
func readBundle(rt Runtime, file string) (uid, name string, sandbox, ok bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return "", "", false, false, err
	}
	defer f.Close()
	var spec struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxBundleBytes)).Decode(&spec); err != nil {
		return "", "", false, false, fmt.Errorf("not an OCI config (or over %d bytes): %v", maxBundleBytes, err)
	}
	a := spec.Annotations
	sandbox = a[rt.Type] == rt.Sandbox && rt.Sandbox != ""
	if a[rt.Type] != rt.Workload && !sandbox {
		return "", "", false, false, nil
	}
	names := a
	if rt.Labels != "" {
		names = map[string]string{}
		if err := json.Unmarshal([]byte(a[rt.Labels]), &names); err != nil {
			return "", "", false, false, fmt.Errorf("%s: %v", rt.Labels, err)
		}
	}
	uid, name = names[rt.PodUID], names[rt.Container]
	if sandbox {
		return uid, "", true, uid != "", nil
	}
	if uid == "" || name == "" {
		return "", "", false, false, nil
	}
	return uid, name, false, true, nil
}
