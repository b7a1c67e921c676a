// 1.17-1.21: Start(activePods, sourcesReady), Stop().
package main

import "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

func start[L any](m *devicemanager.ManagerImpl, _ L) error { return m.Start(activePods, ready{}) }

func stop[L any](m *devicemanager.ManagerImpl, _ L) { _ = m.Stop() }
