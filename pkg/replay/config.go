package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// KubeletConfig is the subset of KubeletConfiguration (kubelet.config.k8s.io/v1beta1) that the
// CPU and memory managers depend on. Field names and JSON keys are v1beta1's, so a real
// config.yaml, a configz answer or a vector's `kubelet` section decode into it. A typed subset
// rather than k8s.io/kubelet's type: that module drags in component-base for fields the start
// checks never read.
type KubeletConfig struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`

	CPUManagerPolicy        string            `json:"cpuManagerPolicy,omitempty"`
	CPUManagerPolicyOptions map[string]string `json:"cpuManagerPolicyOptions,omitempty"`
	ReservedSystemCPUs      string            `json:"reservedSystemCPUs,omitempty"`
	KubeReserved            ResourceMap       `json:"kubeReserved,omitempty"`
	SystemReserved          ResourceMap       `json:"systemReserved,omitempty"`
	// EvictionHard nil means "not set" (the kubelet defaults memory.available to 100Mi); an
	// empty map means no hard eviction threshold at all.
	EvictionHard          *map[string]string  `json:"evictionHard,omitempty"`
	MemoryManagerPolicy   string              `json:"memoryManagerPolicy,omitempty"`
	ReservedMemory        []MemoryReservation `json:"reservedMemory,omitempty"`
	TopologyManagerPolicy string              `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope  string              `json:"topologyManagerScope,omitempty"`
	// TopologyManagerPolicyOptions are prefer-closest-numa-nodes and max-allowable-numa-nodes.
	TopologyManagerPolicyOptions map[string]string `json:"topologyManagerPolicyOptions,omitempty"`
	FeatureGates                 map[string]bool   `json:"featureGates,omitempty"`
}

// MemoryReservation is one NUMA node's entry of reservedMemory.
type MemoryReservation struct {
	NumaNode int32                        `json:"numaNode"`
	Limits   map[string]resource.Quantity `json:"limits"`
}

// ResourceMap is a resource name -> quantity string map (kubeReserved, systemReserved). YAML
// writes `cpu: 1` as a number; it is kept as the text the kubelet would parse.
type ResourceMap map[string]string

// UnmarshalJSON accepts strings and numbers.
func (m *ResourceMap) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := ResourceMap{}
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var n json.Number
			if nerr := json.Unmarshal(v, &n); nerr != nil {
				return fmt.Errorf("%s: want a quantity, got %s", k, v)
			}
			s = n.String()
		}
		out[k] = s
	}
	*m = out
	return nil
}

// DeepCopy is a copy of c that shares no map, slice or quantity with it: doctor changes copies
// of the user's config to try its fixes.
func (c *KubeletConfig) DeepCopy() *KubeletConfig {
	out := *c
	out.CPUManagerPolicyOptions = maps.Clone(c.CPUManagerPolicyOptions)
	out.KubeReserved = maps.Clone(c.KubeReserved)
	out.SystemReserved = maps.Clone(c.SystemReserved)
	if c.EvictionHard != nil {
		evictionHard := maps.Clone(*c.EvictionHard)
		out.EvictionHard = &evictionHard
	}
	if c.ReservedMemory != nil {
		out.ReservedMemory = make([]MemoryReservation, len(c.ReservedMemory))
		for i, r := range c.ReservedMemory {
			out.ReservedMemory[i] = MemoryReservation{NumaNode: r.NumaNode}
			if r.Limits != nil {
				out.ReservedMemory[i].Limits = make(map[string]resource.Quantity, len(r.Limits))
				for name, q := range r.Limits {
					out.ReservedMemory[i].Limits[name] = q.DeepCopy()
				}
			}
		}
	}
	out.TopologyManagerPolicyOptions = maps.Clone(c.TopologyManagerPolicyOptions)
	out.FeatureGates = maps.Clone(c.FeatureGates)
	return &out
}

// The v1beta1 defaults of the fields above.
const (
	defaultCPUManagerPolicy      = "none"
	defaultMemoryManagerPolicy   = "None"
	defaultTopologyManagerPolicy = "none"
	defaultTopologyManagerScope  = "container"
)

// defaultEvictionHard is v1beta1's DefaultEvictionHard; only memory.available matters here.
var defaultEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "10%",
	"nodefs.inodesFree": "5%",
	"imagefs.available": "15%",
}

// ParseKubeletConfig reads a KubeletConfiguration in YAML or JSON, or configz's answer
// ({"kubeletconfig": {...}}).
func ParseKubeletConfig(b []byte) (*KubeletConfig, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	// The config wrapped as {"kubeletconfig": {...}} is read inside. YAMLToJSON writes keys
	// unescaped, so a document without that text has no such key: the probe, a second full
	// decode, runs only when it may find one.
	if bytes.Contains(j, []byte(`"kubeletconfig"`)) || len(j) == 0 || j[0] != '{' {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(j, &probe); err != nil {
			return nil, fmt.Errorf("kubelet config: not an object: %w", err)
		}
		if inner, ok := probe["kubeletconfig"]; ok && len(probe) == 1 {
			j = inner
		}
	}
	var c KubeletConfig
	dec := json.NewDecoder(bytes.NewReader(j))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	if c.Kind != "" && c.Kind != "KubeletConfiguration" {
		return nil, fmt.Errorf("kubelet config: kind %q, want KubeletConfiguration", c.Kind)
	}
	if c.APIVersion != "" && !strings.HasPrefix(c.APIVersion, "kubelet.config.k8s.io/") {
		return nil, fmt.Errorf("kubelet config: apiVersion %q, want kubelet.config.k8s.io/v1beta1", c.APIVersion)
	}
	return &c, nil
}

// CPUPolicy, MemoryPolicy, TopologyPolicy, TopologyScope and EvictionHardOrDefault apply the
// v1beta1 defaults.
func (c *KubeletConfig) CPUPolicy() string {
	if c.CPUManagerPolicy == "" {
		return defaultCPUManagerPolicy
	}
	return c.CPUManagerPolicy
}

func (c *KubeletConfig) MemoryPolicy() string {
	if c.MemoryManagerPolicy == "" {
		return defaultMemoryManagerPolicy
	}
	return c.MemoryManagerPolicy
}

func (c *KubeletConfig) TopologyPolicy() string {
	if c.TopologyManagerPolicy == "" {
		return defaultTopologyManagerPolicy
	}
	return c.TopologyManagerPolicy
}

func (c *KubeletConfig) TopologyScope() string {
	if c.TopologyManagerScope == "" {
		return defaultTopologyManagerScope
	}
	return c.TopologyManagerScope
}

func (c *KubeletConfig) EvictionHardOrDefault() map[string]string {
	if c.EvictionHard == nil {
		return defaultEvictionHard
	}
	return *c.EvictionHard
}
