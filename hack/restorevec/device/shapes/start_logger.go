// 1.35+: Start and Stop take the logger first.
package main

import (
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
)

func start(m *devicemanager.ManagerImpl, logger logr.Logger) error {
	return m.Start(logger, activePods, ready{}, containermap.NewContainerMap(), sets.New[string]())
}

func stop(m *devicemanager.ManagerImpl, logger logr.Logger) { _ = m.Stop(logger) }
