package replay

import (
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

func TestParseDevicePlugins(t *testing.T) {
	good := `{"resources": {"example.com/gpu": [{"ID": "gpu-0", "health": "Healthy", "topology": {"nodes": [{"ID": 0}]}},
		{"ID": "gpu-x", "health": "Unhealthy"}]}}`
	p, err := ParseDevicePlugins([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	devs := p["example.com/gpu"]
	if len(devs) != 2 || !devs[0].hasTopology() || devs[1].hasTopology() || devs[1].Health == DeviceHealthy {
		t.Fatalf("parsed %+v", devs)
	}
	for name, bad := range map[string]string{
		"no resources":  `{}`,
		"unknown field": `{"resources": {"r": [{"ID": "a", "healthy": true}]}}`,
		"empty ID":      `{"resources": {"r": [{"ID": ""}]}}`,
		"duplicate":     `{"resources": {"r": [{"ID": "a"}, {"ID": "a"}]}}`,
		"no name":       `{"resources": {"": [{"ID": "a"}]}}`,
		"too many":      `{"resources": {"r": [` + strings.Repeat(`{"ID": "a"},`, MaxDevicesPerResource) + `{"ID": "b"}]}}`,
		"too large":     strings.Repeat(" ", MaxDevicesFileBytes+1),
	} {
		if _, err := ParseDevicePlugins([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParseDevicePlugins: a hostile devices file is refused or bounded, never a panic, and what
// it accepts starts a device manager that answers hints within the bounds.
func FuzzParseDevicePlugins(f *testing.F) {
	f.Add([]byte(`{"resources": {"example.com/gpu": [{"ID": "gpu-0", "health": "Healthy", "topology": {"nodes": [{"ID": 0}, {"ID": 63}, {"ID": -1}]}}]}}`))
	f.Add([]byte(`{"resources": {"r": [{"ID": "a", "topology": {"nodes": []}}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseDevicePlugins(b)
		if err != nil {
			return
		}
		if len(p) > MaxDeviceResources {
			t.Fatalf("%d resources accepted", len(p))
		}
		rules, _ := rulesFor(decode.Release("1.37"))
		m := &DeviceManager{release: rules, numaNodes: []int{0, 1}, affinity: &TopologyManager{scope: newNoneScope()},
			active: func() map[string]map[string]bool { return nil }}
		m.reset()
		m.start(&DeviceInput{Plugins: p})
		for r, devs := range p {
			if len(devs) > MaxDevicesPerResource {
				t.Fatalf("%s: %d devices accepted", r, len(devs))
			}
			m.generateDeviceTopologyHints(r, m.availableDevices(r), nil, 1)
		}
	})
}
