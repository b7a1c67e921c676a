package decode

import (
	"encoding/json"
	"time"

	health134 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drahealth134"
	health135 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drahealth135"
	health136 "github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode/internal/kubelet/drahealth136"
)

// dra_health_state (docs/checkpoint-formats.md part B §3): plain json.Marshal of the DRA
// manager's device health map, 1.34+, with no checksum. The kubelet only logs a file it cannot
// decode and starts with an empty cache, so the verdicts are valid or unreadable. It does not go
// through the format table (which is built around checksums): a handler judges it.

// DRAHealthState is dra_health_state: the last reported health of each DRA device.
type DRAHealthState struct {
	// Drivers is driver name -> "<pool>/<device>" -> health.
	Drivers map[string]map[string]DRADeviceHealth `json:"drivers"`
}

// DRADeviceHealth is one device's last reported health.
type DRADeviceHealth struct {
	PoolName   string `json:"poolName"`
	DeviceName string `json:"deviceName"`
	// Health is "Healthy", "Unhealthy" or "Unknown".
	Health      string    `json:"health"`
	LastUpdated time.Time `json:"lastUpdated"`
	// HealthCheckTimeout is the plugin's timeout in nanoseconds (1.35+; 0 is the 30s default;
	// nil when the reader's layout has no such field).
	HealthCheckTimeout *time.Duration `json:"healthCheckTimeout,omitempty"`
	// Message details the status (1.36+; nil when the reader's layout has no such field).
	Message *string `json:"message,omitempty"`
}

const (
	healthFormat = "dra-health-v1"
	// healthHome judges the file when no kubelet is given: the newest release writing it.
	healthHome = "v1.37.1"
	healthNote = "dra_health_state carries no checksum: only its JSON is checked"
)

// healthReaders is the DevicesHealthMap each release decodes into.
var healthReaders = []struct {
	versions versionRange
	layout   *layout
}{
	{versionRange{"1.34.0", "1.35.0"}, &layout{
		New: func() any { return &health134.DevicesHealthMap{} },
		Model: func(v, _ any) any {
			out := &DRAHealthState{Drivers: map[string]map[string]DRADeviceHealth{}}
			for driver, d := range *v.(*health134.DevicesHealthMap) {
				devices := make(map[string]DRADeviceHealth, len(d.Devices))
				for key, h := range d.Devices {
					devices[key] = DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health), LastUpdated: h.LastUpdated}
				}
				out.Drivers[driver] = devices
			}
			return out
		},
	}},
	{versionRange{"1.35.0", "1.36.0"}, &layout{
		New: func() any { return &health135.DevicesHealthMap{} },
		Model: func(v, _ any) any {
			out := &DRAHealthState{Drivers: map[string]map[string]DRADeviceHealth{}}
			for driver, d := range *v.(*health135.DevicesHealthMap) {
				devices := make(map[string]DRADeviceHealth, len(d.Devices))
				for key, h := range d.Devices {
					timeout := h.HealthCheckTimeout
					devices[key] = DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health),
						LastUpdated: h.LastUpdated, HealthCheckTimeout: &timeout}
				}
				out.Drivers[driver] = devices
			}
			return out
		},
	}},
	{versionRange{Since: "1.36.0"}, &layout{
		New: func() any { return &health136.DevicesHealthMap{} },
		Model: func(v, _ any) any {
			out := &DRAHealthState{Drivers: map[string]map[string]DRADeviceHealth{}}
			for driver, d := range *v.(*health136.DevicesHealthMap) {
				devices := make(map[string]DRADeviceHealth, len(d.Devices))
				for key, h := range d.Devices {
					timeout, msg := h.HealthCheckTimeout, h.Message
					devices[key] = DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health),
						LastUpdated: h.LastUpdated, HealthCheckTimeout: &timeout, Message: &msg}
				}
				out.Drivers[driver] = devices
			}
			return out
		},
	}},
}

func init() { handlers[KindDRAHealth] = decodeHealth }

// decodeHealth replays newHealthInfoCache's loadFromCheckpoint: json.Unmarshal into an empty
// DevicesHealthMap, nothing else.
func decodeHealth(rep *Report, raw []byte, opts Options) *Report {
	reader := opts.Kubelet
	if reader == nil {
		home := MustParseKubelet(healthHome)
		reader = &home
	}
	rep.Format, rep.Reader = healthFormat, reader.String()
	rep.Notes = append(rep.Notes, healthNote)
	var l *layout
	for _, r := range healthReaders {
		if r.versions.contains(reader.Version) {
			l = r.layout
		}
	}
	if l == nil {
		rep.Verdict, rep.Error = NotRead, notReadError
		return rep
	}
	v := l.New()
	if err := json.Unmarshal(raw, v); err != nil {
		rep.Verdict, rep.Error, rep.Cause = Unreadable, err.Error(), err.Error()
		rep.Notes = append(rep.Notes, "the kubelet logs \"Failed to load health checkpoint, proceeding with empty cache\" and keeps running")
		return rep
	}
	rep.Verdict, rep.Decoded = Valid, l.Model(v, nil)
	return rep
}
