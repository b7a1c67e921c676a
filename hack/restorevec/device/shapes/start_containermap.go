// 1.33-1.34: Start also takes the initial containers and those holding all their devices.
package main

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
)

func start[L any](m *devicemanager.ManagerImpl, _ L) error {
	return m.Start(activePods, ready{}, containermap.NewContainerMap(), sets.New[string]())
}

func stop[L any](m *devicemanager.ManagerImpl, _ L) { _ = m.Stop() }
