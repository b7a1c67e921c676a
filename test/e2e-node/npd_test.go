//go:build e2enode

package e2enode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// npdInterval is the test's invoke_interval (deploy/npd's is 30 s): short, so that one interval
// is measured in seconds.
const npdInterval = 5 * time.Second

// The test node's paths as the NPD container sees them, where deploy/npd's defaults (a kubeadm
// node) differ: the kubelet's config is not config.yaml in its root dir.
const npdKubeletConfig = "/host/kubelet-config.yaml"

// npdMonitor is what the test reads of deploy/npd/nodestate-monitor.json (NPD's
// CustomPluginConfig): which condition each rule sets, with which reason, and each condition's
// default (the False state).
type npdMonitor struct {
	PluginConfig struct {
		Timeout string `json:"timeout"`
	} `json:"pluginConfig"`
	Conditions []struct {
		Type, Reason, Message string
	} `json:"conditions"`
	Rules []struct {
		Condition string   `json:"condition"`
		Reason    string   `json:"reason"`
		Path      string   `json:"path"`
		Args      []string `json:"args"`
	} `json:"rules"`
}

// npdDeployment is deploy/npd as applied to this node: its objects and the monitor config the
// test runs it with.
type npdDeployment struct {
	namespace      *corev1.Namespace
	serviceAccount *corev1.ServiceAccount
	binding        *rbacv1.ClusterRoleBinding
	daemonSet      *appsv1.DaemonSet
	monitorJSON    []byte
	monitor        npdMonitor
}

// TestNodeProblemDetector runs the Node Problem Detector, built from its Go module at the
// pinned version, with deploy/npd's pod and our plugin image on the real node against the real
// kube-apiserver, plants three faults one after another (a cgroup cpuset drift, a torn
// checkpoint, a kubelet config the kubelet would refuse) and expects each one's node condition
// True with the monitor's reason and the plugin's line within one interval, and False again once
// mended. The time each took is logged.
//
// deploy/npd's DaemonSet object is validated by the API server (a server-side dry run), and its
// pod template runs as the DaemonSet controller would make it for this node: this node has no
// kube-controller-manager or kube-scheduler (docs/npd.md says why).
func TestNodeProblemDetector(t *testing.T) {
	images := importNPDImages(t)
	d := readNPDDeployment(t)

	// The Guaranteed pod whose cpuset the first fault rewrites: it takes the node's one
	// allocatable CPU, exclusively.
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(podMemory)}
	g := pod("npd-guaranteed", guaranteed, guaranteed)
	createPod(t, g)
	g = waitPod(t, g.Name, running)
	assigned := cgroupCPUs(t, g, "cpuset.cpus")

	npd := runNPD(t, d, images)
	reasons := map[string]string{}
	for _, r := range d.monitor.Rules {
		reasons[r.Condition] = r.Reason
	}
	defaults := map[string]string{}
	for _, c := range d.monitor.Conditions {
		defaults[c.Type] = c.Reason
	}
	timeout, err := time.ParseDuration(d.monitor.PluginConfig.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	// One interval after a fault is planted, the next run sees it; NPD's Kubernetes exporter
	// writes a changed condition within its 1 s sync; the run itself takes at most the timeout.
	bound := npdInterval + timeout + time.Second

	// Healthy first: each planted condition False, as a run of the plugin left it (NPD writes
	// every default False at its start, before the first run: wait for a run to have happened).
	time.Sleep(npdInterval + timeout)
	planted := []string{"CgroupStateDrift", "KubeletCheckpointsCorrupt", "KubeletWouldNotRestart"}
	for _, c := range planted {
		if got := waitCondition(t, c, corev1.ConditionFalse, bound); got.Reason != defaults[c] {
			t.Fatalf("%s False with reason %q, want %q (%s)", c, got.Reason, defaults[c], got.Message)
		}
	}
	logConditions(t, "healthy")

	cpuManagerState := filepath.Join(node.KubeletRoot, "cpu_manager_state")
	origConfig, err := os.ReadFile(node.KubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	faults := []struct {
		name, condition, finding string
		plant                    func(t *testing.T) (mend func())
	}{
		{
			name: "a container's cpuset rewritten in its cgroup", condition: "CgroupStateDrift",
			finding: "cpuset-drift " + string(g.UID) + "/main",
			plant: func(t *testing.T) func() {
				file := filepath.Join(containerCgroup(t, cpusetRoot, g), "cpuset.cpus")
				online, err := os.ReadFile("/sys/devices/system/cpu/online")
				if err != nil {
					t.Fatal(err)
				}
				return writeBack(t, file, online, []byte(assigned.String()))
			},
		},
		{
			name: "cpu_manager_state torn in half", condition: "KubeletCheckpointsCorrupt", finding: "cpu_manager_state",
			plant: func(t *testing.T) func() {
				orig, err := os.ReadFile(cpuManagerState)
				if err != nil {
					t.Fatal(err)
				}
				return writeBack(t, cpuManagerState, orig[:len(orig)/2], orig)
			},
		},
		{
			name: "cpuManagerPolicy changed to none over the static state", condition: "KubeletWouldNotRestart", finding: "would not start",
			plant: func(t *testing.T) func() {
				var cfg map[string]any
				if err := yaml.Unmarshal(origConfig, &cfg); err != nil {
					t.Fatal(err)
				}
				cfg["cpuManagerPolicy"] = "none"
				refused, err := yaml.Marshal(cfg)
				if err != nil {
					t.Fatal(err)
				}
				// In place (the same inode): the NPD container mounts the file itself.
				return writeBack(t, node.KubeletConfig, refused, origConfig)
			},
		},
	}
	var figures []string
	for _, f := range faults {
		t.Run(f.condition, func(t *testing.T) {
			mend := f.plant(t)
			plantedAt := time.Now()
			got := waitCondition(t, f.condition, corev1.ConditionTrue, bound)
			appeared := time.Since(plantedAt)
			t.Logf("%s: %s True after %s: %s: %s", f.name, f.condition, appeared.Round(10*time.Millisecond), got.Reason, got.Message)
			logConditions(t, "planted")
			if got.Reason != reasons[f.condition] {
				t.Errorf("reason %q, want the monitor's %q", got.Reason, reasons[f.condition])
			}
			// The message is the plugin's line, as the rule runs it in the NPD container.
			if line := npd.runRule(t, f.condition); got.Message != line {
				t.Errorf("message %q, want the plugin's line %q", got.Message, line)
			}
			if !strings.Contains(got.Message, f.finding) || len(got.Message) > 80 {
				t.Errorf("message %q does not name %q in at most 80 characters", got.Message, f.finding)
			}

			mend()
			mended := time.Now()
			got = waitCondition(t, f.condition, corev1.ConditionFalse, bound)
			cleared := time.Since(mended)
			if got.Reason != defaults[f.condition] {
				t.Errorf("mended: reason %q, want the default %q", got.Reason, defaults[f.condition])
			}
			t.Logf("mended: %s False after %s", f.condition, cleared.Round(10*time.Millisecond))
			// A fault can turn other conditions True too (a torn checkpoint: the kubelet would not
			// restart either): every one is False before the next fault.
			for _, c := range planted {
				waitCondition(t, c, corev1.ConditionFalse, bound)
			}
			figures = append(figures, fmt.Sprintf("%-26s True after %5.2fs, False after %5.2fs (%s)", f.condition, appeared.Seconds(), cleared.Seconds(), f.name))
		})
	}
	t.Logf("NPD %s, invoke_interval %s, bound %s:\n  %s", images.npdRef, npdInterval, bound, strings.Join(figures, "\n  "))
}

// writeBack writes planted to file in place and returns what writes orig back (also at the
// test's end, if the test stops before mending).
func writeBack(t *testing.T, file string, planted, orig []byte) func() {
	t.Helper()
	if err := os.WriteFile(file, planted, 0o600); err != nil {
		t.Fatal(err)
	}
	done := false
	mend := func() {
		if done {
			return
		}
		done = true
		if err := os.WriteFile(file, orig, 0o600); err != nil {
			t.Errorf("restore %s: %v", file, err)
		}
	}
	t.Cleanup(mend)
	return mend
}

// waitCondition polls the node until its condition has the status, within limit.
func waitCondition(t *testing.T, condition string, status corev1.ConditionStatus, limit time.Duration) corev1.NodeCondition {
	t.Helper()
	var last corev1.NodeCondition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		n, err := node.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeConditionType(condition) {
				last = c
				return c.Status == status, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s not %s within %s: last %+v", condition, status, limit, last)
	}
	return last
}

func logConditions(t *testing.T, when string) {
	t.Helper()
	n, err := node.Client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range n.Status.Conditions {
		fmt.Fprintf(&b, "\n  %-26s %-7s %-24s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	t.Logf("%s, the node's conditions:%s", when, b.String())
}

// npdImages are the images hack/e2e-node.sh wrote (NODESTATE_E2E_NPD/images: REF TAR lines).
type npdImages struct{ pluginRef, npdRef string }

// importNPDImages loads the plugin's and NPD's images into the node's containerd, as an
// air-gapped node gets them (ctr images import of the OCI tars), and removes them afterwards.
func importNPDImages(t *testing.T) npdImages {
	t.Helper()
	var im npdImages
	for _, e := range e2eImages(t) {
		importImage(t, e)
		switch {
		case strings.Contains(e.ref, "node-problem-detector"):
			im.npdRef = e.ref
		default:
			im.pluginRef = e.ref
		}
	}
	if im.pluginRef == "" || im.npdRef == "" {
		t.Fatalf("%s/images names no plugin or NPD image", os.Getenv("NODESTATE_E2E_NPD"))
	}
	return im
}

// e2eImage is one image hack/e2e-node.sh built: its ref and its OCI tar.
type e2eImage struct{ ref, tar string }

// e2eImages reads the images hack/e2e-node.sh wrote (NODESTATE_E2E_NPD/images: REF TAR lines).
func e2eImages(t *testing.T) []e2eImage {
	t.Helper()
	dir := os.Getenv("NODESTATE_E2E_NPD")
	if dir == "" {
		t.Fatal("NODESTATE_E2E_NPD is not set: run make e2e-node (hack/e2e-node.sh builds the images)")
	}
	f, err := os.Open(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []e2eImage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ref, tar, _ := strings.Cut(sc.Text(), " ")
		out = append(out, e2eImage{ref, tar})
	}
	return out
}

// importImage loads im's tar into the node's containerd, as an air-gapped node gets it (ctr
// images import), and removes it at the end.
func importImage(t *testing.T, im e2eImage) {
	t.Helper()
	ctr := []string{"--address", strings.TrimPrefix(node.CRIEndpoint, "unix://"), "--namespace", "k8s.io"}
	start := time.Now()
	if out, err := exec.Command("ctr", append(ctr, "images", "import", im.tar)...).CombinedOutput(); err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", im.tar, err, out)
	}
	size := int64(0)
	if fi, err := os.Stat(im.tar); err == nil {
		size = fi.Size()
	}
	t.Logf("imported %s (%d bytes) into the node's containerd in %s", im.ref, size, time.Since(start).Round(time.Millisecond))
	// The tag only: removing the CRI's record by image ID as well (to free the layer) left
	// containerd 1.6's CRI blind to a later import of the same image (ErrImageNeverPull).
	t.Cleanup(func() {
		if out, err := exec.Command("ctr", append(ctr, "images", "rm", "--sync", im.ref)...).CombinedOutput(); err != nil {
			t.Errorf("ctr images rm %s: %v\n%s", im.ref, err, out)
		}
	})
}

// readNPDDeployment decodes deploy/npd: the objects of daemonset.yaml and the monitor config.
func readNPDDeployment(t *testing.T) npdDeployment {
	t.Helper()
	dir := filepath.Join(node.Repo, "deploy", "npd")
	b, err := os.ReadFile(filepath.Join(dir, "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d npdDeployment
	for _, doc := range strings.Split(string(b), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("deploy/npd/daemonset.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			d.namespace = o
		case *corev1.ServiceAccount:
			d.serviceAccount = o
		case *rbacv1.ClusterRoleBinding:
			d.binding = o
		case *appsv1.DaemonSet:
			d.daemonSet = o
		default:
			t.Fatalf("deploy/npd/daemonset.yaml: unexpected %T", obj)
		}
	}
	if d.namespace == nil || d.serviceAccount == nil || d.binding == nil || d.daemonSet == nil {
		t.Fatal("deploy/npd/daemonset.yaml lacks the namespace, service account, binding or DaemonSet")
	}
	// The monitor config as deploy/npd has it, run with a short interval and told where this
	// node's kubelet config is.
	raw, err := os.ReadFile(filepath.Join(dir, "nodestate-monitor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["pluginConfig"].(map[string]any)["invoke_interval"] = npdInterval.String()
	for _, r := range m["rules"].([]any) {
		rule := r.(map[string]any)
		rule["args"] = append(rule["args"].([]any), "--kubelet-config", npdKubeletConfig)
	}
	if d.monitorJSON, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(d.monitorJSON, &d.monitor); err != nil {
		t.Fatal(err)
	}
	return d
}

// npdPod is the running NPD pod.
type npdPod struct {
	namespace, name string
	monitor         npdMonitor
}

// runNPD applies deploy/npd's objects, checks the DaemonSet with a server-side dry run, and runs
// its pod template on the node, changed only where this node is not a kubeadm node. Everything
// is deleted afterwards.
func runNPD(t *testing.T, d npdDeployment, images npdImages) npdPod {
	t.Helper()
	ctx := context.Background()
	c := node.Client
	nsName := d.namespace.Name
	if _, err := c.CoreV1().Namespaces().Create(ctx, d.namespace, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, nsName) })
	if _, err := c.CoreV1().ServiceAccounts(nsName).Create(ctx, d.serviceAccount, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, d.binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.RbacV1().ClusterRoleBindings().Delete(context.Background(), d.binding.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete %s: %v", d.binding.Name, err)
		}
	})
	// kustomize's configMapGenerator, by hand: the monitor config under the DaemonSet's name for it.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nodestate-npd-config"}, Data: map[string]string{"nodestate-monitor.json": string(d.monitorJSON)}}
	// What kube-controller-manager's root-ca-cert-publisher puts in every namespace: the
	// service account token volume's CA.
	ca, err := os.ReadFile(filepath.Join(node.State, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	rootCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(ca)}}
	for _, m := range []*corev1.ConfigMap{cm, rootCA} {
		if _, err := c.CoreV1().ConfigMaps(nsName).Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AppsV1().DaemonSets(nsName).Create(ctx, d.daemonSet, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("the API server refuses deploy/npd's DaemonSet: %v", err)
	}

	p := daemonSetPod(t, d.daemonSet, images)
	started := time.Now()
	if _, err := c.CoreV1().Pods(nsName).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, nsName, p.Name) })
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.CoreV1().Pods(nsName).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p = got
		return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("NPD pod not Running: %v; status %+v\n%s", err, p.Status, podLogs(t, nsName, p.Name))
	}
	t.Logf("NPD pod %s/%s Running %s after its creation (the init container installed the plugin from %s)",
		nsName, p.Name, time.Since(started).Round(time.Millisecond), images.pluginRef)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("NPD's log:\n%s", podLogs(t, nsName, p.Name))
		}
	})
	return npdPod{namespace: nsName, name: p.Name, monitor: d.monitor}
}

// daemonSetPod is the pod the DaemonSet controller would create on this node from the
// template, with this node's differences from a kubeadm node:
//   - the images are the ones imported (never pulled);
//   - the kubelet root dir, containerd's state dir and the kubelet binary are where up.sh put
//     them, and the kubelet's config file is mounted (npdKubeletConfig);
//   - NPD reaches the API server at its address (no kube-proxy serves the kubernetes Service),
//     from the node's network (the CNI bridge routes pods only to their own subnet);
//   - no CPU request: the Guaranteed pod holds the node's one allocatable CPU.
func daemonSetPod(t *testing.T, ds *appsv1.DaemonSet, images npdImages) *corev1.Pod {
	t.Helper()
	tmpl := ds.Spec.Template.DeepCopy()
	spec := &tmpl.Spec
	spec.NodeName = node.Name
	spec.HostNetwork = true
	spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("deploy/npd: want one init container and one container, got %d and %d", len(spec.InitContainers), len(spec.Containers))
	}
	spec.InitContainers[0].Image = images.pluginRef
	spec.InitContainers[0].ImagePullPolicy = corev1.PullNever
	npd := &spec.Containers[0]
	npd.Image = images.npdRef
	npd.ImagePullPolicy = corev1.PullNever
	delete(npd.Resources.Requests, corev1.ResourceCPU)
	cfg, err := clientcmd.BuildConfigFromFlags("", node.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	npd.Command = append(npd.Command, "--apiserver-override="+cfg.Host+"?inClusterConfig=true")
	kubelet, err := filepath.EvalSymlinks(filepath.Join(node.ToolsBin, "kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	hostPaths := map[string]string{
		"kubelet-root":     node.KubeletRoot,
		"containerd-tasks": filepath.Join(node.State, "containerd", "state", "io.containerd.runtime.v2.task"),
		"kubelet-binary":   kubelet,
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if path, ok := hostPaths[v.Name]; ok {
			v.HostPath.Path = path
			delete(hostPaths, v.Name)
		}
	}
	if len(hostPaths) > 0 {
		t.Fatalf("deploy/npd has no volumes %v", hostPaths)
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "kubelet-config", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: node.KubeletConfig, Type: ptr.To(corev1.HostPathFile)}}})
	npd.VolumeMounts = append(npd.VolumeMounts, corev1.VolumeMount{Name: "kubelet-config", MountPath: npdKubeletConfig, ReadOnly: true})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + node.Name, Namespace: ds.Namespace, Labels: tmpl.Labels},
		Spec:       *spec,
	}
}

// runRule runs the rule that sets condition in the NPD container, as NPD runs it, and returns
// its line.
func (p npdPod) runRule(t *testing.T, condition string) string {
	t.Helper()
	for _, r := range p.monitor.Rules {
		if r.Condition == condition {
			args := append([]string{"exec", "-n", p.namespace, p.name, "-c", "node-problem-detector", "--", r.Path}, r.Args...)
			res := kubectl(t, args...)
			if res.code != 1 {
				t.Errorf("the rule's plugin exited %d, want 1 (a problem): %s", res.code, res)
			}
			return strings.TrimSpace(res.stdout)
		}
	}
	t.Fatalf("no rule sets %s", condition)
	return ""
}

func podLogs(t *testing.T, namespace, name string) string {
	t.Helper()
	var b strings.Builder
	for _, c := range []string{"install-plugin", "node-problem-detector"} {
		out, err := node.Client.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{Container: c}).DoRaw(context.Background())
		fmt.Fprintf(&b, "--- %s (%v):\n%s\n", c, err, lastLines(string(out), 40))
	}
	return b.String()
}

func deletePodAndWait(t *testing.T, namespace, name string) {
	t.Helper()
	c := node.Client.CoreV1().Pods(namespace)
	if err := c.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete pod %s/%s: %v", namespace, name, err)
		return
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("pod %s/%s still there a minute after its deletion", namespace, name)
	}
}

// deleteNamespace deletes the namespace's objects, then the namespace, and finalizes it as the
// namespace controller would (there is none on this node).
func deleteNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	c := node.Client.CoreV1()
	for _, del := range []func() error{
		func() error {
			return c.ConfigMaps(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		func() error {
			return c.ServiceAccounts(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		func() error { return c.Namespaces().Delete(ctx, name, metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
			return
		}
	}
	ns, err := c.Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("namespace %s: %v", name, err)
		return
	}
	ns.Spec.Finalizers = nil
	if _, err := c.Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Errorf("finalize namespace %s: %v", name, err)
	}
}
