module github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/allocresp/v1.33.6

go 1.26.0

require k8s.io/kubelet v0.33.6

require (
	github.com/gogo/protobuf v1.3.2 // indirect
	golang.org/x/net v0.38.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20241209162323-e6fa225c2576 // indirect
	google.golang.org/grpc v1.68.1 // indirect
	google.golang.org/protobuf v1.36.5 // indirect
)
