package nodelocal

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The build info gives the version the Kubernetes build stamped (-X among other -ldflags), or
// a kubernetes module's version; nothing else.
func TestVersionFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		info *buildinfo.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w -X k8s.io/component-base/version.gitMajor=1 -X 'k8s.io/component-base/version.gitVersion=v1.37.1' -X k8s.io/component-base/version.gitTreeState=clean"}}}, "v1.37.1"},
		{&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X k8s.io/component-base/version.gitVersion=v1.35.0"}}}, "v1.35.0"},
		{&debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: "v1.36.2"}}, "v1.36.2"},
		{&debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: "(devel)"}}, ""},
		{&debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v1.0.0"}}, ""},
		{&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w"}}}, ""},
	} {
		if got := versionFromBuildInfo(tc.info); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.info, got, tc.want)
		}
	}
}

// Without a stamp in the build info, the binary says its version (the stand-in prints what a
// kubelet prints); anything else is an error, never a guess.
func TestKubeletVersionAsksTheBinary(t *testing.T) {
	stand := filepath.Join("..", "nodestate", "testdata", "noderoot", "kubelet-version.sh")
	if v, err := KubeletVersion(stand); v != "v1.37.1" || err != nil {
		t.Errorf("version %q, %v", v, err)
	}
	odd := filepath.Join(t.TempDir(), "kubelet")
	os.WriteFile(odd, []byte("#!/bin/sh\necho 'not a version line'\n"), 0o755)
	if v, err := KubeletVersion(odd); err == nil {
		t.Errorf("an odd line: %q", v)
	}
	if _, err := KubeletVersion(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("no binary: no error")
	}
}
