package nodestate

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var updateDeploy = flag.Bool("update-deploy", false, "rewrite deploy/*.yaml from GenerateManifests")

// deploy/*.yaml is what `kubectl nodestate rbac` prints by default, byte for byte: the files a
// user applies from the repository and the command's output cannot drift apart.
// `go test ./pkg/nodestate -run TestDeployFiles -update-deploy` rewrites them.
func TestDeployFilesAreGenerated(t *testing.T) {
	m, err := GenerateManifests(ManifestsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"../../deploy/rbac.yaml": m.RBAC, "../../deploy/shape-policy.yaml": m.Policy} {
		if *updateDeploy {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from `kubectl nodestate rbac`'s output; run go test ./pkg/nodestate -run TestDeployFiles -update-deploy", file)
		}
	}
}
