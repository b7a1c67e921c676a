//go:build e2e

package e2e

// The harness API used by the e2e tests. See README.md.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

const (
	// ManagedByLabel/ManagedByValue mark the plugin's debug pods. The exec
	// mapper handles (only) pods carrying this label.
	ManagedByLabel = fetch.LabelManagedBy
	ManagedByValue = fetch.ManagedBy
	// ManagedBySelector is the label selector of the plugin's pods.
	ManagedBySelector = ManagedByLabel + "=" + ManagedByValue

	// TestLabel is put on every node CreateNode makes, with a value unique
	// to the test (see TestSelector), so a test can restrict the plugin to
	// its own nodes.
	TestLabel = "nodestate-e2e/test"

	// kwok manages nodes with this annotation.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// Set by the exec mapper once the pod's Exec exists; the pod-ready stage
	// (hack/e2e/kwok/stages/pod-ready.yaml) waits for it.
	execReadyAnnotation = "nodestate-e2e/exec-ready"
	// On Exec objects: the UID of the pod they were made for.
	execPodUIDAnnotation = "nodestate-e2e/pod-uid"
	// KubeletDirAnnotation on a node names its simulated kubelet dir (host
	// path). CreateNode sets it; on a cluster from hack/e2e/cluster-up.sh,
	// annotate hand-made nodes with it before creating pods on them.
	KubeletDirAnnotation = "nodestate-e2e/kubelet-dir"
)

// PodFate is what happens to pods bound to a node created by CreateNodeWith.
type PodFate int

const (
	// PodsRun: pods become Running (and exec works) within about a second.
	PodsRun PodFate = iota
	// PodsPending: pods stay Pending with an empty status forever.
	// The node's name must start with PrefixPodsPending.
	PodsPending
	// PodsImagePullBackOff: pods stay Pending, container waiting in
	// ImagePullBackOff. The name must start with PrefixPodsImagePull.
	PodsImagePullBackOff
	// PodsFail: pods go to phase Failed (container exit code 1, reason
	// Error). The name must start with PrefixPodsFail.
	PodsFail
)

// Reserved node-name prefixes that select the PodFate in the kwok stages
// (kwok stages can only look at the pod, so the node name carries it).
const (
	PrefixPodsPending   = "e2e-pending-"
	PrefixPodsImagePull = "e2e-imagepull-"
	PrefixPodsFail      = "e2e-failing-"
)

// NodeOptions configures CreateNodeWith.
type NodeOptions struct {
	// KubeletVersion goes to status.nodeInfo.kubeletVersion ("" = "v1.37.1").
	KubeletVersion string
	// Labels are added to the node (kubernetes.io/os=linux,
	// kubernetes.io/hostname=<name> and TestLabel are always set, but
	// can be overridden here).
	Labels map[string]string
	// KubeletDir is the host dir that plays the node's kubelet root dir:
	// exec in the plugin's pods on this node runs there. "" = a new empty
	// t.TempDir().
	KubeletDir string
	// Pods selects what happens to pods on the node (see PodFate).
	Pods PodFate
	// NotReady creates the node NotReady (Ready=Unknown, unreachable
	// taints) and not managed by kwok: pods bound to it stay Pending.
	NotReady bool
}

// The running control plane (set by Main).
var (
	cp        *controlPlane
	kubeDirs  sync.Map // node name -> kubelet dir (string)
	emptyDir  string   // workDir for pods on nodes without a known dir
	pluginMu  sync.Mutex
	pluginBin string
	pluginErr error
)

// Main starts the control plane and the exec mapper, runs the tests, and
// stops everything. Use it from TestMain: os.Exit(e2e.Main(m)).
//
// Environment:
//
//	NODESTATE_TOOLS_BIN   dir with kube-apiserver, etcd, kwok, kubectl
//	                      (default: the output of hack/tools/build.sh)
//	NODESTATE_PLUGIN      the kubectl-nodestate binary under test
//	                      (default: built from ./cmd/kubectl-nodestate on first use)
//	NODESTATE_E2E_KEEP=1  keep the temp dir (data, logs, kubeconfig) after the run
//	NODESTATE_E2E_SERVE=F start the control plane, write "KUBECONFIG=...",
//	                      "TOOLS_BIN=..." and "PID=..." lines to file F, run no
//	                      tests and wait for SIGINT/SIGTERM (hack/e2e/cluster-up.sh)
func Main(m *testing.M) int {
	flag.Parse()
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	toolsBin := os.Getenv("NODESTATE_TOOLS_BIN")
	if toolsBin == "" {
		if toolsBin, err = buildTools(root); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	cp, err = startControlPlane(root, toolsBin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the control plane:", err)
		return 1
	}
	keep := os.Getenv("NODESTATE_E2E_KEEP") != ""
	code := 1
	defer func() {
		cp.stopAll()
		if keep || code != 0 {
			logf2("kept %s (logs: etcd.log, kube-apiserver.log, kwok.log; admin.kubeconfig)", cp.dir)
		} else {
			_ = os.RemoveAll(cp.dir)
		}
	}()
	emptyDir = filepath.Join(cp.dir, "empty-kubelet-dir")
	if err := os.MkdirAll(emptyDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mapperDone, err := startExecMapper(ctx, cp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: exec mapper:", err)
		return 1
	}
	defer func() { cancel(); <-mapperDone }()

	// Stop the children on ^C / SIGTERM (a kill -9 is covered by Pdeathsig).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if f := os.Getenv("NODESTATE_E2E_SERVE"); f != "" {
		env := fmt.Sprintf("KUBECONFIG=%s\nTOOLS_BIN=%s\nPID=%d\n", cp.kubeconfig, toolsBin, os.Getpid())
		if err := os.WriteFile(f, []byte(env), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		logf2("serving; KUBECONFIG=%s; stop with SIGINT/SIGTERM (hack/e2e/cluster-down.sh)", cp.kubeconfig)
		<-sigs
		keep = true
		code = 0
		return code
	}
	go func() {
		s := <-sigs
		logf2("got %s: stopping the control plane", s)
		cp.stopAll()
		os.Exit(130)
	}()
	code = m.Run()
	return code
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/kubectl-nodestate/kubectl-nodestate\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod of github.com/kubectl-nodestate/kubectl-nodestate)")
		}
		dir = parent
	}
}

func buildTools(root string) (string, error) {
	logf2("NODESTATE_TOOLS_BIN not set: running hack/tools/build.sh")
	cmd := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools/build.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// ---------------------------------------------------------------- accessors

// Kubeconfig is the path of the admin kubeconfig (user kubernetes-admin in
// group system:masters, current namespace "default").
func Kubeconfig() string { return cp.kubeconfig }

// RESTConfig returns a copy of the admin rest.Config (QPS 200, burst 400).
func RESTConfig() *rest.Config { return rest.CopyConfig(cp.cfg) }

// Client is an admin clientset.
func Client() kubernetes.Interface { return cp.client }

// ToolsBin is the dir holding kubectl, kube-apiserver, etcd, kwok, krew,
// kubectl-krew and validate-krew-manifest.
func ToolsBin() string { return cp.toolsBin }

// KubectlBin is the path of the pinned kubectl (v1.37.1).
func KubectlBin() string { return filepath.Join(cp.toolsBin, "kubectl") }

// releaseBuild is the go build of pkg to out as `make build` and the release build the plugin:
// static, trimmed, stripped. What the tests run and the benchmarks measure is what users run
// (a cgo build links dynamically and maps twice the pages: ~62 MiB peak RSS against ~34).
func releaseBuild(out, pkg string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = cp.repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

func pluginDir() string { return filepath.Join(cp.dir, "plugin") }

// PluginBin returns the kubectl-nodestate binary under test, as
// <plugin dir>/kubectl-nodestate: a symlink to $NODESTATE_PLUGIN, or built
// once from ./cmd/kubectl-nodestate. A build failure fails t.
func PluginBin(t testing.TB) string {
	t.Helper()
	pluginMu.Lock()
	defer pluginMu.Unlock()
	if pluginBin == "" && pluginErr == nil {
		pluginErr = func() error {
			out := filepath.Join(pluginDir(), "kubectl-nodestate")
			if err := os.MkdirAll(pluginDir(), 0o755); err != nil {
				return err
			}
			if p := os.Getenv("NODESTATE_PLUGIN"); p != "" {
				abs, err := filepath.Abs(p)
				if err != nil {
					return err
				}
				if _, err := os.Stat(abs); err != nil {
					return fmt.Errorf("NODESTATE_PLUGIN: %w", err)
				}
				if err := os.Symlink(abs, out); err != nil {
					return err
				}
			} else {
				cmd := releaseBuild(out, "./cmd/kubectl-nodestate")
				if b, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("go build ./cmd/kubectl-nodestate: %w\n%s", err, b)
				}
			}
			pluginBin = out
			return nil
		}()
	}
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginBin
}

// UserKubeconfig writes a kubeconfig for a non-admin user (client cert for
// user in groups; RBAC applies: bind roles to it yourself) and returns its path.
func UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	ck, err := cp.ca.issue(user, groups, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := cp.writeKubeconfig(path, user, ck); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---------------------------------------------------------------- commands

// Result of RunKubectl / RunPlugin / Run.
type Result struct {
	Stdout, Stderr string
	ExitCode       int // -1 if the process did not run to an exit (timeout, signal)
	Err            error
	Duration       time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d (%v) after %s\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Err, r.Duration.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Env is the environment for commands run against the cluster: KUBECONFIG
// set to the admin kubeconfig, PATH starting with the plugin dir (where
// PluginBin puts kubectl-nodestate, so `kubectl nodestate` finds it) and
// ToolsBin, without other dirs holding a kubectl-nodestate, HOME set to a
// per-test temp dir. Extra "K=V" entries are
// appended (and win). Env does not build the plugin: call PluginBin first.
func Env(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "KUBECONFIG", "PATH", "HOME", "KREW_ROOT":
			continue
		}
		env = append(env, kv)
	}
	// Inherited PATH entries holding another kubectl-nodestate would shadow
	// (and make `kubectl plugin list` warn about) the one under test.
	path := []string{pluginDir(), cp.toolsBin}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "kubectl-nodestate")); err == nil || d == "" {
			continue
		}
		path = append(path, d)
	}
	env = append(env,
		"KUBECONFIG="+cp.kubeconfig,
		"HOME="+home,
		"PATH="+strings.Join(path, string(os.PathListSeparator)),
	)
	return append(env, extra...)
}

// Run runs bin with args and env (nil = Env(t)), with a timeout (0 = 3 min).
// It never fails t by itself: check the Result.
func Run(t testing.TB, timeout time.Duration, env []string, bin string, args ...string) Result {
	t.Helper()
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	if env == nil {
		env = Env(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err, Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		r.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		r.Err = fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	t.Logf("ran %s %s: exit %d in %s", filepath.Base(bin), strings.Join(args, " "), r.ExitCode, r.Duration.Round(time.Millisecond))
	return r
}

// RunKubectl runs the pinned kubectl with Env(t). `RunKubectl(t, "nodestate", ...)`
// goes through kubectl's plugin discovery (and builds the plugin first).
func RunKubectl(t testing.TB, args ...string) Result {
	t.Helper()
	if len(args) > 0 && args[0] == "nodestate" {
		PluginBin(t)
	}
	return Run(t, 0, nil, KubectlBin(), args...)
}

// RunPlugin runs the kubectl-nodestate binary directly with Env(t).
func RunPlugin(t testing.TB, args ...string) Result {
	t.Helper()
	return Run(t, 0, nil, PluginBin(t), args...)
}

// ---------------------------------------------------------------- namespaces

// NewNamespace creates a fresh namespace "e2e-<random>" with its "default"
// ServiceAccount (no controller-manager runs) and extra labels, and returns
// its name. Namespaces are not deleted (a deleted one would stay Terminating
// forever without the namespace controller); the cluster is per test binary.
func NewNamespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	ns, err := cp.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if err := ensureDefaultServiceAccount(ctx, cp.client, ns.Name); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// EnforcePodSecurity labels ns pod-security.kubernetes.io/enforce=level
// ("privileged", "baseline" or "restricted"), so PodSecurity admission
// rejects e.g. hostPath pods under baseline.
func EnforcePodSecurity(t testing.TB, ns, level string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":%q,"pod-security.kubernetes.io/enforce-version":"latest"}}}`, level)
	if _, err := cp.client.CoreV1().Namespaces().Patch(ctxFor(t, 30*time.Second), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label namespace %s: %v", ns, err)
	}
}

// ---------------------------------------------------------------- nodes

// TestID is a short id unique to t (a hash of t.Name()), the value of
// TestLabel on the nodes the test creates.
func TestID(t testing.TB) string {
	sum := sha256.Sum256([]byte(t.Name()))
	return hex.EncodeToString(sum[:])[:10]
}

// TestSelector is the label selector "nodestate-e2e/test=<TestID>" that
// matches exactly the nodes made by CreateNode in this test.
func TestSelector(t testing.TB) string { return TestLabel + "=" + TestID(t) }

// KubeletDir makes a temp dir holding files (relative path -> content),
// for use as a node's simulated kubelet root dir.
func KubeletDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// CreateNode creates a kwok-managed Node that becomes Ready, and waits for
// it. kubeletVersion goes to status.nodeInfo.kubeletVersion; kubeletDir is
// the host dir where exec in the plugin's pods on this node runs ("" = an
// empty temp dir). The node is deleted (with any pods bound to it) when the
// test ends.
func CreateNode(t testing.TB, name, kubeletVersion string, labels map[string]string, kubeletDir string) *corev1.Node {
	t.Helper()
	return CreateNodeWith(t, name, NodeOptions{KubeletVersion: kubeletVersion, Labels: labels, KubeletDir: kubeletDir})
}

// CreateNodeWith is CreateNode with the failure knobs of NodeOptions. It
// waits for Ready unless o.NotReady.
func CreateNodeWith(t testing.TB, name string, o NodeOptions) *corev1.Node {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	if o.KubeletDir == "" {
		o.KubeletDir = t.TempDir()
	}
	node, err := createNode(ctx, TestID(t), name, o)
	if err != nil {
		t.Fatal(err)
	}
	kubeDirs.Store(name, o.KubeletDir)
	t.Cleanup(func() { deleteNode(t, name) })
	if o.NotReady {
		return node
	}
	node, err = waitNodeReady(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// CreateNodes creates the named nodes concurrently (opts may be nil, or
// give each node's options), waits until all the Ready-able ones are Ready
// and returns them in order. For scale tests: 1,000 nodes take seconds.
func CreateNodes(t testing.TB, names []string, opts func(name string) NodeOptions) []*corev1.Node {
	t.Helper()
	ctx := ctxFor(t, 5*time.Minute)
	id := TestID(t)
	out := make([]*corev1.Node, len(names))
	errs := make([]error, len(names))
	want := map[string]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, name := range names {
		var o NodeOptions
		if opts != nil {
			o = opts(name)
		}
		if o.KubeletDir == "" {
			o.KubeletDir = t.TempDir()
		}
		if !o.NotReady {
			want[name] = true
		}
		kubeDirs.Store(name, o.KubeletDir)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = createNode(ctx, id, name, o)
		}()
	}
	wg.Wait()
	t.Cleanup(func() { deleteNodes(t, names) })
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ready := map[string]*corev1.Node{}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: TestSelector(t)})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			n := &list.Items[i]
			if want[n.Name] && nodeReady(n) {
				ready[n.Name] = n
			}
		}
		return len(ready) == len(want), nil
	})
	if err != nil {
		t.Fatalf("%d of %d nodes Ready: %v", len(ready), len(want), err)
	}
	for i, name := range names {
		if n, ok := ready[name]; ok {
			out[i] = n
		}
	}
	return out
}

func createNode(ctx context.Context, testID, name string, o NodeOptions) (*corev1.Node, error) {
	wantPrefix := map[PodFate]string{PodsPending: PrefixPodsPending, PodsImagePullBackOff: PrefixPodsImagePull, PodsFail: PrefixPodsFail}[o.Pods]
	for _, p := range []string{PrefixPodsPending, PrefixPodsImagePull, PrefixPodsFail} {
		if strings.HasPrefix(name, p) && p != wantPrefix {
			return nil, fmt.Errorf("node name %q has the reserved prefix %q but Pods=%d", name, p, o.Pods)
		}
	}
	if wantPrefix != "" && !strings.HasPrefix(name, wantPrefix) {
		return nil, fmt.Errorf("node name %q must start with %q for Pods=%d", name, wantPrefix, o.Pods)
	}
	if o.KubeletVersion == "" {
		o.KubeletVersion = kubeVersion
	}
	labels := map[string]string{
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"kubernetes.io/hostname": name,
		"type":                   "kwok",
		TestLabel:                testID,
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	annotations := map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0", KubeletDirAnnotation: o.KubeletDir}
	if o.NotReady {
		annotations[kwokNodeAnnotation] = "e2e-unmanaged"
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  o.KubeletVersion,
				OperatingSystem: "linux",
				Architecture:    "amd64",
			},
		},
	}
	if o.NotReady {
		node.Spec.Taints = unreachableTaints()
	}
	created, err := cp.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	if o.NotReady {
		return setNotReadyStatus(ctx, created)
	}
	return created, nil
}

func unreachableTaints() []corev1.Taint {
	now := metav1.Now()
	return []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
	}
}

func setNotReadyStatus(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	now := metav1.Now()
	msg := "Kubelet stopped posting node status."
	node = node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: msg, LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: msg, LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: msg, LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: msg, LastHeartbeatTime: now, LastTransitionTime: now},
	}
	if len(node.Status.Addresses) == 0 {
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: node.Name}}
	}
	updated, err := cp.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("set node %s NotReady: %w", node.Name, err)
	}
	return updated, nil
}

// SetNodeNotReady turns an existing node NotReady the way a dead kubelet
// looks: Ready and the pressure conditions Unknown, the unreachable taints
// added, and kwok no longer manages it, so pods created on it afterwards
// stay Pending (pods already on it keep their status). kwok ignores an
// annotation change (it only forgets a node on a delete event that still
// matches its selector), so the node is deleted and re-created with the same
// name, labels, spec and nodeInfo (its UID changes).
func SetNodeNotReady(t testing.TB, name string) *corev1.Node {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	nodes := cp.client.CoreV1().Nodes()
	old, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("SetNodeNotReady %s: %v", name, err)
	}
	uid := old.UID
	if err := nodes.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("SetNodeNotReady %s: delete: %v", name, err)
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := nodes.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("SetNodeNotReady %s: still there after delete: %v", name, err)
	}
	// Let kwok see the delete before the node reappears (and pods land on it).
	time.Sleep(300 * time.Millisecond)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: old.Labels, Annotations: old.Annotations},
		Spec:       *old.Spec.DeepCopy(),
		Status:     corev1.NodeStatus{NodeInfo: old.Status.NodeInfo, Addresses: old.Status.Addresses, Capacity: old.Status.Capacity, Allocatable: old.Status.Allocatable, DaemonEndpoints: old.Status.DaemonEndpoints},
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[kwokNodeAnnotation] = "e2e-unmanaged"
	node.Spec.Taints = append(node.Spec.Taints, unreachableTaints()...)
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SetNodeNotReady %s: re-create: %v", name, err)
	}
	out, err := setNotReadyStatus(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitNodeReady(ctx context.Context, name string) (*corev1.Node, error) {
	var node *corev1.Node
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := cp.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		return nodeReady(n), nil
	})
	if err != nil {
		return nil, fmt.Errorf("node %s not Ready: %w", name, err)
	}
	return node, nil
}

func deleteNode(t testing.TB, name string) { deleteNodes(t, []string{name}) }

// deleteNodes force-deletes the pods bound to the nodes, then the nodes.
func deleteNodes(t testing.TB, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var pods []corev1.Pod
	if len(names) == 1 {
		list, err := cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", names[0]).String()})
		if err == nil {
			pods = list.Items
		}
	} else if list, err := cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			if want[p.Spec.NodeName] {
				pods = append(pods, p)
			}
		}
	}
	zero := int64(0)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_ = cp.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}()
	}
	wg.Wait()
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := cp.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("delete node %s: %w", name, err)
			}
			kubeDirs.Delete(name)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// ---------------------------------------------------------------- pods

// ManagedPods lists the pods labelled app.kubernetes.io/managed-by=kubectl-nodestate
// in ns ("" = all namespaces), including terminating ones.
func ManagedPods(t testing.TB, ns string) []corev1.Pod {
	t.Helper()
	list, err := cp.client.CoreV1().Pods(ns).List(ctxFor(t, 30*time.Second), metav1.ListOptions{LabelSelector: ManagedBySelector})
	if err != nil {
		t.Fatalf("list managed pods: %v", err)
	}
	return list.Items
}

// CountManagedPods counts the plugin's pods in ns ("" = all namespaces)
// that are not being deleted, i.e. the ones the plugin left behind. (A pod
// on a NotReady node stays Terminating after its deletion, as with a dead
// kubelet; it is not counted.)
func CountManagedPods(t testing.TB, ns string) int {
	t.Helper()
	n := 0
	for _, p := range ManagedPods(t, ns) {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// WaitNoManagedPods waits until CountManagedPods(ns) is 0 and fails t
// after timeout, listing the pods left.
func WaitNoManagedPods(t testing.TB, ns string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if CountManagedPods(t, ns) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range ManagedPods(t, ns) {
				names = append(names, fmt.Sprintf("%s/%s(node %s, %s)", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase))
			}
			t.Fatalf("managed pods left after %s: %s", timeout, strings.Join(names, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DebugPod returns the plugin's own debug pod for nodeName (fetch.GenerateDebugPod, with the
// default image and kubelet root dir), named name instead of a random name. For smoke tests of
// the path: what the plugin creates, made without running the plugin.
func DebugPod(ns, name, nodeName string) *corev1.Pod {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	pod := fetch.GenerateDebugPod(node, fetch.Options{Namespace: ns})
	pod.Name = name
	return pod
}

// WaitPod watches pod ns/name until cond returns true (or an error) and
// returns it; fails t after timeout.
func WaitPod(t testing.TB, ns, name string, timeout time.Duration, cond func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	ctx := ctxFor(t, timeout)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	pods := cp.client.CoreV1().Pods(ns)
	var last *corev1.Pod
	fail := func(err error) {
		t.Helper()
		state := "never seen"
		if last != nil {
			state = fmt.Sprintf("phase %s, status %+v", last.Status.Phase, last.Status)
		}
		t.Fatalf("waiting for pod %s/%s: %v (%s)", ns, name, err, state)
	}
	for {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			fail(err)
		}
		if len(list.Items) == 1 {
			last = &list.Items[0]
			if ok, err := cond(last); err != nil {
				fail(err)
			} else if ok {
				return last
			}
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			fail(err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break // relist
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				w.Stop()
				fail(errors.New("pod deleted"))
			}
			last = p
			if ok, err := cond(p); err != nil || ok {
				w.Stop()
				if err != nil {
					fail(err)
				}
				return p
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			fail(ctx.Err())
		}
	}
}

// WaitPodRunning waits for phase Running.
func WaitPodRunning(t testing.TB, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	return WaitPod(t, ns, name, timeout, func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod ended in phase %s", p.Status.Phase)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
}

// WaitPodGone waits until pod ns/name no longer exists.
func WaitPodGone(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := cp.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("pod %s/%s still there: %v", ns, name, err)
	}
}

// ExecInPod runs cmd in container of pod ns/name through the apiserver with the plugin's own
// exec (fetch.RemoteExec: WebSocket, falling back to SPDY). Under kwok it runs on the host in
// the node's kubelet dir. Note: a non-zero exit comes back as a generic error (the exit code is
// lost), and stdin is not supported by the harness (kwok never delivers EOF).
func ExecInPod(ctx context.Context, ns, name, container string, cmd []string) (stdout, stderr []byte, err error) {
	var o, e bytes.Buffer
	err = fetch.RemoteExec(cp.client, RESTConfig())(ctx, ns, name, container, cmd, &o, &e)
	return o.Bytes(), e.Bytes(), err
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
