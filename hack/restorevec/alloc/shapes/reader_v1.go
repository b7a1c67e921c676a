package main

// The V1-only restore (1.33-1.37: pkg/kubelet/allocation/state without checkpoint_v2.go): the
// allocation manager's NewStateCheckpoint, then the entries it holds. This release writes no
// cases here (its V1 files are the shared vectors').

import (
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/allocation/state"
)

func writeCases(string) ([]written, error) { return nil, nil }

func restore(dir, name string) (any, error) {
	s, err := state.NewStateCheckpoint(klog.Background(), dir, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"entries": s.GetPodResourceInfoMap()}, nil
}
