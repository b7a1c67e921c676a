package nodestate

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// A node reads what it publishes as node-check reads it: its checkpoint files, its kubelet's
// config and version, and the four sections admit reads; and what it read encodes.
func TestReadPublished(t *testing.T) {
	root := filepath.Join("testdata", "noderoot", "kubelet")
	empty := t.TempDir()
	lc := LocalConfig{Paths: nodelocal.Paths{RootDir: root, SysRoot: empty, ProcRoot: empty}, KubeletVersion: "v1.37.1"}
	s, err := ReadPublished(t.Context(), "worker-1", lc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node != "worker-1" || s.Format != PublishedFormat || s.KubeletVersion != "v1.37.1" || s.ReadAt.IsZero() || s.KubeletRootDir != root {
		t.Errorf("state %+v", s)
	}
	if _, ok := s.Files["cpu_manager_state"]; !ok || s.KubeletConfigFrom != filepath.Join(root, KubeletConfigFile) || len(s.KubeletConfig) == 0 {
		t.Errorf("files %v, config from %q", slices.Sorted(maps.Keys(s.Files)), s.KubeletConfigFrom)
	}
	for _, h := range publishedSections {
		if _, ok := s.Sections[h]; !ok {
			t.Errorf("no section %s", h)
		}
	}
	if pr := string(s.Sections[machine.PodResourcesHeader]); !strings.Contains(pr, "no PodResources socket") {
		t.Errorf("PodResources without a kubelet: %q", pr)
	}
	if _, err := EncodePublished(s); err != nil {
		t.Errorf("encode: %v", err)
	}

	lc.KubeletConfigFile = filepath.Join(empty, "absent.yaml")
	s, err = ReadPublished(t.Context(), "worker-1", lc)
	if err != nil {
		t.Fatal(err)
	}
	if s.KubeletConfig != nil || !strings.Contains(strings.Join(s.Warnings, "\n"), "absent.yaml") {
		t.Errorf("a config that cannot be read: config %q, warnings %q", s.KubeletConfig, s.Warnings)
	}
	// This test's node has no sysfs: a consumer says so and replays nothing.
	if p := PreparePublished(s, nil, nil); p.Err == nil || p.Err.Error() != "no machine published (the sysfs section)" {
		t.Errorf("replay without a machine: %v", p.Err)
	}
	if _, err := ReadPublished(t.Context(), "worker-1", LocalConfig{Paths: nodelocal.Paths{RootDir: filepath.Join(empty, "none")}}); err == nil {
		t.Errorf("no kubelet root dir: no error")
	}
}
