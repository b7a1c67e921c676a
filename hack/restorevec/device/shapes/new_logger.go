// 1.37+: NewManagerImpl takes the logger first.
package main

import (
	"github.com/go-logr/logr"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
)

func newManager(logger logr.Logger) (*devicemanager.ManagerImpl, error) {
	return devicemanager.NewManagerImpl(logger, nil, nil)
}
