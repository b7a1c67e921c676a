// Package v1alpha2 mirrors the k8s.io/api/resource/v1alpha2 (v0.30) types kubelet 1.30 stores in
// dra_manager_state: ResourceHandle gained StructuredData, which is part of the hashed text even
// when nil. Field order, names and JSON tags are k8s.io/api v0.30's.
package v1alpha2

import "k8s.io/apimachinery/pkg/runtime"

// ResourceHandle is an opaque per-driver allocation handle.
type ResourceHandle struct {
	DriverName     string                    `json:"driverName,omitempty"`
	Data           string                    `json:"data,omitempty"`
	StructuredData *StructuredResourceHandle `json:"structuredData,omitempty"`
}

// StructuredResourceHandle is the in-tree allocation result of structured parameters.
type StructuredResourceHandle struct {
	VendorClassParameters runtime.RawExtension     `json:"vendorClassParameters,omitempty"`
	VendorClaimParameters runtime.RawExtension     `json:"vendorClaimParameters,omitempty"`
	NodeName              string                   `json:"nodeName,omitempty"`
	Results               []DriverAllocationResult `json:"results"`
}

// DriverAllocationResult is the vendor parameters and result of one request.
type DriverAllocationResult struct {
	VendorRequestParameters runtime.RawExtension `json:"vendorRequestParameters,omitempty"`
	AllocationResultModel   `json:",inline"`
}

// AllocationResultModel has one field per structured model.
type AllocationResultModel struct {
	NamedResources *NamedResourcesAllocationResult `json:"namedResources,omitempty"`
}

// NamedResourcesAllocationResult names the allocated instance.
type NamedResourcesAllocationResult struct {
	Name string `json:"name"`
}
