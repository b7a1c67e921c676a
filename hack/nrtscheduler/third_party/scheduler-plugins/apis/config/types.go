/*
Copyright 2020 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package config

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CoschedulingArgs defines the parameters for Coscheduling plugin.
type CoschedulingArgs struct {
	metav1.TypeMeta

	// PermitWaitingTimeSeconds is the waiting timeout in seconds.
	PermitWaitingTimeSeconds int64
	// PodGroupBackoffSeconds is the backoff time in seconds before a pod group can be scheduled again.
	PodGroupBackoffSeconds int64
	// PodGroupRejectPercentage is the percentage (0-100) of unassigned pods relative to
	// minMember below which PostFilter will not reject the PodGroup.
	// When the percentage of unassigned pods is at or below this value, PostFilter
	// optimistically allows remaining pods to retry scheduling instead of rejecting the group.
	// Default: 10 (10%). Set to 0 to always reject on any failure.
	// Set to 100 to never reject (disable PostFilter group rejection).
	PodGroupRejectPercentage int32
}

// ModeType is a "string" type.
type ModeType string

const (
	// Least is the string "Least".
	Least ModeType = "Least"
	// Most is the string "Most".
	Most ModeType = "Most"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeResourcesAllocatableArgs holds arguments used to configure NodeResourcesAllocatable plugin.
type NodeResourcesAllocatableArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Resources to be considered when scoring.
	// Allowed weights start from 1.
	// An example resource set might include "cpu" (millicores) and "memory" (bytes)
	// with weights of 1<<20 and 1 respectfully. That would mean 1 MiB has equivalent
	// weight as 1 millicore.
	Resources []schedconfig.ResourceSpec `json:"resources,omitempty"`

	// Whether to prioritize nodes with least or most allocatable resources.
	Mode ModeType `json:"mode,omitempty"`
}

// MetricProviderType is a "string" type.
type MetricProviderType string

const (
	KubernetesMetricsServer MetricProviderType = "KubernetesMetricsServer"
	Prometheus              MetricProviderType = "Prometheus"
	SignalFx                MetricProviderType = "SignalFx"
)

// Denote the spec of the metric provider
type MetricProviderSpec struct {
	// Types of the metric provider
	Type MetricProviderType
	// The address of the metric provider
	Address string
	// The authentication token of the metric provider
	Token string
	// Whether to enable the InsureSkipVerify options for https requests on Metric Providers.
	InsecureSkipVerify bool
}

// TrimaranSpec holds common parameters for trimaran plugins
type TrimaranSpec struct {
	// Metric Provider to use when using load watcher as a library
	MetricProvider MetricProviderSpec
	// Address of load watcher service
	WatcherAddress string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TargetLoadPackingArgs holds arguments used to configure TargetLoadPacking plugin.
type TargetLoadPackingArgs struct {
	metav1.TypeMeta

	// Common parameters for trimaran plugins
	TrimaranSpec
	// Default requests to use for best effort QoS
	DefaultRequests v1.ResourceList
	// Default requests multiplier for busrtable QoS
	DefaultRequestsMultiplier string
	// Node target CPU Utilization for bin packing
	TargetUtilization int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LoadVariationRiskBalancingArgs holds arguments used to configure LoadVariationRiskBalancing plugin.
type LoadVariationRiskBalancingArgs struct {
	metav1.TypeMeta

	// Common parameters for trimaran plugins
	TrimaranSpec
	// Multiplier of standard deviation in risk value
	SafeVarianceMargin float64
	// Root power of standard deviation in risk value
	SafeVarianceSensitivity float64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LowRiskOverCommitmentArgs holds arguments used to configure LowRiskOverCommitment plugin.
type LowRiskOverCommitmentArgs struct {
	metav1.TypeMeta

	// Common parameters for trimaran plugins
	TrimaranSpec
	// The number of windows over which usage data metrics are smoothed
	SmoothingWindowSize int64
	// Resources fractional weight of risk due to limits specification [0,1]
	RiskLimitWeights map[v1.ResourceName]float64
}

// ScoringStrategyType is a "string" type.
type ScoringStrategyType string

const (
	// MostAllocated strategy favors node with the least amount of available resource
	MostAllocated ScoringStrategyType = "MostAllocated"
	// BalancedAllocation strategy favors nodes with balanced resource usage rate
	BalancedAllocation ScoringStrategyType = "BalancedAllocation"
	// LeastAllocated strategy favors node with the most amount of available resource
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// LeastNUMANodes strategy favors nodes which requires least amount of NUMA nodes to satisfy resource requests for given pod
	LeastNUMANodes ScoringStrategyType = "LeastNUMANodes"
)

// ScoringStrategy define ScoringStrategyType for node resource topology plugin
type ScoringStrategy struct {
	// Type selects which strategy to run.
	Type ScoringStrategyType

	// Resources a list of pairs <resource, weight> to be considered while scoring
	// allowed weights start from 1.
	Resources []schedconfig.ResourceSpec
}

// ForeignPodsDetectMode is a "string" type.
type ForeignPodsDetectMode string

const (
	ForeignPodsDetectNone                   ForeignPodsDetectMode = "None"
	ForeignPodsDetectAll                    ForeignPodsDetectMode = "All"
	ForeignPodsDetectOnlyExclusiveResources ForeignPodsDetectMode = "OnlyExclusiveResources"
)

// CacheResyncMethod is a "string" type.
type CacheResyncMethod string

const (
	CacheResyncAutodetect             CacheResyncMethod = "Autodetect"
	CacheResyncAll                    CacheResyncMethod = "All"
	CacheResyncOnlyExclusiveResources CacheResyncMethod = "OnlyExclusiveResources"
)

// CacheInformerMode is a "string" type
type CacheInformerMode string

const (
	CacheInformerShared    CacheInformerMode = "Shared"
	CacheInformerDedicated CacheInformerMode = "Dedicated"
)

// CacheResyncScope is a "string" type
type CacheResyncScope string

const (
	CacheResyncScopeAll           CacheResyncScope = "All"
	CacheResyncScopeOnlyResources CacheResyncScope = "OnlyResources"
)

// PreemptionMode is a "string" type
type PreemptionMode string

const (
	// PreemptionDisabled when set, the plugin will continue running the post-Filter phase without
	// post-eviction simulation of the victim pods, preserving the old behavior of default preemption
	// with the plugin, including keeping same memory footprint.
	PreemptionDisabled PreemptionMode = "Disabled"
	// PreemptionEnabled when set, the plugin will act upon preemption requests from the scheduler,
	// depending on the cache implementation. If no preemption request is received, the plugin will continue
	// to collect and store the least needed data in order to satisfy the preemption request when it is received.
	PreemptionEnabled PreemptionMode = "Enabled"
)

// NodeResourceTopologyCache define configuration details for the NodeResourceTopology cache.
type NodeResourceTopologyCache struct {
	// ForeignPodsDetect sets how foreign pods should be handled.
	// Foreign pods are pods detected running on nodes managed by a NodeResourceTopologyMatch-enabled
	// scheduler, but not scheduled by this scheduler instance, likely because this is running as
	// secondary scheduler. To make sure the cache is consistent, foreign pods need to be handled.
	// Has no effect if caching is disabled (CacheResyncPeriod is zero) or
	// if DiscardReservedNodes is enabled. If unspecified, default is "All".
	ForeignPodsDetect *ForeignPodsDetectMode
	// ResyncMethod sets how the resync behaves to compute the expected node state.
	// "All" consider all pods to compute the node state. "OnlyExclusiveResources" consider
	// only pods regardless of their QoS which have exclusive resources assigned to their
	// containers (CPUs, devices...).
	// Has no effect if caching is disabled (CacheResyncPeriod is zero) or if DiscardReservedNodes
	// is enabled. "Autodetect" is the default, reads hint from NRT objects. Fallback is "All".
	ResyncMethod *CacheResyncMethod
	// InformerMode controls the channel the cache uses to get updates about pods.
	// "Shared" uses the default settings; "Dedicated" creates a specific subscription which is
	// guaranteed to best suit the cache needs, at cost of one extra connection.
	// If unspecified, default is "Dedicated"
	InformerMode *CacheInformerMode
	// ResyncScope controls which changes the resync logic monitors to trigger an update.
	// "All" consider both Attributes (metadata, node config details) and per-NUMA resources,
	// while "OnlyResources" consider only per-NUMA resource values. The default is
	// "All" to make the code react to node config changes avoiding reboots.
	// Use "OnlyResources" to restore the previous behavior.
	ResyncScope *CacheResyncScope
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeResourceTopologyMatchArgs holds arguments used to configure the NodeResourceTopologyMatch plugin
type NodeResourceTopologyMatchArgs struct {
	metav1.TypeMeta

	// ScoringStrategy a scoring model that determine how the plugin will score the nodes.
	ScoringStrategy ScoringStrategy
	// If > 0, enables the caching facilities of the reserve plugin - which must be enabled
	CacheResyncPeriodSeconds int64
	// if set to true, exclude node from scheduling if there are any reserved pods for given node
	// this option takes precedence over CacheResyncPeriodSeconds
	// if DiscardReservedNodes is enabled, CacheResyncPeriodSeconds option is noop
	DiscardReservedNodes bool
	// Cache enables to fine tune the caching behavior
	Cache *NodeResourceTopologyCache
	// PreemptionMode controls the preemption mode of the plugin. Must be explicitly set to
	// "Enabled" to opt in. Defaults to "Disabled".
	PreemptionMode *PreemptionMode
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PreemptionTolerationArgs reuses DefaultPluginArgs.
type PreemptionTolerationArgs schedconfig.DefaultPreemptionArgs

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

type TopologicalSortArgs struct {
	metav1.TypeMeta

	// Namespaces to be considered by TopologySort plugin
	Namespaces []string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

type NetworkOverheadArgs struct {
	metav1.TypeMeta

	// Namespaces to be considered by NetworkMinCost plugin
	Namespaces []string

	// Preferred weights (Default: UserDefined)
	WeightsName string

	// The NetworkTopology CRD name
	NetworkTopologyName string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

type SySchedArgs struct {
	metav1.TypeMeta

	// CR namespace of the default profile for all system calls
	DefaultProfileNamespace string

	// CR name of the default profile for all system calls
	DefaultProfileName string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PeaksArgs holds arguments used to configure the Peaks plugin
type PeaksArgs struct {
	metav1.TypeMeta

	// Address of load watcher service
	WatcherAddress string
	NodePowerModel map[string]PowerModel // Node power model where key is node name and value is power model
}

type PowerModel struct {
	K0 float64 `json:"k0"`
	K1 float64 `json:"k1"`
	K2 float64 `json:"k2"`
	// Power = K0 + K1 * e ^(K2 * x) : where x is utilisation
	// Idle power of node will be K0 + K1
}

// MetadataSourceType defines where to look for metadata
type MetadataSourceType string

const (
	// MetadataSourceLabel indicates metadata should be read from node labels
	MetadataSourceLabel MetadataSourceType = "Label"
	// MetadataSourceAnnotation indicates metadata should be read from node annotations
	MetadataSourceAnnotation MetadataSourceType = "Annotation"
)

// MetadataValueType defines the type of metadata value
type MetadataValueType string

const (
	// MetadataTypeNumber indicates the metadata value is a numeric value
	MetadataTypeNumber MetadataValueType = "Number"
	// MetadataTypeTimestamp indicates the metadata value is a timestamp
	MetadataTypeTimestamp MetadataValueType = "Timestamp"
)

// MetadataScoringStrategy defines how to score nodes based on metadata values
type MetadataScoringStrategy string

const (
	// ScoringStrategyHighest favors nodes with highest numeric values
	ScoringStrategyHighest MetadataScoringStrategy = "Highest"
	// ScoringStrategyLowest favors nodes with lowest numeric values
	ScoringStrategyLowest MetadataScoringStrategy = "Lowest"
	// ScoringStrategyNewest favors nodes with newest (most recent) timestamps
	ScoringStrategyNewest MetadataScoringStrategy = "Newest"
	// ScoringStrategyOldest favors nodes with oldest timestamps
	ScoringStrategyOldest MetadataScoringStrategy = "Oldest"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeMetadataArgs holds arguments used to configure the NodeMetadata plugin.
type NodeMetadataArgs struct {
	metav1.TypeMeta

	// MetadataKey is the name of the label or annotation to use for scoring
	MetadataKey string `json:"metadataKey"`

	// MetadataSource indicates whether to read from labels or annotations
	// Valid values: "Label", "Annotation"
	MetadataSource MetadataSourceType `json:"metadataSource"`

	// MetadataType indicates the type of value in the metadata
	// Valid values: "Number", "Timestamp"
	MetadataType MetadataValueType `json:"metadataType"`

	// ScoringStrategy defines how nodes should be scored
	// For Number type: "Highest" or "Lowest"
	// For Timestamp type: "Newest" or "Oldest"
	ScoringStrategy MetadataScoringStrategy `json:"scoringStrategy"`

	// TimestampFormat is the Go time format string for parsing timestamps
	// Only used when MetadataType is "Timestamp"
	// Default: time.RFC3339 ("2006-01-02T15:04:05Z07:00")
	// Examples:
	//   - RFC3339: "2006-01-02T15:04:05Z07:00"
	//   - Unix timestamp: Use MetadataType "Number" instead
	//   - Custom: "2006-01-02 15:04:05"
	TimestampFormat string `json:"timestampFormat,omitempty"`
}
