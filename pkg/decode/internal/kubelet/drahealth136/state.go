// Package state mirrors the dra_health_state types of pkg/kubelet/cm/dra/state in kubelet 1.36+ (adds Message).
// The file is plain json.Marshal(DevicesHealthMap), without a checksum.
package state

import "time"

// DevicesHealthMap is driver name -> health of its devices.
type DevicesHealthMap map[string]DriverHealthState

// DriverHealthState is the health of one driver's devices.
type DriverHealthState struct {
	// Devices maps "<pool>/<device>" to its health.
	Devices map[string]DeviceHealth
}

// DeviceHealthStatus is "Healthy", "Unhealthy" or "Unknown".
type DeviceHealthStatus string

// DeviceHealth is one device's last reported health.
type DeviceHealth struct {
	PoolName    string
	DeviceName  string
	Health      DeviceHealthStatus
	LastUpdated time.Time
	// HealthCheckTimeout is the plugin's timeout; 0 means the kubelet default (30s).
	HealthCheckTimeout time.Duration
	// Message details the status (optional).
	Message string
}
