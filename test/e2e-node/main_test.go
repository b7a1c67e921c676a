//go:build e2enode

package e2enode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// node is the one real node hack/e2e-node/up.sh started; its env file says where things are.
var node struct {
	Name, Kubeconfig, State, KubeletRoot, KubeletConfig, CgroupRoot, ToolsBin string
	Plugin, Repo, CRIEndpoint                                                 string
	Client                                                                    kubernetes.Interface
}

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-node:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	envFile := os.Getenv("NODESTATE_E2E_NODE_ENV")
	if envFile == "" {
		return fmt.Errorf("NODESTATE_E2E_NODE_ENV is not set: run `make e2e-node` (hack/e2e-node.sh)")
	}
	f, err := os.Open(envFile)
	if err != nil {
		return err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	node.Name, node.Kubeconfig, node.State = env["NODE"], env["KUBECONFIG"], env["STATE"]
	node.KubeletRoot, node.KubeletConfig, node.CgroupRoot = env["KUBELET_ROOT"], env["KUBELET_CONFIG"], env["CGROUP_ROOT"]
	node.ToolsBin, node.CRIEndpoint = env["TOOLS_BIN"], env["CRI_ENDPOINT"]
	node.Plugin = os.Getenv("NODESTATE_PLUGIN")
	node.Repo = os.Getenv("NODESTATE_REPO")
	if node.Plugin == "" || node.Repo == "" {
		return fmt.Errorf("NODESTATE_PLUGIN and NODESTATE_REPO must be set")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", node.Kubeconfig)
	if err != nil {
		return err
	}
	node.Client, err = kubernetes.NewForConfig(cfg)
	return err
}

// result is one command's outcome.
type result struct {
	args           []string
	code           int
	stdout, stderr string
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%s: exit %d in %s\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code,
		r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// kubectl runs the real kubectl (this test runs inside the node's network namespace). The
// plugin is found on PATH as kubectl-nodestate, as kubectl finds any plugin.
func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(node.ToolsBin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+node.Kubeconfig, "KUBECACHEDIR="+filepath.Join(node.State, "kube-cache"),
		"PATH="+filepath.Dir(node.Plugin)+":"+node.ToolsBin+":/usr/sbin:/usr/bin:/sbin:/bin")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: append([]string{"kubectl"}, args...), stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", strings.Join(r.args, " "), err)
	}
	t.Logf("%s: exit %d in %s", strings.Join(r.args, " "), r.code, r.took.Round(time.Millisecond))
	return r
}

// nodestate runs `kubectl nodestate CMD NODE --kubelet-root-dir ROOT ARGS...` on the node (a
// later --kubelet-root-dir in args wins).
func nodestate(t *testing.T, cmd string, args ...string) result {
	t.Helper()
	return kubectl(t, append([]string{"nodestate", cmd, node.Name, "--kubelet-root-dir", node.KubeletRoot}, args...)...)
}

// writeKubeletConfig writes orig (the node's KubeletConfiguration) with change applied to
// STATE/kubelet-NAME.yaml, and returns the file and its bytes.
func writeKubeletConfig(t *testing.T, orig []byte, name string, change func(cfg map[string]any)) (string, []byte) {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal(orig, &cfg); err != nil {
		t.Fatal(err)
	}
	change(cfg)
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(node.State, "kubelet-"+name+".yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, b
}
