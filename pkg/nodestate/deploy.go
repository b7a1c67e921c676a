package nodestate

import (
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/deploy"
)

// ManifestsConfig is what the cluster setup is made for: namespace, images, kubelet root dirs.
type ManifestsConfig = deploy.Config

// Manifests is the cluster setup: namespace and RBAC, admission policies and their parameters.
type Manifests = deploy.Manifests

// DebugPodHostDirs is every node dir beside the kubelet's a debug pod may mount, whatever a
// read asks for.
func DebugPodHostDirs() []fetch.HostDir {
	return append(cdiHostDirs(), cgroupHostDir)
}

// DebugPodReads is every exec a debug pod's reads may run, whatever a read asks for: the
// sections of bundleDumps, the checkpoint files and the kubelet's config.yaml.
func DebugPodReads() fetch.ReadAllowlist {
	var sections []fetch.StderrDump
	for _, d := range bundleDumps(inPod) {
		sections = append(sections, d.Dump)
	}
	return fetch.ReadsOf(sections, append(decode.Paths(), KubeletConfigFile))
}

// GenerateManifests renders the cluster setup for c: the admission policy admits the debug pods
// of every read (its host dirs are this package's).
func GenerateManifests(c ManifestsConfig) (Manifests, error) {
	c.HostDirs = DebugPodHostDirs()
	c.Reads = DebugPodReads()
	return deploy.Generate(c)
}
