//go:build e2enode

package e2enode

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCollectScriptKubeletStopped reads the node with a live collect, stops the kubelet, runs
// collect --print-script's script on the node (dash, and busybox sh when there) and checks
// that its tar.gz gives the same doctor answer as the live collect's bundle.
func TestCollectScriptKubeletStopped(t *testing.T) {
	dir := t.TempDir()
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
	// The answer of the live collect's bundle, read offline.
	want := parseDoctor(t, kubectl(t, "nodestate", "doctor", "--from-dir", filepath.Join(live, node.Name), "-o", "json"))

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
			got := parseDoctor(t, kubectl(t, "nodestate", "doctor", "--from-dir", bundle, "-o", "json"))
			wantJSON, _ := json.Marshal(struct {
				K json.RawMessage
				F []finding
			}{want.KubeletStart, want.Findings})
			gotJSON, _ := json.Marshal(struct {
				K json.RawMessage
				F []finding
			}{got.KubeletStart, got.Findings})
			if !bytes.Equal(wantJSON, gotJSON) {
				t.Errorf("%v: doctor of the script's bundle differs from the live collect's:\n got %s\nwant %s", sh, gotJSON, wantJSON)
			} else {
				t.Logf("%v: same doctor answer as the live collect: %s", sh, gotJSON)
			}
		}
	})
}
