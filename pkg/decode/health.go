package decode

import (
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

// The reader's own layout decodes the file (1.35 added HealthCheckTimeout, 1.36 Message); the
// model says nil for a field that layout lacks.
var (
	health134Layout = healthLayout[health134.DevicesHealthMap](func(d health134.DriverHealthState) map[string]health134.DeviceHealth { return d.Devices },
		func(h health134.DeviceHealth) DRADeviceHealth {
			return DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health), LastUpdated: h.LastUpdated}
		})
	health135Layout = healthLayout[health135.DevicesHealthMap](func(d health135.DriverHealthState) map[string]health135.DeviceHealth { return d.Devices },
		func(h health135.DeviceHealth) DRADeviceHealth {
			return DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health), LastUpdated: h.LastUpdated,
				HealthCheckTimeout: &h.HealthCheckTimeout}
		})
	health136Layout = healthLayout[health136.DevicesHealthMap](func(d health136.DriverHealthState) map[string]health136.DeviceHealth { return d.Devices },
		func(h health136.DeviceHealth) DRADeviceHealth {
			return DRADeviceHealth{PoolName: h.PoolName, DeviceName: h.DeviceName, Health: string(h.Health), LastUpdated: h.LastUpdated,
				HealthCheckTimeout: &h.HealthCheckTimeout, Message: &h.Message}
		})
)

// healthLayout is the DevicesHealthMap (driver -> its devices' health) of one release: every
// release decodes the file into an empty map and does nothing else.
func healthLayout[M ~map[string]D, D, H any](devices func(D) map[string]H, device func(H) DRADeviceHealth) *layout {
	return layoutOf(layoutSpec[M, noData]{
		New: func() *M { return new(M) },
		Model: func(m *M, _ *noData) any {
			out := &DRAHealthState{Drivers: map[string]map[string]DRADeviceHealth{}}
			for name, d := range *m {
				devs := devices(d)
				converted := make(map[string]DRADeviceHealth, len(devs))
				for key, h := range devs {
					converted[key] = device(h)
				}
				out.Drivers[name] = converted
			}
			return out
		},
	})
}
