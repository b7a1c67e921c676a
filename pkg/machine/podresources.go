package machine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The PodResources dump is what the kubelet's PodResources API (pod-resources/kubelet.sock,
// k8s.io/kubelet/pkg/apis/podresources/v1) answered on the node, read by the plugin's own
// binary in the debug pod (the node reader; busybox cannot speak gRPC): the devices the kubelet
// holds with the NUMA nodes each plugin SENT in ListAndWatch, which is what the device manager's
// hints read (topology_hints.go), never sysfs. One JSON document between a header and an end
// line, so a cut dump is told from an empty one:
//
//	@@nodestate-podresources v1
//	{"allocatable":[{"resource":"nvidia.com/gpu","ids":["GPU-..."],"numaNodes":[0]}],"pods":[...]}
//	@@end
const (
	PodResourcesHeader = "@@nodestate-podresources v1"
	PodResourcesEnd    = SysfsEnd
	// MaxPodResourcesBytes bounds the dump: a node of 1,000 containers holding 8 devices each
	// with 100-byte IDs is under 2 MiB.
	MaxPodResourcesBytes = 4 << 20
)

// PodResources is the kubelet's PodResources API on one node.
type PodResources struct {
	// Allocatable is GetAllocatableResources's devices (GA in 1.28): each healthy registered
	// device-plugin device with the NUMA nodes its plugin reported. Unhealthy devices are not
	// listed.
	Allocatable []PodResourcesDevices `json:"allocatable"`
	// Pods is List: which container holds which devices.
	Pods []PodResourcesPod `json:"pods"`
	// Error says why the API could not be read (no socket: a kubelet without the API or
	// another root dir; GetAllocatableResources unimplemented: before 1.28, or its gate off;
	// a timeout). Empty when it was read.
	Error string `json:"error,omitempty"`
}

// PodResourcesDevices is one ContainerDevices message: a resource's devices that share one
// topology. NUMANodes nil: the plugin sent no topology (or one with zero nodes, which the API
// cannot tell apart).
type PodResourcesDevices struct {
	Resource  string   `json:"resource"`
	IDs       []string `json:"ids"`
	NUMANodes []int64  `json:"numaNodes,omitempty"`
}

// PodResourcesPod is one pod of List, by name, with the devices of each container.
type PodResourcesPod struct {
	Namespace  string                  `json:"namespace"`
	Name       string                  `json:"name"`
	Containers []PodResourcesContainer `json:"containers"`
}

// PodResourcesContainer is one container of a PodResourcesPod.
type PodResourcesContainer struct {
	Name    string                `json:"name"`
	Devices []PodResourcesDevices `json:"devices,omitempty"`
}

// maxPodResourcesItems bounds what one dump may list, all counted together (pods, containers,
// device groups, IDs, NUMA nodes): MaxPodResourcesBytes already bounds it near a million
// short items, this keeps a consumer's loops over them small whatever the byte cap becomes.
const maxPodResourcesItems = 1 << 18

// ParsePodResources reads the dump: exactly one JSON document between PodResourcesHeader and
// PodResourcesEnd. It is strict: an unknown field, a second document, a device group without
// a resource or an ID, or an answer beside an error is refused. The header's version is the
// format's: the node reader and the client are one build (the debug pod runs the plugin's own
// image, of the plugin's version, unless --image says otherwise), so a field this parser does
// not know means a reader of another version, whose new field may change what the others mean
// (a device listed as allocatable that is not): refusing says so, where ignoring it could judge
// a pod from an answer misread. A change to the document is a new header version.
func ParsePodResources(text []byte) (*PodResources, error) {
	const what = "PodResources dump"
	var doc string
	err := eachDumpLine(what, text, MaxPodResourcesBytes, PodResourcesHeader, PodResourcesEnd, func(line string) error {
		if doc != "" {
			return fmt.Errorf("a second document")
		}
		doc = line
		return nil
	})
	if err != nil {
		return nil, err
	}
	if doc == "" {
		return nil, fmt.Errorf("%s: no document between its header and end", what)
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	var pr PodResources
	if err := dec.Decode(&pr); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the document", what)
	}
	if err := pr.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &pr, nil
}

// validate checks what the JSON decoder cannot: bounded counts, named resources and IDs, and an
// error never beside an answer (a half-read API must not look read).
func (pr *PodResources) validate() error {
	if pr.Error != "" && (len(pr.Allocatable) > 0 || len(pr.Pods) > 0) {
		return fmt.Errorf("an error (%q) beside an answer", clip(pr.Error))
	}
	items := 0
	devices := func(where string, groups []PodResourcesDevices) error {
		for _, g := range groups {
			items += 1 + len(g.IDs) + len(g.NUMANodes)
			if items > maxPodResourcesItems {
				return fmt.Errorf("over %d items", maxPodResourcesItems)
			}
			if g.Resource == "" {
				return fmt.Errorf("%s: a device group without a resource name", where)
			}
			if len(g.IDs) == 0 {
				return fmt.Errorf("%s: %s: a device group without a device ID", where, clip(g.Resource))
			}
			for _, id := range g.IDs {
				if id == "" {
					return fmt.Errorf("%s: %s: an empty device ID", where, clip(g.Resource))
				}
			}
		}
		return nil
	}
	if err := devices("allocatable", pr.Allocatable); err != nil {
		return err
	}
	for _, p := range pr.Pods {
		items += 1 + len(p.Containers)
		if p.Name == "" || p.Namespace == "" {
			return fmt.Errorf("a pod without a name or namespace (%q/%q)", clip(p.Namespace), clip(p.Name))
		}
		for _, c := range p.Containers {
			if c.Name == "" {
				return fmt.Errorf("pod %s/%s: a container without a name", clip(p.Namespace), clip(p.Name))
			}
			if err := devices("pod "+clip(p.Namespace)+"/"+clip(p.Name)+" container "+clip(c.Name), c.Devices); err != nil {
				return err
			}
		}
		if items > maxPodResourcesItems {
			return fmt.Errorf("over %d items", maxPodResourcesItems)
		}
	}
	return nil
}
