package nodestate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// countDecodes counts, by file, the decodes of the runs in fn.
func countDecodes(t *testing.T, fn func()) map[string]int {
	t.Helper()
	counts := map[string]int{}
	decodeFile = func(p *decode.Parsed, opts decode.Options) *decode.Report {
		counts[string(p.Kind())]++
		return p.Decode(opts)
	}
	defer func() { decodeFile = (*decode.Parsed).Decode }()
	fn()
	return counts
}

// Each file is decoded once, by the kubelet that judges it: chosen first, from the files'
// formats when nothing names it, and with the config's feature gates when an engine replays
// that config (the files were once decoded again for the gates, and again after a guess).
func TestDecodeOnce(t *testing.T) {
	config, err := replay.ParseKubeletConfig([]byte(`{"cpuManagerPolicy":"static","reservedSystemCPUs":"0","featureGates":{"CPUManagerPolicyAlphaOptions":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	k := homeKubelet(t)
	root := filepath.Join(repo, "examples/kubelet-root")
	node := filepath.Join(repo, "examples/doctor-node")
	for _, tc := range []struct {
		name string
		cfg  Config
		// gated: the rows are judged by a kubelet with the config's gate on.
		gated bool
	}{
		{"release guessed from the formats", Config{FromDir: root}, false},
		{"kubelet given", Config{FromDir: root, Kubelet: &k}, false},
		{"doctor, config with gates", Config{FromDir: node, Kubelet: &k, Engines: Engines{Doctor: &DoctorConfig{KubeletConfig: config}}}, true},
		{"admit, config with gates", Config{FromDir: node, Kubelet: &k, Engines: Engines{Admit: &AdmitConfig{KubeletConfig: config}}}, true},
		{"doctor, release guessed: no gates", Config{FromDir: node, Engines: Engines{Doctor: &DoctorConfig{KubeletConfig: config}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res *NodeResult
			counts := countDecodes(t, func() { res = readOne(t, tc.cfg) })
			files := 0
			for _, row := range res.Rows {
				if row.Report == nil {
					continue
				}
				files++
				if n := counts[string(row.Kind())]; n != 1 {
					t.Errorf("%s decoded %d times, want once", row.File(), n)
				}
				if gated := strings.Contains(row.Kubelet(), "CPUManagerPolicyAlphaOptions"); gated != tc.gated {
					t.Errorf("%s judged by %s, gated %v, want %v", row.File(), row.Kubelet(), gated, tc.gated)
				}
			}
			if files < 2 {
				t.Fatalf("%d files read", files)
			}
		})
	}
}
