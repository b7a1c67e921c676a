// 1.18 keeps the runtime's container map in the CPU manager; 1.19 moved it to pkg/kubelet/cm.
package main

import "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/containermap"

var newContainerMap = containermap.NewContainerMap
