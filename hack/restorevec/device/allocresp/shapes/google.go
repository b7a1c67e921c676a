package main

import (
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// unmarshal is 1.34+'s restore: google.golang.org/protobuf's proto.Unmarshal.
func unmarshal(b []byte) error {
	return proto.Unmarshal(b, &pluginapi.ContainerAllocateResponse{})
}
