package decode

import (
	"strings"
	"testing"
	"time"
)

// healthKubeletView renders a DRAHealthState as the kubelet's DevicesHealthMap marshals.
func healthKubeletView(model any) any {
	m := model.(*DRAHealthState)
	out := map[string]any{}
	for driver, devices := range m.Drivers {
		devs := map[string]any{}
		for key, h := range devices {
			d := map[string]any{"PoolName": h.PoolName, "DeviceName": h.DeviceName, "Health": h.Health,
				"LastUpdated": h.LastUpdated.Format(time.RFC3339Nano)}
			if h.HealthCheckTimeout != nil {
				d["HealthCheckTimeout"] = int64(*h.HealthCheckTimeout)
			}
			if h.Message != nil {
				d["Message"] = *h.Message
			}
			devs[key] = d
		}
		out[driver] = map[string]any{"Devices": devs}
	}
	return out
}

func TestHealthEdgeCases(t *testing.T) {
	const dev = `{"gpu.example.com":{"Devices":{"p/g":{"PoolName":"p","DeviceName":"g","Health":"Healthy","LastUpdated":"2026-05-04T12:30:00Z"%s}}}}`
	cases := []struct {
		name, reader string
		raw          string
		verdict      Verdict
		err          string
	}{
		{"valid, default reader", "", `{}`, Valid, ""},
		{"not JSON", "", `{"gpu`, Unreadable, "unexpected end of JSON input"},
		{"zero-length", "v1.35.8", ``, Unreadable, "unexpected end of JSON input"},
		{"top level array", "", `[]`, Unreadable, "json: cannot unmarshal array into Go value of type state.DevicesHealthMap"},
		{"driver not an object", "v1.34.10", `{"gpu.example.com":5}`, Unreadable,
			"json: cannot unmarshal number into Go value of type state.DriverHealthState"},
		{"bad time", "v1.36.4", strings.Replace(dev, `2026-05-04T12:30:00Z`, `yesterday`, 1), Unreadable,
			`parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"timeout of the wrong type, 1.35 reads it", "v1.35.8", strings.Replace(dev, "%s", `,"HealthCheckTimeout":"30s"`, 1), Unreadable,
			"json: cannot unmarshal string into Go struct field DeviceHealth.Devices.HealthCheckTimeout of type time.Duration"},
		{"timeout of the wrong type, 1.34 ignores it", "v1.34.10", strings.Replace(dev, "%s", `,"HealthCheckTimeout":"30s"`, 1), Valid, ""},
		{"message of the wrong type, 1.35 ignores it", "v1.35.8", strings.Replace(dev, "%s", `,"Message":1`, 1), Valid, ""},
		{"message of the wrong type, 1.36 reads it", "v1.36.4", strings.Replace(dev, "%s", `,"Message":1`, 1), Unreadable,
			"json: cannot unmarshal number into Go struct field DeviceHealth.Devices.Message of type string"},
		{"not read before 1.34", "v1.33.13", `{}`, NotRead, notReadError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := judge(t, KindDRAHealth, []byte(strings.Replace(c.raw, "%s", "", 1)), c.reader)
			if rep.Verdict != c.verdict {
				t.Fatalf("verdict %s (%q), want %s", rep.Verdict, rep.Error, c.verdict)
			}
			if c.err != "" && rep.Error != c.err {
				t.Errorf("error\n got %q\nwant %q", rep.Error, c.err)
			}
			const healthNote = "dra_health_state carries no checksum: only its JSON is checked"
			if rep.Format != "dra-health-v1" || len(rep.Checksums) != 0 || len(rep.Notes) == 0 || rep.Notes[0] != healthNote {
				t.Errorf("format %q, checksums %v, notes %q: want dra-health-v1, none, the no-checksum note", rep.Format, rep.Checksums, rep.Notes)
			}
		})
	}
}

func TestHealthDecoded(t *testing.T) {
	raw := []byte(`{"gpu.example.com":{"Devices":{"node-1/gpu-1":{"PoolName":"node-1","DeviceName":"gpu-1","Health":"Unhealthy","LastUpdated":"2026-05-04T12:31:30Z","HealthCheckTimeout":45000000000,"Message":"ECC"}}},"idle.example.com":{"Devices":null}}`)
	rep := judge(t, KindDRAHealth, raw, "")
	m := rep.Decoded.DRAHealth
	h := m.Drivers["gpu.example.com"]["node-1/gpu-1"]
	if h.Health != "Unhealthy" || *h.HealthCheckTimeout != 45*time.Second || *h.Message != "ECC" || h.LastUpdated.Minute() != 31 {
		t.Errorf("decoded %+v", h)
	}
	if _, ok := m.Drivers["idle.example.com"]; !ok {
		t.Errorf("driver without devices lost: %+v", m.Drivers)
	}
	// 1.34's layout has neither field: the model says unknown, not zero.
	old := judge(t, KindDRAHealth, raw, "v1.34.10").Decoded.DRAHealth.Drivers["gpu.example.com"]["node-1/gpu-1"]
	if old.HealthCheckTimeout != nil || old.Message != nil {
		t.Errorf("1.34 decoded %+v", old)
	}
}

func FuzzDecodeHealth(f *testing.F) {
	fuzzKinds(f, []Kind{KindDRAHealth}, []string{"v1.33.13", "v1.34.10", "v1.35.8", "v1.36.4"})
}
