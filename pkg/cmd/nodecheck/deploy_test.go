package nodecheck

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

var deployDir = filepath.Join("..", "..", "..", "deploy", "npd")

// monitor is the Node Problem Detector's custom plugin monitor config
// (pkg/custompluginmonitor/types: CustomPluginConfig, CustomRule), read strictly.
type monitor struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		InvokeInterval  string `json:"invoke_interval"`
		Timeout         string `json:"timeout"`
		MaxOutputLength int    `json:"max_output_length"`
		Concurrency     int    `json:"concurrency"`
		MessageChange   bool   `json:"enable_message_change_based_condition_update"`
	} `json:"pluginConfig"`
	Source           string `json:"source"`
	MetricsReporting bool   `json:"metricsReporting"`
	Conditions       []struct {
		Type, Reason, Message string
	} `json:"conditions"`
	Rules []struct {
		Type      string   `json:"type"`
		Condition string   `json:"condition"`
		Reason    string   `json:"reason"`
		Path      string   `json:"path"`
		Args      []string `json:"args"`
		Timeout   string   `json:"timeout"`
	} `json:"rules"`
}

// The monitor config invokes every check once, as the command parses it, within NPD's 30 s
// interval, 5 s timeout and the 80 characters node-check's line keeps to; each rule's condition
// has its default; the DaemonSet mounts read-only every path a rule reads, and the config map
// kustomize generates from the file.
func TestNPDMonitorConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "nodestate-monitor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m monitor
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	pc := m.PluginConfig
	if m.Plugin != "custom" || pc.InvokeInterval != "30s" || pc.Timeout != "5s" || pc.MaxOutputLength != MaxLine {
		t.Errorf("plugin %q interval %q timeout %q max_output_length %d", m.Plugin, pc.InvokeInterval, pc.Timeout, pc.MaxOutputLength)
	}
	global, _ := time.ParseDuration(pc.Timeout)
	conditions := map[string]bool{}
	for _, c := range m.Conditions {
		if len(c.Message) > MaxLine || c.Reason == "" {
			t.Errorf("condition %s: reason %q, message of %d bytes", c.Type, c.Reason, len(c.Message))
		}
		conditions[c.Type] = true
	}
	ds := daemonSet(t)
	npd := ds.Spec.Template.Spec.Containers[0]
	mounted := map[string]bool{}
	for _, vm := range npd.VolumeMounts {
		if !vm.ReadOnly {
			t.Errorf("mount %s is not read-only", vm.MountPath)
		}
		mounted[vm.MountPath] = true
	}
	covered := map[nodestate.NodeCheck]bool{}
	for _, r := range m.Rules {
		if r.Type != "permanent" || !conditions[r.Condition] || r.Reason == "" {
			t.Errorf("rule %s: type %q reason %q, or no default condition", r.Condition, r.Type, r.Reason)
		}
		if d, err := time.ParseDuration(r.Timeout); err != nil || d > global {
			t.Errorf("rule %s: timeout %q over the global %s", r.Condition, r.Timeout, global)
		}
		if len(r.Args) < 2 || r.Args[0] != "node-check" {
			t.Fatalf("rule %s: args %q", r.Condition, r.Args)
		}
		check, err := nodestate.ParseNodeCheck(r.Args[1])
		if err != nil {
			t.Errorf("rule %s: %v", r.Condition, err)
		}
		if covered[check] {
			t.Errorf("check %s invoked twice", check)
		}
		covered[check] = true
		cmd := NewCmdNodeCheck(nilStreams())
		if err := cmd.ParseFlags(r.Args[2:]); err != nil || cmd.Flags().NArg() != 0 {
			t.Errorf("rule %s: %q: %v", r.Condition, r.Args, err)
		}
		// Every path the plugin reads, and the plugin itself, are mounted.
		paths := []string{filepath.Dir(r.Path)}
		for _, name := range []string{"kubelet-root-dir", "kubelet-binary"} {
			paths = append(paths, cmd.Flags().Lookup(name).Value.String())
		}
		switch check {
		case nodestate.CheckCgroups:
			paths = append(paths, cmd.Flags().Lookup("cgroup-root").Value.String(), "/run/containerd/io.containerd.runtime.v2.task")
		case nodestate.CheckDevices:
			cdi, _ := cmd.Flags().GetStringSlice("cdi-dirs")
			paths = append(paths, cdi...)
		}
		for _, p := range paths {
			p = strings.Trim(p, "[]")
			if !mountedAt(mounted, p) {
				t.Errorf("rule %s reads %s, which the DaemonSet does not mount", r.Condition, p)
			}
		}
	}
	for _, c := range nodestate.NodeChecks {
		if !covered[c] {
			t.Errorf("no rule runs check %s", c)
		}
	}
	if len(m.Conditions) != len(nodestate.NodeChecks) {
		t.Errorf("%d conditions for %d checks", len(m.Conditions), len(nodestate.NodeChecks))
	}
	var kust struct {
		ConfigMapGenerator []struct {
			Name  string   `json:"name"`
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	b, _ := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if err := yaml.Unmarshal(b, &kust); err != nil || len(kust.ConfigMapGenerator) != 1 {
		t.Fatalf("kustomization: %v", err)
	}
	found := false
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == kust.ConfigMapGenerator[0].Name {
			found = true
		}
	}
	if !found || !strings.Contains(npd.Command[len(npd.Command)-1], kust.ConfigMapGenerator[0].Files[0]) {
		t.Errorf("the DaemonSet does not read the generated config map %s: %q", kust.ConfigMapGenerator[0].Name, npd.Command)
	}
}

func mountedAt(mounted map[string]bool, p string) bool {
	for m := range mounted {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

// daemonSet is deploy/npd/daemonset.yaml's DaemonSet.
func daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict([]byte(doc), &ds); err != nil {
			continue
		}
		if ds.Kind == "DaemonSet" {
			for _, v := range ds.Spec.Template.Spec.Volumes {
				if v.HostPath != nil && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectoryOrCreate {
					t.Errorf("volume %s would create %s on the node", v.Name, v.HostPath.Path)
				}
			}
			return &ds
		}
	}
	t.Fatal("no DaemonSet in daemonset.yaml")
	return nil
}

func nilStreams() genericiooptions.IOStreams {
	s, _, _, _ := genericiooptions.NewTestIOStreams()
	return s
}
