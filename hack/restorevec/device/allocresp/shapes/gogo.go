package main

import pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

// unmarshal is 1.17-1.33's restore: the gogo-generated method (allocResp.Unmarshal).
func unmarshal(b []byte) error {
	return (&pluginapi.ContainerAllocateResponse{}).Unmarshal(b)
}
