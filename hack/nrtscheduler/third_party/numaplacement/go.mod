module github.com/k8stopologyawareschedwg/numaplacement

go 1.21

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/google/go-cmp v0.7.0
)
