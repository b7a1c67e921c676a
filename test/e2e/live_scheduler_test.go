//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	nsstate "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// schedulerBin is kube-scheduler with NodeStateAdmission as make e2e-scheduler builds it from
// this tree (NODESTATE_SCHEDULER). The tools cache's last build is not taken: it may be another
// tree's, and a stale plugin fails these tests for nothing this tree did.
func schedulerBin(t *testing.T) string {
	bin := os.Getenv("NODESTATE_SCHEDULER")
	if bin == "" {
		t.Skip("NODESTATE_SCHEDULER unset: make e2e-scheduler builds the nodestate-scheduler from this tree and runs these tests")
	}
	return bin
}

// TestLiveScheduler runs the nodestate-scheduler (kube-scheduler v1.37.2 with NodeStateAdmission,
// deploy/scheduler's profile and RBAC, as its ServiceAccount) against the real apiserver, over
// kwok nodes whose published states are examples/admit-node's machine (a real kubelet
// v1.37.1's): sched-a with its checkpoints under restricted, sched-b fresh under best-effort
// (group one), sched-c fresh under restricted (group two).
//   - a pod the replay refuses on every node (3 CPUs: full-pcpus-only) stays Pending with the
//     kubelet's reason in its PodScheduled condition;
//   - one that only sched-b admits (18 CPUs: no NUMA node of sched-a has them) binds there;
//   - two pods of 16 CPUs, each fitting sched-c alone (one NUMA node's worth) but not together,
//     do not both bind: the first's reservation counts for the second;
//   - a pod of 18 CPUs refused on sched-d (group three: sched-a's state) binds there soon after
//     sched-d republishes a state that admits it (a fresh machine under best-effort): the plugin
//     activates it; without that, no event the scheduler watches would retry it before the
//     unschedulable pods' flush (5 minutes).
func TestLiveScheduler(t *testing.T) {
	bin := schedulerBin(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 3*time.Minute)
	client := Client()

	config := nodestateSchedulerConfig(t, ctx, "scheduler-config.yaml")

	// The nodes and their published states.
	const group = "nodestate-e2e/scheduler-group"
	example := publishedtest.Example{Root: root}
	now := time.Now()
	for _, n := range []struct {
		name, group, policy string
		loaded              bool
	}{{"sched-a", "one", "restricted", true}, {"sched-b", "one", "best-effort", false}, {"sched-c", "two", "restricted", false}, {"sched-d", "three", "restricted", true}} {
		CreateNodeWith(t, n.name, NodeOptions{Labels: map[string]string{group: n.group}})
		cm := publishedtest.ConfigMap(t, example.State(t, n.name, n.loaded, n.policy, now), nsstate.PublishedNamespace)
		if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		})
	}

	started := time.Now()
	startNodestateScheduler(t, "nodestate-scheduler", bin, config)

	ns := NewNamespace(t, nil)
	create := func(name, cpu, inGroup string) {
		t.Helper()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, schedulerPod(t, ns, name, cpu, "2Gi", map[string]string{group: inGroup}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unschedulable := func(p *corev1.Pod) string {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return c.Message
			}
		}
		return ""
	}

	create("wide-18", "18", "one")
	create("odd-3", "3", "one")
	create("first-16", "16", "two")
	create("second-16", "16", "two")
	create("waits-18", "18", "three")

	wide := WaitPod(t, ns, "wide-18", 2*time.Minute, func(p *corev1.Pod) (bool, error) { return p.Spec.NodeName != "", nil })
	t.Logf("wide-18 bound to %s %s after the scheduler's start", wide.Spec.NodeName, time.Since(started).Round(time.Millisecond))
	if wide.Spec.NodeName != "sched-b" {
		t.Errorf("wide-18 bound to %s, want sched-b (sched-a's kubelet refuses it: TopologyAffinityError)", wide.Spec.NodeName)
	}
	odd := WaitPod(t, ns, "odd-3", time.Minute, func(p *corev1.Pod) (bool, error) {
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("odd-3 bound to %s", p.Spec.NodeName)
		}
		return unschedulable(p) != "", nil
	})
	if msg := unschedulable(odd); !strings.Contains(msg, "SMTAlignmentError: SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2") {
		t.Errorf("odd-3's PodScheduled message: %q, want the kubelet's SMTAlignmentError", msg)
	} else {
		t.Logf("odd-3 Pending: %s", msg)
	}

	// Exactly one 16-CPU pod on sched-c; the other Pending behind its reservation.
	var bound, pending string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && (bound == "" || pending == "") {
		bound, pending = "", ""
		for _, name := range []string{"first-16", "second-16"} {
			p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case p.Spec.NodeName != "":
				if bound != "" {
					t.Fatalf("both 16-CPU pods bound (%s, and %s to %s): the reservation did not count", bound, name, p.Spec.NodeName)
				}
				bound = name
			case strings.Contains(unschedulable(p), "TopologyAffinityError"):
				pending = name + ": " + unschedulable(p)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if bound == "" || pending == "" || !strings.Contains(pending, "after 1 pod(s) bound here and not yet reported by the node") {
		t.Fatalf("16-CPU pods: bound %q, pending %q", bound, pending)
	}
	t.Logf("%s bound to sched-c; %s", bound, pending)

	// Requeue on republish.
	waits := WaitPod(t, ns, "waits-18", time.Minute, func(p *corev1.Pod) (bool, error) {
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("waits-18 bound to %s before sched-d republished", p.Spec.NodeName)
		}
		return strings.Contains(unschedulable(p), "TopologyAffinityError"), nil
	})
	t.Logf("waits-18 Pending: %s", unschedulable(waits))
	cm, err := client.CoreV1().ConfigMaps(nsstate.PublishedNamespace).Get(ctx, "sched-d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admitting := publishedtest.ConfigMap(t, example.State(t, "sched-d", false, "best-effort", time.Now()), nsstate.PublishedNamespace)
	cm.Annotations, cm.Data, cm.BinaryData = admitting.Annotations, admitting.Data, admitting.BinaryData
	republished := time.Now()
	if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waits = WaitPod(t, ns, "waits-18", 30*time.Second, func(p *corev1.Pod) (bool, error) { return p.Spec.NodeName != "", nil })
	t.Logf("waits-18 bound to %s %s after sched-d republished", waits.Spec.NodeName, time.Since(republished).Round(time.Millisecond))
	if waits.Spec.NodeName != "sched-d" {
		t.Errorf("waits-18 bound to %s, want sched-d", waits.Spec.NodeName)
	}
}

// nodestateSchedulerConfig applies the shipped RBAC (rbac.yaml, and the files extraRBAC names
// under deploy/scheduler), creates the publish namespace, and writes the shipped profile
// (deploy/scheduler/PROFILE) with a kubeconfig of the scheduler's ServiceAccount: its path.
func nodestateSchedulerConfig(t *testing.T, ctx context.Context, profile string, extraRBAC ...string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	client := Client()
	// The shipped RBAC, the publish namespace, and a token of the scheduler's ServiceAccount.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsstate.PublishedNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, file := range append([]string{"rbac.yaml"}, extraRBAC...) {
		rbac := filepath.Join(root, "deploy", "scheduler", file)
		if r := RunKubectl(t, "apply", "-f", rbac); r.ExitCode != 0 {
			t.Fatalf("kubectl apply -f deploy/scheduler/%s: %s", file, r)
		}
		t.Cleanup(func() { RunKubectl(t, "delete", "--ignore-not-found", "-f", rbac) })
	}
	token, err := client.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "nodestate-scheduler",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	rc := RESTConfig()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData, CertificateAuthority: rc.CAFile}
	kc.AuthInfos["nodestate-scheduler"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "nodestate-scheduler"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(root, "deploy", "scheduler", profile))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(config, append(shipped, []byte("clientConnection:\n  kubeconfig: "+kubeconfig+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}

	return config
}

func ptrTo[T any](v T) *T { return &v }

// startNodestateScheduler runs bin with config on the e2e control plane, stopped (its log's tail
// shown when the test failed) at the test's end.
func startNodestateScheduler(t *testing.T, name, bin, config string) *proc {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := cp.start(name, bin, "--config="+config, "--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]), "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sched.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("kube-scheduler log (tail):\n%s", tail(sched.logPath, 40))
		}
	})
	return sched
}

// schedulerPod is a Guaranteed one-container pod for the nodestate-scheduler, kept to the test's
// nodes with labels.
func schedulerPod(t *testing.T, ns, name, cpu, memory string, labels map[string]string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	selector := map[string]string{TestLabel: TestID(t)}
	maps.Copy(selector, labels)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		SchedulerName: "nodestate-scheduler",
		NodeSelector:  selector,
		// No controller manager here lifts the not-ready taint the API server puts on a new node.
		Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
}
