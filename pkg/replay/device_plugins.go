package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Bounds of a devices file: the hints walk every NUMA mask for every device (2^nodes x
// devices), so a hostile file must not be able to ask for more than a large node has.
const (
	MaxDevicesFileBytes   = 4 << 20
	MaxDeviceResources    = 256
	MaxDevicesPerResource = 1024
	maxDeviceIDBytes      = 1024
)

// ParseDevicePlugins reads a devices file: per resource, the devices its plugin advertises, each
// the device plugin API's Device message as JSON:
//
//	{"resources": {"example.com/gpu": [{"ID": "gpu-0", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}}]}}
//
// A device without topology has no NUMA affinity; a health other than "Healthy" is unhealthy.
func ParseDevicePlugins(b []byte) (map[string][]Device, error) {
	if len(b) > MaxDevicesFileBytes {
		return nil, fmt.Errorf("devices file of %d bytes: at most %d", len(b), MaxDevicesFileBytes)
	}
	var f struct {
		Resources map[string][]Device `json:"resources"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("devices file: %w", err)
	}
	if f.Resources == nil {
		return nil, fmt.Errorf(`devices file: no "resources" object`)
	}
	if len(f.Resources) > MaxDeviceResources {
		return nil, fmt.Errorf("devices file: %d resources, at most %d", len(f.Resources), MaxDeviceResources)
	}
	for resource, devices := range f.Resources {
		if resource == "" {
			return nil, fmt.Errorf("devices file: a resource without a name")
		}
		if len(devices) > MaxDevicesPerResource {
			return nil, fmt.Errorf("devices file: %s has %d devices, at most %d", resource, len(devices), MaxDevicesPerResource)
		}
		seen := map[string]bool{}
		for i, d := range devices {
			switch {
			case d.ID == "" || len(d.ID) > maxDeviceIDBytes:
				return nil, fmt.Errorf("devices file: %s device %d: an ID of 1 to %d bytes is needed", resource, i, maxDeviceIDBytes)
			case seen[d.ID]:
				return nil, fmt.Errorf("devices file: %s lists device %q twice", resource, d.ID)
			case d.Topology != nil && len(d.Topology.Nodes) > 64:
				return nil, fmt.Errorf("devices file: %s device %q names %d NUMA nodes, at most 64", resource, d.ID, len(d.Topology.Nodes))
			}
			seen[d.ID] = true
		}
	}
	return f.Resources, nil
}
