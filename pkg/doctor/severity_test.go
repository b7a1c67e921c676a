package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// A file the target kubelet refuses is an error even when that kubelet starts without it: a
// device checkpoint written by 1.19 (DeviceIDs a list) that 1.31 cannot unmarshal. The device
// manager "continues after failing to read checkpoint file" and may hand the devices in use to
// other pods; a pre-upgrade check that exits 0 there lets the upgrade through.
func TestRefusedFileIsAnErrorEvenWhenTheKubeletStarts(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kubelet", "kubelet_internal_checkpoint", "v1.19.16", "multi-resource.json"))
	if err != nil {
		t.Fatal(err)
	}
	target, err := decode.ParseKubelet("v1.31.14", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := decode.Decode(decode.KindDevices, raw, decode.Options{Kubelet: &target})
	if rep.Verdict != decode.Unreadable || rep.Refused == nil || !rep.Refused.KubeletStarts {
		t.Fatalf("the vector no longer shows a refusal the kubelet starts through: %+v", rep)
	}
	res := Diagnose(Input{Files: []*decode.Report{rep}, Kubelet: &target})
	var found *Finding
	for i, f := range res.Findings {
		if f.Check == "file-refused" && f.File == rep.File {
			found = &res.Findings[i]
		}
	}
	if found == nil {
		t.Fatalf("no file-refused finding: %+v", res.Findings)
	}
	if found.Severity != SeverityError || !res.HasErrors() {
		t.Errorf("severity %s, HasErrors %v; want an error: %s", found.Severity, res.HasErrors(), found.Message)
	}
}
