package doctor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
)

// The pre-upgrade check of a node whose device checkpoint 1.19 wrote, before 1.31 rolls out:
// 1.31 refuses the file and starts without its allocations, so doctor must exit 1, not 0.
func TestRefusedDeviceCheckpointFailsThePreUpgradeCheck(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "kubelet", "kubelet_internal_checkpoint", "v1.19.16", "multi-resource.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "device-plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "device-plugins", "kubelet_internal_checkpoint"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cmdtest.Run(t, "doctor", "--from-dir", dir, "--kubelet-version", "v1.31.14", "-o", "json")
	var got struct {
		Findings []struct {
			Severity, Check, File string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	refused := false
	for _, f := range got.Findings {
		if f.Check == "file-refused" && f.File == "device-plugins/kubelet_internal_checkpoint" {
			refused = f.Severity == "error"
		}
	}
	if code != 1 || !refused {
		t.Errorf("exit %d, refused as an error %v; want exit 1 and an error finding\n%s\n%s", code, refused, out, errOut)
	}
}
