package nodestate

import (
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

// GenerateManifests renders the cluster setup for c: the admission policy admits the debug pods
// of every read (its host dirs are this package's).
func GenerateManifests(c ManifestsConfig) (Manifests, error) {
	c.HostDirs = DebugPodHostDirs()
	return deploy.Generate(c)
}
