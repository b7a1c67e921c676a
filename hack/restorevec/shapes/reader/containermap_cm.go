// The runtime's container map, in pkg/kubelet/cm from 1.19 on.
package main

import "k8s.io/kubernetes/pkg/kubelet/cm/containermap"

var newContainerMap = containermap.NewContainerMap
