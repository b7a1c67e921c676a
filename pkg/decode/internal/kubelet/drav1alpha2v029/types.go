// Package v1alpha2 mirrors the one type of k8s.io/api/resource/v1alpha2 (v0.28/v0.29) that
// kubelet 1.28-1.29 store in dra_manager_state; the package name is part of the hashed text.
package v1alpha2

// ResourceHandle is an opaque per-driver allocation handle.
type ResourceHandle struct {
	DriverName string `json:"driverName,omitempty"`
	Data       string `json:"data,omitempty"`
}
