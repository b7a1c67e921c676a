package nodestate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// PublishedWant is what a node publishes of itself: its checkpoint files and the sections admit
// reads beside them (the machine, the devices' NUMA nodes, the kubelet's PodResources).
func PublishedWant() nodelocal.Want {
	return nodelocal.Want{Files: decode.Paths(), Sysfs: true, PCI: true, NVIDIA: true, PodResources: true}
}

// ReadPublished reads, on the node this process runs on (as CheckNode reads it), the state it
// publishes as node: the checkpoint files, the kubelet's config file and version, and the
// sysfs, PCI, NVIDIA and PodResources sections. A version or config that cannot be read is a
// warning in the state (a consumer then says why it cannot replay); an error is for a kubelet
// root dir that cannot be read at all.
func ReadPublished(ctx context.Context, node string, lc LocalConfig) (*PublishedState, error) {
	snap, err := nodelocal.ReadContext(ctx, lc.Paths, PublishedWant())
	if err != nil {
		return nil, err
	}
	s := &PublishedState{Format: PublishedFormat, Node: node, ReadAt: time.Now().UTC(), KubeletRootDir: lc.RootDir,
		Files: snap.Files, Missing: snap.Missing, Oversized: snap.Oversized, TempFiles: snap.TempFiles,
		Sections: snap.Dumps, Warnings: snap.Warnings}
	if s.KubeletRootDir == "" {
		s.KubeletRootDir = decode.DefaultRootDir
	}
	version, from, err := lc.kubeletVersion()
	if err != nil {
		s.Warnings = append(s.Warnings, fmt.Sprintf("kubelet version: %v", err))
	}
	s.KubeletVersion, s.KubeletVersionFrom = version, from
	configFile := lc.KubeletConfigFile
	if configFile == "" {
		configFile = filepath.Join(lc.RootDir, KubeletConfigFile)
	}
	if raw, err := local.ReadFile(configFile, local.DefaultLimits); err != nil {
		s.Warnings = append(s.Warnings, fmt.Sprintf("kubelet config %s: %v", configFile, err))
	} else {
		s.KubeletConfig, s.KubeletConfigFrom = raw, configFile
	}
	// Sorted: the fingerprint is of the content, not of the order a directory listed it in.
	slices.Sort(s.Missing)
	slices.Sort(s.Oversized)
	slices.Sort(s.TempFiles)
	return s, nil
}

// PublishedWatchPaths are what a publisher watches for changes, relative to the kubelet root
// dir: the dirs of the checkpoint files (the kubelet replaces them by rename, so the file's own
// watch would die with it) and the device plugins' dir (a plugin registering or leaving).
func PublishedWatchPaths() []string {
	dirs := []string{"."}
	for _, p := range decode.Paths() {
		if d := filepath.Dir(filepath.FromSlash(p)); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if !slices.Contains(dirs, "device-plugins") {
		dirs = append(dirs, "device-plugins")
	}
	return dirs
}
