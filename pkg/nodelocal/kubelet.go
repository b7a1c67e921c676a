package nodelocal

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// KubeletBinaries are where distributions and kubeadm's packages install the kubelet.
var KubeletBinaries = []string{"/usr/bin/kubelet", "/usr/local/bin/kubelet", "/opt/bin/kubelet"}

// The package whose gitVersion the Kubernetes build stamps into every binary with -X.
const versionVar = "k8s.io/component-base/version.gitVersion="

// versionTimeout bounds `kubelet --version`, which only prints.
const versionTimeout = 2 * time.Second

// KubeletVersion is the kubelet binary's version. It reads the Go build info first, without
// running the binary: it records the -ldflags the Kubernetes build stamps the version with (-X
// k8s.io/component-base/version.gitVersion=v1.37.1), unless the build used -trimpath, which
// leaves them out, or the module version of a kubelet built as a module (go install
// k8s.io/kubernetes/cmd/kubelet@v1.37.1). Else it asks the binary (`kubelet --version`, as the
// collect script does), which only prints.
func KubeletVersion(binary string) (string, error) {
	info, err := buildinfo.ReadFile(binary)
	if err == nil {
		if v := versionFromBuildInfo(info); v != "" {
			return v, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "--version")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "Kubernetes ")
	if !ok || v == "" || strings.ContainsAny(v, " \t") {
		return "", fmt.Errorf("%s --version printed %q, not \"Kubernetes vX.Y.Z\"", binary, truncate(line))
	}
	return v, nil
}

// versionFromBuildInfo is the version stamped by -X, else a kubernetes module version ("").
func versionFromBuildInfo(info *buildinfo.BuildInfo) string {
	for _, s := range info.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		if _, after, ok := strings.Cut(s.Value, versionVar); ok {
			if v := strings.Trim(strings.Fields(after + " ")[0], `'"`); v != "" {
				return v
			}
		}
	}
	if m := info.Main; m.Path == "k8s.io/kubernetes" && m.Version != "" && m.Version != "(devel)" {
		return m.Version
	}
	return ""
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
