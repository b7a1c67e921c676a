package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	templatePath   = "../../krew/nodestate.yaml.tmpl"
	goreleaserPath = "../../.goreleaser.yaml"
)

// manifest is the part of a krew Plugin this test looks at.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels      map[string]string `json:"matchLabels"`
				MatchExpressions []any             `json:"matchExpressions"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

var allPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// render renders the real template for the given platforms with made-up checksums.
func render(t *testing.T, version string, platforms []string) manifest {
	t.Helper()
	dir := t.TempDir()
	var sums strings.Builder
	for i, p := range platforms {
		os, arch, _ := strings.Cut(p, "/")
		ext := "tar.gz"
		if os == "windows" {
			ext = "zip"
		}
		fmt.Fprintf(&sums, "%064x  kubectl-nodestate_%s_%s_%s.%s\n", i+1, version, os, arch, ext)
	}
	sums.WriteString(strings.Repeat("f", 64) + "  unrelated.txt\n")
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "nodestate.yaml")
	if err := run(templatePath, filepath.Join(dir, "checksums.txt"), version, "https://example.com/dl/"+version+"/", out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("rendered manifest is not valid YAML for a krew Plugin: %v\n%s", err, b)
	}
	return m
}

func TestManifest(t *testing.T) {
	m := render(t, "v0.1.0", allPlatforms)
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		t.Errorf("apiVersion/kind = %s/%s", m.APIVersion, m.Kind)
	}
	// krew-index requires the file name to be <metadata.name>.yaml.
	if want := strings.TrimSuffix(filepath.Base(templatePath), ".yaml.tmpl"); m.Metadata.Name != want {
		t.Errorf("metadata.name %q must match the file name %q", m.Metadata.Name, want)
	}
	if m.Spec.Version != "v0.1.0" {
		t.Errorf("version %q", m.Spec.Version)
	}
	if sd := m.Spec.ShortDescription; sd == "" || strings.Contains(sd, "\n") || len(sd) > 70 {
		t.Errorf("shortDescription must be one short line, got %q", sd)
	}
	for _, want := range []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint",
		"dra_manager_state", "allocated_pods_state", "checksum", "read-only hostPath", "uid 0", "capabilities dropped",
		"pods/exec", "deploy/rbac.yaml", "--from-dir"} {
		if !strings.Contains(m.Spec.Description, want) {
			t.Errorf("description does not mention %q", want)
		}
	}
	for _, want := range []string{"pod-security.kubernetes.io/enforce=privileged", "kube-system", "--from-dir", "kubectl_complete-nodestate"} {
		if !strings.Contains(m.Spec.Caveats, want) {
			t.Errorf("caveats do not mention %q", want)
		}
	}
	if len(m.Spec.Platforms) != len(allPlatforms) {
		t.Fatalf("%d platforms, want %d", len(m.Spec.Platforms), len(allPlatforms))
	}
	for i, p := range m.Spec.Platforms {
		l := p.Selector.MatchLabels
		if len(l) != 2 || l["os"] == "" || l["arch"] == "" || p.Selector.MatchExpressions != nil {
			t.Errorf("platform %d: selector must be matchLabels os+arch only, got %+v", i, p.Selector)
		}
		name := l["os"] + "/" + l["arch"]
		wantBin := "kubectl-nodestate"
		if l["os"] == "windows" {
			wantBin += ".exe"
		}
		if p.Bin != wantBin {
			t.Errorf("%s: bin %q, want %q", name, p.Bin, wantBin)
		}
		if len(p.SHA256) != 64 {
			t.Errorf("%s: sha256 %q", name, p.SHA256)
		}
		if !strings.HasPrefix(p.URI, "https://example.com/dl/v0.1.0/kubectl-nodestate_v0.1.0_"+l["os"]+"_"+l["arch"]+".") {
			t.Errorf("%s: uri %q", name, p.URI)
		}
		from := map[string]bool{}
		for _, f := range p.Files {
			from[f.From] = true
			if f.To != "." {
				t.Errorf("%s: file %s goes to %q, want .", name, f.From, f.To)
			}
		}
		if !from[wantBin] || !from["LICENSE"] {
			t.Errorf("%s: files must hold %s and LICENSE, got %+v", name, wantBin, p.Files)
		}
		if from["kubectl_complete-nodestate"] == (l["os"] == "windows") {
			t.Errorf("%s: the completion helper ships on linux and darwin only, got %+v", name, p.Files)
		}
	}
	// Stable order: linux, darwin, windows.
	if got := m.Spec.Platforms[0].Selector.MatchLabels["os"] + "/" + m.Spec.Platforms[4].Selector.MatchLabels["os"]; got != "linux/windows" {
		t.Errorf("platform order: first/last os = %s", got)
	}
}

func TestManifestOnlyBuiltPlatforms(t *testing.T) {
	m := render(t, "v0.0.0-dev", []string{"linux/amd64"})
	if len(m.Spec.Platforms) != 1 {
		t.Fatalf("got %d platforms, want only the one built", len(m.Spec.Platforms))
	}
}

// TestGoreleaserInStep keeps the texts of .goreleaser.yaml's krews entry equal to the template's.
func TestGoreleaserInStep(t *testing.T) {
	m := render(t, "v0.1.0", allPlatforms)
	b, err := os.ReadFile(goreleaserPath)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Version int `json:"version"`
		Krews   []struct {
			Name             string `json:"name"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"short_description"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
		} `json:"krews"`
	}
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.Version != 2 || len(g.Krews) != 1 {
		t.Fatalf(".goreleaser.yaml: want version 2 and one krews entry, got version %d, %d entries", g.Version, len(g.Krews))
	}
	k := g.Krews[0]
	for _, c := range []struct{ field, goreleaser, template string }{
		{"name", k.Name, m.Metadata.Name},
		{"homepage", k.Homepage, m.Spec.Homepage},
		{"short_description", k.ShortDescription, m.Spec.ShortDescription},
		{"description", k.Description, m.Spec.Description},
		{"caveats", k.Caveats, m.Spec.Caveats},
	} {
		if c.goreleaser != c.template {
			t.Errorf("krews[0].%s in .goreleaser.yaml differs from krew/nodestate.yaml.tmpl:\n%q\nvs\n%q", c.field, c.goreleaser, c.template)
		}
	}
}

func TestRejects(t *testing.T) {
	dir := t.TempDir()
	sums := filepath.Join(dir, "checksums.txt")
	for _, tc := range []struct{ name, version, sums, want string }{
		{"not semver", "abc1234", "", "not a krew version"},
		{"no archive", "v0.1.0", strings.Repeat("a", 64) + "  other.tar.gz\n", "no kubectl-nodestate_v0.1.0"},
		{"bad line", "v0.1.0", "nonsense\n", "line 1"},
		{"windows tarball", "v0.1.0", strings.Repeat("a", 64) + "  kubectl-nodestate_v0.1.0_windows_amd64.tar.gz\n", "must be a .zip"},
		{"duplicate", "v0.1.0", strings.Repeat("a", 64) + "  kubectl-nodestate_v0.1.0_linux_amd64.tar.gz\n" +
			strings.Repeat("b", 64) + "  kubectl-nodestate_v0.1.0_linux_amd64.zip\n", "a second archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(sums, []byte(tc.sums), 0o644); err != nil {
				t.Fatal(err)
			}
			err := run(templatePath, sums, tc.version, "https://example.com", filepath.Join(dir, "out.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
