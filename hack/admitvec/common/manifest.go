package common

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest is MANIFEST.json (schema admitvec/manifest/v1).
type Manifest struct {
	Schema    string                   `json:"schema"`
	Kubelet   string                   `json:"kubelet"`
	Generator string                   `json:"generator"`
	Cases     map[string]*ManifestCase `json:"cases"`
}

// ManifestCase is one case of a manifest.
type ManifestCase struct {
	Dir         string    `json:"dir"`
	Description string    `json:"description"`
	Tags        []string  `json:"tags"`
	Files       []string  `json:"files"`
	Outcome     string    `json:"outcome"`
	Outcome2    *string   `json:"outcome2"`
	Expected    *Expected `json:"expected"`
}

// Meta is a case's setup/meta.json: what the generator says about it.
type Meta struct {
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

var caseFiles = []string{"machine.json", "devices.json", "cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint", "pod.json", "pod2.json", "pod3.json", "pod4.json", "pod5.json", "node.json", "restart.json"}

func outcome(e *Expected, i int) *string {
	var s string
	switch {
	case !e.Starts:
		s = "nostart:" + e.Phase
	case i >= len(e.Pods):
		return nil
	case e.Pods[i].Hangs:
		s = "hangs"
	case e.Pods[i].Admit:
		s = "admit"
	default:
		s = "reject:" + e.Pods[i].Reason
	}
	return &s
}

// WriteManifest writes the manifest of the cases under casesDir (each with expected.json).
func WriteManifest(casesDir, out, release string) error {
	m := Manifest{
		Schema:    "admitvec/manifest/v1",
		Kubelet:   release,
		Generator: fmt.Sprintf("hack/admitvec (real k8s.io/kubernetes %s topologymanager + cpumanager + memorymanager; pods admitted through topologymanager.Admit, then lifecycle.NewPredicateAdmitHandler where a case has node.json)", release),
		Cases:     map[string]*ManifestCase{},
	}
	entries, err := os.ReadDir(casesDir)
	if err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	absCases, err := filepath.Abs(casesDir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(absOut), absCases)
	if err != nil {
		return err
	}
	for _, d := range entries {
		dir := filepath.Join(casesDir, d.Name())
		var e Expected
		if err := readJSON(filepath.Join(dir, "expected.json"), &e); err != nil {
			return err
		}
		var meta Meta
		if err := readJSON(filepath.Join(dir, "setup", "meta.json"), &meta); err != nil && !os.IsNotExist(err) {
			return err
		}
		c := &ManifestCase{Dir: filepath.ToSlash(filepath.Join(rel, d.Name())), Description: meta.Description, Tags: meta.Tags, Expected: &e}
		if c.Tags == nil {
			c.Tags = []string{}
		}
		for _, f := range caseFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				c.Files = append(c.Files, f)
			}
		}
		c.Outcome, c.Outcome2 = *outcome(&e, 0), outcome(&e, 1)
		m.Cases[d.Name()] = c
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// CompactTree rewrites every .json file under dir without indentation (the vectors are data
// for tests; the checkpoints are left as the kubelet wrote them).
func CompactTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		buf.WriteByte('\n')
		return os.WriteFile(path, buf.Bytes(), 0o644)
	})
}

// SortedTags dedupes and sorts tags.
func SortedTags(tags ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}
