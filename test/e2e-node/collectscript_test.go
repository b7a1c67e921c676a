//go:build e2enode

package e2enode

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// TestCollectScriptKubeletStopped reads the node with a live collect, stops the kubelet, runs
// collect --print-script's script on the node (dash, and busybox sh when there) and checks
// that its tar.gz gives the same doctor answer as the live collect's bundle.
//
// The node holds a Guaranteed pod with an exclusive CPU, and doctor is asked both about the
// node's own config and about one changing the CPU policy to none (the kubelet refuses that
// state): both bundles must give the same prediction, the same error and the same findings.
func TestCollectScriptKubeletStopped(t *testing.T) {
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory)}
	p := pod("script-guaranteed", guaranteed, guaranteed)
	createPod(t, p)
	waitPod(t, p.Name, running)
	dir := t.TempDir()
	orig, err := os.ReadFile(node.KubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(orig, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["cpuManagerPolicy"] = "none"
	changed, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	noneConfig := filepath.Join(dir, "none.yaml")
	if err := os.WriteFile(noneConfig, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live")
	if r := nodestate(t, "collect", "-d", live); r.code != 0 {
		t.Fatalf("collect: %s", r)
	}
	r := kubectl(t, "nodestate", "collect", "--print-script", "--kubelet-root-dir", node.KubeletRoot)
	if r.code != 0 {
		t.Fatalf("collect --print-script: %s", r)
	}
	script := filepath.Join(dir, "collect.sh")
	if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	// The answers of the live collect's bundle, read offline. The restart outlooks are set
	// apart: the live collect records the node's pods as the API server lists them, the script
	// (no API server) does not, so its outlooks judge every pod of the files and it has no
	// kubelet-restart outlook; outlooks lists the checks each bundle's outlooks gave.
	outlooks := map[string][]string{}
	doctorOf := func(bundle string, extra ...string) string {
		d := parseDoctor(t, kubectl(t, append([]string{"nodestate", "doctor", "--from-dir", bundle, "-o", "json"}, extra...)...))
		var rest []finding
		for _, f := range d.Findings {
			if strings.HasPrefix(f.Check, "if-") {
				outlooks[bundle] = append(outlooks[bundle], f.Check)
				continue
			}
			rest = append(rest, f)
		}
		b, _ := json.Marshal(struct {
			K json.RawMessage
			F []finding
		}{d.KubeletStart, rest})
		return string(b)
	}
	want := doctorOf(filepath.Join(live, node.Name))
	if got := strings.Join(outlooks[filepath.Join(live, node.Name)], ","); got != "if-reboot,if-kubelet-restart" {
		t.Errorf("the live collect's bundle gives the outlooks %q, want if-reboot,if-kubelet-restart", got)
	}
	wantNone := doctorOf(filepath.Join(live, node.Name), "--kubelet-config", noneConfig)
	if !strings.Contains(wantNone, `configured policy \"none\" differs`) {
		t.Errorf("the changed config is not refused: %s", wantNone)
	}

	restartKubelet(t, func() {
		shells := [][]string{{"sh"}}
		if bb, err := exec.LookPath("busybox"); err == nil {
			shells = append(shells, []string{bb, "sh"})
		}
		for _, sh := range shells {
			bundle := filepath.Join(dir, filepath.Base(sh[0])+".tar.gz")
			cmd := exec.Command(sh[0], append(sh[1:], script)...)
			cmd.Env = append(os.Environ(), "KUBELET="+filepath.Join(node.ToolsBin, "kubelet"), "NODE_NAME="+node.Name,
				// This kubelet's --config is not config.yaml in its root dir (kubeadm's place).
				"KUBELET_CONFIG="+node.KubeletConfig)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %v\n%s", sh, err, errb.String())
			}
			if errb.Len() > 0 {
				t.Errorf("%v: stderr %s", sh, errb.String())
			}
			if err := os.WriteFile(bundle, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Logf("%v: %d-byte bundle", sh, out.Len())
			if v := kubectl(t, "nodestate", "verify", "--from-dir", bundle); v.code != 0 {
				t.Errorf("verify --from-dir %s: %s", bundle, v)
			}
			got := doctorOf(bundle)
			if o := strings.Join(outlooks[bundle], ","); o != "if-reboot" {
				t.Errorf("%v: the script's bundle gives the outlooks %q, want if-reboot alone (no pods recorded)", sh, o)
			}
			for _, c := range []struct{ got, want string }{{got, want}, {doctorOf(bundle, "--kubelet-config", noneConfig), wantNone}} {
				if c.got != c.want {
					t.Errorf("%v: doctor of the script's bundle differs from the live collect's:\n got %s\nwant %s", sh, c.got, c.want)
				} else {
					t.Logf("%v: same doctor answer as the live collect: %s", sh, c.got)
				}
			}
		}
	})
}
