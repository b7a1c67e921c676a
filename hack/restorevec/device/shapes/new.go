// 1.17-1.35: NewManagerImpl takes no logger.
package main

import "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

func newManager[L any](L) (*devicemanager.ManagerImpl, error) {
	return devicemanager.NewManagerImpl(nil, nil)
}
