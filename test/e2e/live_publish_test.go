//go:build e2e

package e2e

// Nodes publish their state (node-publish, deploy/publish): the publisher runs as a process
// with a kubeconfig whose token is bound to a pod on its node, as the DaemonSet's is, and
// writes through the shipped RBAC and own-node policy; admit --from-published answers from
// what it wrote as admit answers through a debug pod.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/cpuset"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

const publisherSA = "nodestate-publish"

// applyPublishDeploy applies deploy/publish's RBAC and policy and the NodeResourceTopology CRD,
// as an admin would (kubectl apply), and waits for the CRD to be served.
func applyPublishDeploy(t *testing.T) {
	t.Helper()
	dir := filepath.Join(cp.repoRoot, "deploy", "publish")
	for _, f := range []string{"rbac.yaml", "policy.yaml", "noderesourcetopology-crd.yaml"} {
		if r := RunKubectl(t, "apply", "-f", filepath.Join(dir, f)); r.ExitCode != 0 {
			t.Fatalf("kubectl apply -f %s: %s", f, r)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := Client().Discovery().ServerResourcesForGroupVersion(nodestatelib.NRTResource.GroupVersion().String())
		if err == nil && len(list.APIResources) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NodeResourceTopology CRD is not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// publisherKubeconfig is a kubeconfig for the publisher's ServiceAccount with a token bound to
// a pod on node, as the DaemonSet's pod gets (its node-name extra is the node's).
func publisherKubeconfig(t *testing.T, node string) string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "publish-" + node, Namespace: nodestatelib.PublishedNamespace},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: publisherSA, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "publish", Image: "registry.k8s.io/pause:3.10"}}}}
	created, err := Client().CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Client().CoreV1().Pods(pod.Namespace).Delete(ctxFor(t, 30*time.Second), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	tr, err := Client().CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, publisherSA, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: created.Name, UID: created.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := RESTConfig()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["publisher"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "publisher"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "publisher.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// sysTree writes m as sysfs and procfs show it (the files machine.SysfsScript reads), under
// dir/sys and dir/proc.
func sysTree(t *testing.T, m *machine.Machine) (sys, proc string) {
	t.Helper()
	dir := t.TempDir()
	sys, proc = filepath.Join(dir, "sys"), filepath.Join(dir, "proc")
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	system := filepath.Join(sys, "devices", "system")
	write(filepath.Join(system, "cpu", "online"), m.Online().String())
	var total uint64
	for _, c := range m.CPUs {
		write(filepath.Join(system, "cpu", fmt.Sprintf("cpu%d", c.ID), "topology", "core_id"), fmt.Sprint(c.Core))
		write(filepath.Join(system, "cpu", fmt.Sprintf("cpu%d", c.ID), "topology", "physical_package_id"), fmt.Sprint(c.Socket))
	}
	for _, n := range m.NUMA {
		var ids []int
		for _, c := range m.CPUs {
			if c.NUMA == n.ID {
				ids = append(ids, c.ID)
			}
		}
		node := filepath.Join(system, "node", fmt.Sprintf("node%d", n.ID))
		write(filepath.Join(node, "cpulist"), cpuset.New(ids...).String())
		write(filepath.Join(node, "meminfo"), fmt.Sprintf("Node %d MemTotal:       %d kB", n.ID, n.Memory/1024))
		if len(n.Distances) > 0 {
			write(filepath.Join(node, "distance"), strings.Trim(fmt.Sprint(n.Distances), "[]"))
		}
		for _, h := range n.HugePages {
			write(filepath.Join(node, "hugepages", fmt.Sprintf("hugepages-%dkB", h.PageSizeKiB), "nr_hugepages"), fmt.Sprint(h.NumPages))
		}
		total += n.Memory
	}
	write(filepath.Join(proc, "meminfo"), fmt.Sprintf("MemTotal:       %d kB", total/1024))
	return sys, proc
}

func publishedConfigMap(t *testing.T, node string) *corev1.ConfigMap {
	t.Helper()
	cm, err := Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).Get(ctxFor(t, 30*time.Second), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// waitConfigMap waits until node's published ConfigMap satisfies ok.
func waitConfigMap(t *testing.T, node string, timeout time.Duration, ok func(*corev1.ConfigMap) bool) *corev1.ConfigMap {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		cm, err := Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).Get(ctxFor(t, 30*time.Second), node, metav1.GetOptions{})
		if err == nil && ok(cm) {
			return cm
		}
		if time.Now().After(deadline) {
			t.Fatalf("ConfigMap %s: not as waited for after %s (%v)", node, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPublishPolicy waits until the own-node policy refuses the publisher of kubeconfig a write
// of node's ConfigMap (a dry run): an admission policy bites a moment after it is created.
func waitPublishPolicy(t *testing.T, kubeconfig, node string) {
	t.Helper()
	client := clientFor(t, kubeconfig)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: nodestatelib.PublishedNamespace}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctxFor(t, 30*time.Second), cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "nodestate-publish-own-node") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the own-node policy never refused a write of node %s's ConfigMap: %v", node, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestLivePublish(t *testing.T) {
	applyPublishDeploy(t)
	kubeletDir, sys, proc := exampleNode(t)
	exampleDir := filepath.Join(cp.repoRoot, "examples", "admit-node")
	const node, other = "live-publish-a", "live-publish-b"
	selector := TestSelector(t)
	nodeObj := CreateNode(t, node, "v1.37.1", nil, kubeletDir)
	CreateNode(t, other, "v1.37.1", nil, KubeletDir(t, nil))
	kubeconfig := publisherKubeconfig(t, node)
	waitPublishPolicy(t, kubeconfig, other)
	publish := func(nodeName string, extra ...string) []string {
		return append([]string{"node-publish", "--kubeconfig", kubeconfig, "--node", nodeName, "--kubelet-root-dir", kubeletDir,
			"--sys-root", sys, "--proc-root", proc, "--kubelet-version", "v1.37.1"}, extra...)
	}

	t.Run("publishes its own node", func(t *testing.T) {
		r := RunPlugin(t, publish(node, "--once")...)
		if r.ExitCode != 0 {
			t.Fatalf("node-publish --once: %s", r)
		}
		cm := publishedConfigMap(t, node)
		s, err := nodestatelib.PublishedStateOf(cm)
		if err != nil {
			t.Fatal(err)
		}
		if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].UID != nodeObj.UID || cm.Annotations[nodestatelib.FingerprintAnnotation] != s.Fingerprint() {
			t.Errorf("owner %+v, annotations %v", refs, cm.Annotations)
		}
		if p := nodestatelib.PreparePublished(s, nodeObj, nil); p.Err != nil {
			t.Errorf("the published state does not replay: %v", p.Err)
		}
		dyn, err := dynamic.NewForConfig(RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		nrt, err := dyn.Resource(nodestatelib.NRTResource).Get(ctxFor(t, 30*time.Second), node, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("NodeResourceTopology: %v", err)
		}
		if zones, _, _ := unstructured.NestedSlice(nrt.Object, "zones"); len(zones) != 2 {
			t.Errorf("NodeResourceTopology zones %v", zones)
		}
	})

	t.Run("the policy refuses another node's objects", func(t *testing.T) {
		r := RunPlugin(t, publish(other, "--once", "--no-topology")...)
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, "nodestate-publish-own-node") || !strings.Contains(r.Stderr, "node "+node+" may write only the objects named after it, not "+other) {
			t.Fatalf("publishing node %s with node %s's token: %s", other, node, r)
		}
		if _, err := Client().CoreV1().ConfigMaps(nodestatelib.PublishedNamespace).Get(ctxFor(t, 30*time.Second), other, metav1.GetOptions{}); err == nil {
			t.Errorf("node %s's ConfigMap was written", other)
		}
	})

	t.Run("republishes on a change, and only then", func(t *testing.T) {
		before := publishedConfigMap(t, node)
		p := StartPlugin(t, nil, publish(node, "--debounce", "200ms", "--refresh", "1h")...)
		// The start is a refresh: written at once, same content.
		started := waitConfigMap(t, node, 60*time.Second, func(cm *corev1.ConfigMap) bool { return cm.ResourceVersion != before.ResourceVersion })
		if started.Annotations[nodestatelib.FingerprintAnnotation] != before.Annotations[nodestatelib.FingerprintAnnotation] {
			t.Errorf("the same files published another fingerprint")
		}
		// Rewritten with the same bytes (the kubelet's write: a temp file, a rename): no write.
		cpu := filepath.Join(kubeletDir, "cpu_manager_state")
		rewrite := func(content string) {
			tmp := cpu + ".tmp"
			if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, cpu); err != nil {
				t.Fatal(err)
			}
		}
		original, err := os.ReadFile(cpu)
		if err != nil {
			t.Fatal(err)
		}
		rewrite(string(original))
		time.Sleep(3 * time.Second) // fifteen debounces
		if cm := publishedConfigMap(t, node); cm.ResourceVersion != started.ResourceVersion {
			t.Errorf("unchanged files were written again")
		}
		// A pod's CPUs released: published within the debounce.
		rewrite(strings.Replace(string(original), `"1,17"`, `"1,17" `, 1))
		changed := waitConfigMap(t, node, 60*time.Second, func(cm *corev1.ConfigMap) bool { return cm.ResourceVersion != started.ResourceVersion })
		if changed.Annotations[nodestatelib.FingerprintAnnotation] == started.Annotations[nodestatelib.FingerprintAnnotation] {
			t.Errorf("a changed file kept the fingerprint")
		}
		rewrite(string(original))
		waitConfigMap(t, node, 60*time.Second, func(cm *corev1.ConfigMap) bool {
			return cm.Annotations[nodestatelib.FingerprintAnnotation] == before.Annotations[nodestatelib.FingerprintAnnotation]
		})
		p.Signal(t, os.Interrupt)
		if r := p.Wait(t, 30*time.Second); r.ExitCode != 0 {
			t.Errorf("node-publish on SIGINT: %s", r)
		}
	})

	t.Run("admit --from-published answers as a debug pod's read", func(t *testing.T) {
		pods := []string{}
		for _, f := range []string{"pod-db.yaml", "pod-wide.yaml", "pod-odd.yaml"} {
			pods = append(pods, "-f", filepath.Join(exampleDir, f))
		}
		ns := NewNamespace(t, nil)
		read := RunPlugin(t, append([]string{"admit", node, "-n", ns, "--machine", filepath.Join(exampleDir, "machine.json"), "-o", "json"}, pods...)...)
		published := RunPlugin(t, append([]string{"admit", node, "--from-published", "-o", "json"}, pods...)...)
		admissions := func(r Result) json.RawMessage {
			t.Helper()
			var out struct {
				Admissions json.RawMessage `json:"admissions"`
				Source     *nodestatelib.Provenance
			}
			if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || len(out.Admissions) == 0 {
				t.Fatalf("%v: %s", err, r)
			}
			return out.Admissions
		}
		a, b := admissions(read), admissions(published)
		var x, y any
		_ = json.Unmarshal(a, &x)
		_ = json.Unmarshal(b, &y)
		if !reflect.DeepEqual(x, y) {
			t.Errorf("through a debug pod:\n%s\nfrom the published state:\n%s", a, b)
		}
		if read.ExitCode != 1 || published.ExitCode != 1 {
			t.Errorf("exit %d and %d, want 1 (pods refused)", read.ExitCode, published.ExitCode)
		}
		if !strings.Contains(published.Stdout, `"from":"published"`) && !strings.Contains(published.Stdout, `"from": "published"`) {
			t.Errorf("no provenance: %s", published.Stdout)
		}
		// A node that publishes nothing says so.
		none := RunPlugin(t, append([]string{"admit", other, "--from-published"}, pods...)...)
		if none.ExitCode != 2 || !strings.Contains(none.Stdout+none.Stderr, "no published state") {
			t.Errorf("a node without a state: %s", none)
		}
	})

	// The fleet read lists no pods unless they decide a node's answer: admit-node's checkpoints
	// hold CPUs 1 and 17 for pod uid-seed-a, which the API server does not have. Once a pod of
	// 16 CPUs fills NUMA node 1, one of 14 fits on node 0 only with uid-seed-a's CPUs freed, as
	// the kubelet frees a gone pod's: counting every owner running, the fleet would refuse it.
	t.Run("admit --all-nodes --from-published lists the pods that decide", func(t *testing.T) {
		pods := guaranteedPodFiles(t, "16", "14")
		named := RunPlugin(t, append([]string{"admit", node, "--from-published", "-o", "json"}, pods...)...)
		fleet := RunPlugin(t, append([]string{"admit", "--all-nodes", "-l", selector, "--from-published", "-o", "json"}, pods...)...)
		var one struct {
			Admissions json.RawMessage `json:"admissions"`
		}
		var all struct {
			Items []struct {
				Node       string          `json:"node"`
				Admissions json.RawMessage `json:"admissions"`
			} `json:"items"`
		}
		var verdicts []struct{ Admitted bool }
		if err := json.Unmarshal([]byte(named.Stdout), &one); err != nil || json.Unmarshal(one.Admissions, &verdicts) != nil ||
			len(verdicts) != 2 || !verdicts[1].Admitted || named.ExitCode != 0 {
			t.Fatalf("%v: node %s named: %s", err, node, named)
		}
		if err := json.Unmarshal([]byte(fleet.Stdout), &all); err != nil || len(all.Items) != 2 || fleet.ExitCode != 2 {
			t.Fatalf("%v: the fleet (and %s, which publishes nothing): %s", err, other, fleet)
		}
		var want any
		_ = json.Unmarshal(one.Admissions, &want)
		for _, it := range all.Items {
			var got any
			_ = json.Unmarshal(it.Admissions, &got)
			if it.Node == node && !reflect.DeepEqual(got, want) {
				t.Errorf("node %s in the fleet:\n%s\nnamed:\n%s", node, it.Admissions, one.Admissions)
			}
		}
	})
}

// guaranteedPodFiles writes a Guaranteed pod (one container, 4Gi) per CPU count, pod-0, pod-1 ...,
// and returns them as -f arguments, in order.
func guaranteedPodFiles(t *testing.T, cpus ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for i, n := range cpus {
		f := filepath.Join(dir, fmt.Sprintf("pod-%d.yaml", i))
		pod := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d}\nspec:\n  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.10\n"+
			"    resources: {requests: {cpu: %q, memory: 4Gi}, limits: {cpu: %q, memory: 4Gi}}\n", i, n, n)
		if err := os.WriteFile(f, []byte(pod), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", f)
	}
	return args
}
