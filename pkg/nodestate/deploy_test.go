package nodestate

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
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

// execAdmitted is the exec policy's command rule (deploy/shape-policy.yaml,
// kubectl-nodestate-exec), in Go: a reader's own words first, then only its sections and the
// kubelet files. test/e2e's TestLiveAdmissionPolicy shows the API server's CEL answers the same.
func execAdmitted(reads fetch.ReadAllowlist, cmd []string) bool {
	shell := len(cmd) >= 4 && cmd[0] == "sh" && cmd[1] == "-c" && cmd[2] == reads.ShellScript && cmd[3] == "sh"
	binary := len(cmd) >= 2 && cmd[0] == fetch.ReaderPath && cmd[1] == fetch.NodeReadVerb
	if !shell && !binary {
		return false
	}
	for _, a := range cmd {
		switch {
		case slices.Contains([]string{"sh", "-c", reads.ShellScript, fetch.ReaderPath, fetch.NodeReadVerb, "--"}, a),
			slices.Contains(reads.Sections, a), slices.Contains(reads.Paths, a),
			strings.HasPrefix(a, "./") && slices.Contains(reads.Paths, a[2:]):
		default:
			return false
		}
	}
	return true
}

// Every exec a read makes, whatever it asks for and with either reader, is one the exec policy
// admits; a shell of one's own, another script, or another file under the kubelet root dir is
// not.
func TestEveryReadIsAdmittedByTheExecPolicy(t *testing.T) {
	reads := DebugPodReads()
	n := 0
	for mask := range 1 << 5 {
		cfg := Config{Machine: mask&1 != 0, Cgroups: mask&2 != 0, NodeFiles: mask&4 != 0, KubeletConfig: mask&8 != 0}
		if mask&16 != 0 {
			cfg.Admit = &AdmitConfig{}
		}
		r := &Runner{cfg: cfg}
		paths := decode.Paths()
		if cfg.KubeletConfig {
			paths = append(paths, KubeletConfigFile)
		}
		for _, reader := range []string{fetch.ReaderShell, fetch.ReaderBinary} {
			f := &fetch.Fetcher{Paths: paths, Dumps: r.dumps(), ShellScript: reads.ShellScript, Options: fetch.Options{Reader: reader}}
			if cmd := f.Command(); !execAdmitted(reads, cmd) {
				t.Errorf("%s reader, config %+v: the exec policy refuses %q", reader, cfg, cmd)
			}
			n++
		}
	}
	for _, cmd := range [][]string{
		{"sh", "-c", "cat pods/*/volumes/kubernetes.io~secret/*/*"},
		{"sh", "-c", reads.ShellScript + "; cat /etc/shadow", "sh", "./cpu_manager_state"},
		{"sh", "-c", reads.ShellScript, "sh", "./pods/0/volumes/kubernetes.io~secret/token/token"},
		{"sh", "-c", reads.ShellScript, "sh", "./../../etc/shadow"},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--", "pods/0/volumes/kubernetes.io~secret/token/token"},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--kubelet-root-dir=/", "--", "etc/shadow"},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--section=cgroups=/kubelet/pods", "--"},
		{"/bin/sh"},
		{fetch.ReaderPath},
	} {
		if execAdmitted(reads, cmd) {
			t.Errorf("the exec policy admits %q", cmd)
		}
	}
	t.Logf("%d reads' execs admitted", n)
}
