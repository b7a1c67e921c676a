//go:build e2e

package e2e

// The debug pod's shape, enforced by the API server (deploy/shape-policy.yaml, applied by the
// harness with the RBAC as `kubectl apply -f deploy/`): a user bound to exactly the shipped
// roles (the group kubectl-nodestate-users of deploy/rbac.yaml) can run every command, and can
// create no other pod in the plugin's namespace, nor exec into one that is not a debug pod.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/deploy"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// shippedGroup is the group deploy/rbac.yaml binds both roles to.
const shippedGroup = "kubectl-nodestate-users"

func TestLiveAdmissionPolicy(t *testing.T) {
	node := "live-policy"
	// admit needs the kubelet's config: the user has no nodes/proxy, so config.yaml it is.
	const config = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	CreateNode(t, node, decode.HomeKubelet, nil, KubeletDir(t, merge(repoDirFiles(t, "examples/kubelet-root"), map[string]string{"config.yaml": config})))
	sel := TestSelector(t)
	expectNoLeftovers(t)

	const user = "e2e-policy"
	kubeconfig := UserKubeconfig(t, user, shippedGroup)
	client := clientFor(t, kubeconfig)
	waitUserAllowed(t, client, "create", "pods", "exec", pluginNamespace)
	waitPolicyBites(t, client, pluginNamespace)
	nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}

	t.Run("every pod the generator makes is admitted", func(t *testing.T) {
		for _, opts := range generatorVariants(pluginNamespace, "", "") {
			pod := fetch.GenerateDebugPod(nodeObj, opts)
			_, err := client.CoreV1().Pods(pluginNamespace).Create(ctxFor(t, 30*time.Second), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Errorf("generated pod (%d host dirs, deadline %d, pull secret %q) refused: %v",
					len(opts.HostDirs), opts.ActiveDeadlineSeconds, opts.ImagePullSecret, err)
			}
		}
	})

	t.Run("every other pod is refused", func(t *testing.T) {
		var table []string
		for _, tc := range refusedPods() {
			pod := fetch.GenerateDebugPod(nodeObj, fetch.Options{Namespace: pluginNamespace, HostDirs: nodestatelib.DebugPodHostDirs()})
			tc.mutate(pod)
			created, err := client.CoreV1().Pods(pluginNamespace).Create(ctxFor(t, 30*time.Second), pod, metav1.CreateOptions{})
			if err == nil {
				_ = fetchDeletePod(pluginNamespace, created.Name)
				t.Errorf("%s: admitted", tc.name)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, "ValidatingAdmissionPolicy '"+deploy.PodPolicy+"'") || !strings.Contains(msg, "denied request: "+tc.rule) {
				t.Errorf("%s: want a refusal by %s naming rule %q, got: %v", tc.name, deploy.PodPolicy, tc.rule, err)
				continue
			}
			table = append(table, fmt.Sprintf("| %s | %s |", tc.name, strings.SplitN(msg, "denied request: ", 2)[1]))
		}
		t.Logf("refused, with the API server's words:\n%s", strings.Join(table, "\n"))
	})

	t.Run("every command works under the shipped roles", func(t *testing.T) {
		env := Env(t, "KUBECONFIG="+kubeconfig)
		podFile := filepath.Join(t.TempDir(), "pod.yaml")
		if err := os.WriteFile(podFile, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: small}\nspec:\n  containers:\n  - name: app\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args    []string
			maxExit int // doctor and admit: 1 is a finding or a refusal, not an error
		}{
			{[]string{"verify", "--all-nodes", "-l", sel}, 0},
			{[]string{"doctor", node}, 1},
			{[]string{"admit", "--all-nodes", "-l", sel, "-f", podFile}, 1},
			{[]string{"collect", node, "-d", t.TempDir()}, 0},
			{[]string{"cleanup"}, 0},
		} {
			r := nodestate(t, env, tc.args...)
			if r.ExitCode < 0 || r.ExitCode > tc.maxExit || strings.Contains(r.Stderr+r.Stdout, "ValidatingAdmissionPolicy") || strings.Contains(r.Stderr, "admission policy") || strings.Contains(r.Stderr, "not allowed") {
				t.Errorf("kubectl nodestate %s: want exit <= %d and no refusal: %s", strings.Join(tc.args, " "), tc.maxExit, r)
			}
		}
	})

	t.Run("a refusal is one line with the fix, at once", func(t *testing.T) {
		r := nodestate(t, Env(t, "KUBECONFIG="+kubeconfig), "verify", node, "--image", "registry.example/busybox:1.37")
		if r.ExitCode != 2 || len(nonEmptyLines(r.Stderr)) != 1 {
			t.Fatalf("want exit 2 and one line on stderr: %s", r)
		}
		for _, want := range []string{"the admission policy " + deploy.PodPolicy + " refused the debug pod: image: registry.example/busybox:1.37",
			"ConfigMap " + pluginNamespace + "/" + fetch.ParamsConfigMap, "kubectl nodestate rbac -n " + pluginNamespace + " --image IMAGE"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
			}
		}
		if r.Duration > 20*time.Second {
			t.Errorf("took %s: a refusal must not wait for a timeout", r.Duration)
		}
	})

	t.Run("only the read runs in a debug pod", func(t *testing.T) {
		pod := fetch.GenerateDebugPod(nodeObj, fetch.Options{Namespace: pluginNamespace, HostDirs: nodestatelib.DebugPodHostDirs()})
		created, err := Client().CoreV1().Pods(pluginNamespace).Create(ctxFor(t, 30*time.Second), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fetchDeletePod(pluginNamespace, created.Name) })
		WaitPodRunning(t, pluginNamespace, created.Name, 30*time.Second)
		userCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		exec := fetch.RemoteExec(client, userCfg)
		var table []string
		for _, cmd := range refusedExecs() {
			var stdout, stderr strings.Builder
			err := exec(ctxFor(t, 30*time.Second), pluginNamespace, created.Name, fetch.ContainerName, cmd, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+deploy.ExecPolicy+"'") || !strings.Contains(err.Error(), "denied request: exec: only the read") {
				t.Errorf("exec %.120q: %v (stdout %d bytes), want a refusal by %s", cmd, err, stdout.Len(), deploy.ExecPolicy)
				continue
			}
			_, rule, _ := strings.Cut(err.Error(), "denied request: ")
			table = append(table, fmt.Sprintf("| %.60q | %s |", cmd, rule))
		}
		t.Logf("execs refused, with the API server's words:\n%s", strings.Join(table, "\n"))
		// The read itself, as a verb asks for it, goes through.
		reads := nodestatelib.DebugPodReads()
		var stdout, stderr strings.Builder
		read := fetch.ShellReaderCommand(reads.ShellScript, decode.Paths(), nil)
		if err := exec(ctxFor(t, 30*time.Second), pluginNamespace, created.Name, fetch.ContainerName, read, &stdout, &stderr); err != nil {
			t.Errorf("the read refused: %v", err)
		}
		// Attach reaches no debug pod, for the admin either.
		if r := Run(t, 20*time.Second, Env(t), KubectlBin(), "attach", "-n", pluginNamespace, created.Name, "-c", fetch.ContainerName); r.ExitCode == 0 || !strings.Contains(r.Stderr, "attach: none into a debug pod") {
			t.Errorf("kubectl attach as admin: want a refusal by %s: %s", deploy.ExecPolicy, r)
		}
	})

	t.Run("rbac output for another namespace with a mirror and another kubelet root dir", func(t *testing.T) {
		ns := NewNamespace(t, nil)
		// A pod that is not a debug pod, there before the policy (as on a namespace set up later).
		victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: fetch.ContainerName, Image: "registry.example/app:1"}}}}
		if _, err := Client().CoreV1().Pods(ns).Create(ctxFor(t, 30*time.Second), victim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fetchDeletePod(ns, victim.Name) })

		const mirror, rootDir = "mirror.example/busybox:1.37", "/data/kubelet"
		reader := fetch.ReaderImageRepo + ":e2e"
		out := nodestate(t, nil, "rbac", "-n", ns, "--image", mirror, "--image", fetch.DefaultImage, "--image", reader,
			"--kubelet-root-dir", fetch.DefaultKubeletRootDir, "--kubelet-root-dir", rootDir)
		if out.ExitCode != 0 {
			t.Fatalf("kubectl nodestate rbac: %s", out)
		}
		manifests := filepath.Join(t.TempDir(), "setup.yaml")
		if err := os.WriteFile(manifests, []byte(out.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := RunKubectl(t, "apply", "-f", manifests); r.ExitCode != 0 {
			t.Fatalf("kubectl apply: %s", r)
		}
		// The policies, roles and the group's ClusterRoleBinding are the cluster's, shared with
		// the default namespace's setup: remove only what is this namespace's.
		t.Cleanup(func() {
			for _, policy := range []string{deploy.PodPolicy, deploy.ExecPolicy} {
				_ = Client().AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), policy+"."+ns, metav1.DeleteOptions{})
			}
		})
		waitUserAllowed(t, client, "create", "pods", "exec", ns)
		waitPolicyBites(t, client, ns)
		// The generator's pods with either image and root dir are admitted.
		pods := client.CoreV1().Pods(ns)
		dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		for _, opts := range generatorVariants(ns, mirror, rootDir) {
			if _, err := pods.Create(ctxFor(t, 30*time.Second), fetch.GenerateDebugPod(nodeObj, opts), dryRun); err != nil {
				t.Errorf("generated pod (image %s, root dir %s, %d host dirs) refused: %v", opts.Image, opts.KubeletRootDir, len(opts.HostDirs), err)
			}
		}

		// Exec into the pod that is not a debug pod: refused, for the admin too.
		userCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		// The exec policy's binding reaches the admission plugin on its own, after the pod
		// policy's may have: ask again until it bites, or 30 s.
		var stdout, stderr strings.Builder
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			err = fetch.RemoteExec(client, userCfg)(ctxFor(t, 30*time.Second), ns, victim.Name, fetch.ContainerName, []string{"true"}, &stdout, &stderr)
			if (err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+deploy.ExecPolicy+"'")) || time.Now().After(deadline) {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+deploy.ExecPolicy+"'") {
			t.Errorf("exec into %s/%s as %s: %v, want a refusal by %s", ns, victim.Name, user, err, deploy.ExecPolicy)
		} else {
			_, rule, _ := strings.Cut(err.Error(), "denied request: ")
			t.Logf("| exec into a pod that is not a debug pod | %s |", rule)
		}
		if r := Run(t, 0, Env(t), KubectlBin(), "exec", "-n", ns, victim.Name, "--", "true"); r.ExitCode == 0 || !strings.Contains(r.Stderr, deploy.ExecPolicy) {
			t.Errorf("kubectl exec as admin: want a refusal by %s: %s", deploy.ExecPolicy, r)
		}
		// The plugin, with the mirror and the other root dir, works there.
		r := nodestate(t, Env(t, "KUBECONFIG="+kubeconfig), "verify", node, "-n", ns, "--image", mirror)
		if r.ExitCode != 0 {
			t.Errorf("verify with the mirror in %s: %s", ns, r)
		}
		// So does the node reader, its pod and its exec admitted as they are.
		if b := nodestate(t, Env(t, "KUBECONFIG="+kubeconfig), "verify", node, "-n", ns, "--reader=binary", "--image", reader); b.ExitCode != 0 || b.Stdout != r.Stdout {
			t.Errorf("verify --reader=binary in %s: %s\nwant what the shell reader printed:\n%s", ns, b, r.Stdout)
		}
	})
}

// generatorVariants are the debug pods the plugin makes: each set of host dirs a read mounts
// (none, the CDI dirs, cgroupfs, all), the deadline following the timeouts, a pull secret.
func generatorVariants(ns, image, rootDir string) []fetch.Options {
	all := nodestatelib.DebugPodHostDirs()
	var cdi, cgroup []fetch.HostDir
	for _, d := range all {
		if strings.HasPrefix(d.Name, "cdi") {
			cdi = append(cdi, d)
		} else {
			cgroup = append(cgroup, d)
		}
	}
	slash := rootDir
	if slash == "" {
		slash = fetch.DefaultKubeletRootDir
	}
	slash += "/" // a trailing slash on --kubelet-root-dir: the generator cleans it
	var variants []fetch.Options
	for _, dirs := range [][]fetch.HostDir{nil, cdi, cgroup, all} {
		variants = append(variants, fetch.Options{Namespace: ns, Image: image, KubeletRootDir: rootDir, HostDirs: dirs})
	}
	variants = append(variants,
		fetch.Options{Namespace: ns, Image: image, KubeletRootDir: slash, HostDirs: all, PodRunningTimeout: time.Hour, ExecTimeout: time.Hour},
		fetch.Options{Namespace: ns, Image: image, KubeletRootDir: rootDir, HostDirs: all, ImagePullSecret: "mirror-pull"})
	return variants
}

type refusedPod struct {
	name   string
	rule   string // the start of the policy's message
	mutate func(*corev1.Pod)
}

// refusedPods are the generator's pod with one thing changed, each a way out of the debug
// pod's shape (the first six are the issue's).
func refusedPods() []refusedPod {
	c := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	return []refusedPod{
		{"privileged", "privileged:", func(p *corev1.Pod) {
			c(p).SecurityContext.Privileged = ptr.To(true)
			c(p).SecurityContext.AllowPrivilegeEscalation = nil
			c(p).SecurityContext.Capabilities = nil
		}},
		{"hostPID", "host namespaces:", func(p *corev1.Pod) { p.Spec.HostPID = true }},
		{"hostNetwork", "host namespaces:", func(p *corev1.Pod) { p.Spec.HostNetwork = true }},
		{"hostIPC", "host namespaces:", func(p *corev1.Pod) { p.Spec.HostIPC = true }},
		{"hostPath / read-write", "volumes:", func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath.Path = "/"
			c(p).VolumeMounts[0].ReadOnly = false
			c(p).VolumeMounts[0].RecursiveReadOnly = nil
		}},
		{"an extra hostPath /etc, read-only", "volumes:", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, hostPath("etc", "/etc"))
			c(p).VolumeMounts = append(c(p).VolumeMounts, corev1.VolumeMount{Name: "etc", MountPath: "/host/etc", ReadOnly: true})
		}},
		{"an extra emptyDir", "volumes:", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}},
		{"the service account token mounted", "volumes:", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }},
		{"another image", "image:", func(p *corev1.Pod) { c(p).Image = "registry.example/tools:1" }},
		{"the kubelet dir writable", "mounts:", func(p *corev1.Pod) {
			c(p).VolumeMounts[0].ReadOnly = false
			c(p).VolumeMounts[0].RecursiveReadOnly = nil
		}},
		{"cgroupfs mounted elsewhere", "mounts:", func(p *corev1.Pod) { c(p).VolumeMounts[len(c(p).VolumeMounts)-1].MountPath = "/cg" }},
		{"a subPath of the kubelet dir", "mounts:", func(p *corev1.Pod) { c(p).VolumeMounts[0].SubPath = "pods" }},
		{"SYS_ADMIN added", "capabilities:", func(p *corev1.Pod) {
			c(p).SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
			c(p).SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"capabilities kept", "capabilities:", func(p *corev1.Pod) { c(p).SecurityContext.Capabilities = nil }},
		{"privilege escalation allowed", "capabilities:", func(p *corev1.Pod) { c(p).SecurityContext.AllowPrivilegeEscalation = ptr.To(true) }},
		{"a writable root filesystem", "readOnlyRootFilesystem:", func(p *corev1.Pod) { c(p).SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) }},
		{"seccomp unconfined", "confinement:", func(p *corev1.Pod) {
			c(p).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"SELinux type spc_t", "confinement:", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		}},
		{"a second container", "containers:", func(p *corev1.Pod) {
			second := *c(p).DeepCopy()
			second.Name = "second"
			p.Spec.Containers = append(p.Spec.Containers, second)
		}},
		{"an init container", "containers:", func(p *corev1.Pod) {
			init := *c(p).DeepCopy()
			init.Name = "init"
			p.Spec.InitContainers = []corev1.Container{init}
		}},
		{"without the labels", "labels:", func(p *corev1.Pod) { p.Labels = nil }},
		{"another name", "labels:", func(p *corev1.Pod) { p.Name = "tools" }},
		{"a host port", "no host ports", func(p *corev1.Pod) {
			c(p).Ports = []corev1.ContainerPort{{ContainerPort: 22, HostPort: 2222}}
		}},
		{"environment from a secret", "no host ports", func(p *corev1.Pod) {
			c(p).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		}},
		{"restartPolicy Always", "lifetime:", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
		{"no activeDeadlineSeconds", "lifetime:", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }},
		{"living a day", "lifetime:", func(p *corev1.Pod) {
			p.Spec.ActiveDeadlineSeconds = ptr.To[int64](86400)
			c(p).Command = []string{"sleep", "86400"}
		}},
		{"a command of its own", "command:", func(p *corev1.Pod) {
			c(p).Command = []string{"sh", "-c", "cat /kubelet/pods/*/volumes/kubernetes.io~secret/*/*"}
		}},
		{"args beside the sleep", "command:", func(p *corev1.Pod) { c(p).Args = []string{"1"} }},
		{"no command: the image's own", "command:", func(p *corev1.Pod) { c(p).Command = nil }},
		{"sleeping past the deadline", "command:", func(p *corev1.Pod) {
			c(p).Command = []string{fetch.ReaderPath, fetch.NodeReadVerb, "--sleep=86400"}
		}},
	}
}

// refusedExecs are commands the exec policy refuses in a debug pod: a shell of one's own, the
// reader's script changed, another file or directory under the kubelet root dir (pods' secret
// volumes are there), another root.
func refusedExecs() [][]string {
	reads := nodestatelib.DebugPodReads()
	secret := "pods/0/volumes/kubernetes.io~secret/token/token"
	return [][]string{
		{"sh", "-c", "cat " + secret},
		{"cat", secret},
		{"sh", "-c", reads.ShellScript + "; cat " + secret, "sh", "./cpu_manager_state"},
		{"sh", "-c", reads.ShellScript, "sh", "./" + secret},
		{"sh", "-c", reads.ShellScript, "sh", "./../../../etc/shadow"},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--", secret},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--kubelet-root-dir=/", "--", "etc/shadow"},
		{fetch.ReaderPath, fetch.NodeReadVerb, "--section=cgroups=/kubelet/pods", "--"},
	}
}

// waitPolicyBites waits until the pod policy's binding for ns refuses another image (a new
// policy or binding takes the API server a moment to load). The policies' type-check status is
// written by kube-controller-manager, which the harness does not run: every rule is exercised
// by the tests instead.
func waitPolicyBites(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe"}}
	bad := fetch.GenerateDebugPod(node, fetch.Options{Namespace: ns, Image: "registry.example/other:1"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.CoreV1().Pods(ns).Create(ctxFor(t, 30*time.Second), bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "denied request: image: registry.example/other:1") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy of namespace %s never refused another image: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitUserAllowed waits until the authorizer lets the client's own user verb resource/sub in ns.
func waitUserAllowed(t *testing.T, c kubernetes.Interface, verb, resource, sub, ns string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctxFor(t, 10*time.Second), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Resource: resource, Subresource: sub}}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still may not %s %s/%s in %s: %v", verb, resource, sub, ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
