//go:build e2e

package e2e

// What a cluster may refuse the plugin: Pod Security admission of the hostPath debug pod, and
// RBAC (deploy/rbac.yaml grants exactly what the plugin needs, its pods and exec only in its own
// namespace).

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

func TestLivePodSecurity(t *testing.T) {
	node := "live-psa"
	CreateNode(t, node, decode.HomeKubelet, nil, KubeletDir(t, repoDirFiles(t, "examples/kubelet-root")))
	expectNoLeftovers(t)

	for _, level := range []string{"baseline", "restricted"} {
		ns := NewNamespace(t, nil)
		EnforcePodSecurity(t, ns, level)
		r := nodestate(t, nil, "verify", node, "-n", ns)
		if r.ExitCode != 2 {
			t.Errorf("%s: exit %d, want 2: %s", level, r.ExitCode, r)
		}
		lines := nonEmptyLines(r.Stderr)
		if len(lines) != 1 {
			t.Errorf("%s: want one line on stderr, got %d:\n%s", level, len(lines), r.Stderr)
		}
		for _, want := range []string{
			"error: node " + node + ": ",
			`enforces Pod Security level "` + level + `"`,
			"hostPath",
			"--namespace kubectl-nodestate",
			fetch.SetupCommand,
			"kubectl nodestate rbac -n " + ns + " | kubectl apply -f -",
		} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", level, want, r.Stderr)
			}
		}
		rows := tableRows(r.Stdout)
		if len(rows) != 2 || rows[1][0] != node || rows[1][3] != "unreadable" || rows[1][len(rows[1])-1] != "Pod Security "+level {
			t.Errorf("%s: want one row saying Pod Security %s:\n%s", level, level, r.Stdout)
		}
		if n := CountManagedPods(t, ""); n != 0 {
			t.Errorf("%s: %d debug pods exist after a rejected create", level, n)
		}

		// Both fixes the message names work: the plugin's own namespace (the default), and
		// the namespace labelled privileged.
		if r := nodestate(t, nil, "verify", node); r.ExitCode != 0 {
			t.Errorf("the default namespace %s: %s", pluginNamespace, r)
		}
		EnforcePodSecurity(t, ns, "privileged")
		if r := nodestate(t, nil, "verify", node, "-n", ns); r.ExitCode != 0 {
			t.Errorf("namespace labelled privileged: %s", r)
		}
	}
}

// rbacManifest decodes the Role and the ClusterRole of deploy/rbac.yaml (the harness applied
// the whole file when the control plane started).
func rbacManifest(t *testing.T) (*rbacv1.Role, *rbacv1.ClusterRole) {
	t.Helper()
	var role *rbacv1.Role
	var clusterRole *rbacv1.ClusterRole
	for _, doc := range strings.Split(repoFile(t, "deploy/rbac.yaml"), "\n---") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		var err error
		switch meta.Kind {
		case "Role":
			role = &rbacv1.Role{}
			err = yaml.UnmarshalStrict([]byte(doc), role)
		case "ClusterRole":
			clusterRole = &rbacv1.ClusterRole{}
			err = yaml.UnmarshalStrict([]byte(doc), clusterRole)
		}
		if err != nil {
			t.Fatalf("deploy/rbac.yaml %s: %v", meta.Kind, err)
		}
	}
	if role == nil || clusterRole == nil {
		t.Fatal("deploy/rbac.yaml lacks the Role or the ClusterRole")
	}
	return role, clusterRole
}

// bindPluginRoles binds user to the Role (in its namespace) and the ClusterRole of
// deploy/rbac.yaml, as its header says to, and waits until the authorizer sees both. The
// bindings are deleted when the test ends.
func bindPluginRoles(t *testing.T, user string) {
	t.Helper()
	role, clusterRole := rbacManifest(t)
	bindRole(t, role, user)
	bindClusterRole(t, clusterRole.Name, user)
	waitAllowed(t, user, "create", "pods/exec", role.Namespace)
	waitAllowed(t, user, "list", "nodes", "")
}

// bindRole creates role in its namespace unless one of that name exists there (the harness's
// deploy/rbac.yaml), and binds user to it.
func bindRole(t *testing.T, role *rbacv1.Role, user string) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	roles := Client().RbacV1().Roles(role.Namespace)
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); err == nil {
		t.Cleanup(func() { _ = roles.Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	} else if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create Role %s/%s: %v", role.Namespace, role.Name, err)
	}
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user, Namespace: role.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	bindings := Client().RbacV1().RoleBindings(role.Namespace)
	if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s: %v", user, err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), b.Name, metav1.DeleteOptions{}) })
}

// bindClusterRole binds user to the existing ClusterRole name.
func bindClusterRole(t *testing.T, name, user string) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	bindings := Client().RbacV1().ClusterRoleBindings()
	if _, err := bindings.Create(ctxFor(t, 30*time.Second), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s: %v", user, err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), b.Name, metav1.DeleteOptions{}) })
}

// TestLiveRBAC binds users to deploy/rbac.yaml as its header says and shows that every live
// command works with exactly that, in the plugin's default namespace, and that the same user
// can neither create a pod nor exec into one anywhere else.
func TestLiveRBAC(t *testing.T) {
	node := "live-rbac"
	CreateNode(t, node, decode.HomeKubelet, nil, KubeletDir(t, repoDirFiles(t, "examples/kubelet-root")))
	other := NewNamespace(t, nil)
	EnforcePodSecurity(t, other, "privileged") // only RBAC stands in the way there
	sel := TestSelector(t)                     // of the test, not of a subtest
	expectNoLeftovers(t)

	bindPluginRoles(t, "e2e-sre")
	as := func(user string, args ...string) Result {
		t.Helper()
		env := Env(t, "KUBECONFIG="+UserKubeconfig(t, user))
		r := nodestate(t, env, args...)
		if n := CountManagedPods(t, ""); n != 0 {
			t.Errorf("%s: %d debug pods left after kubectl nodestate %s", user, n, strings.Join(args, " "))
		}
		return r
	}

	t.Run("bound to deploy/rbac.yaml: every command, default namespace", func(t *testing.T) {
		for _, tc := range []struct {
			args    []string
			maxExit int // doctor: 1 when the example files do not fit this host's CPUs
		}{
			{[]string{"verify", node}, 0},
			{[]string{"verify", "--all-nodes", "-l", sel, "-o", "json"}, 0},
			{[]string{"cpus", node}, 0},
			{[]string{"memory", node}, 0},
			{[]string{"devices", node}, 0},
			{[]string{"claims", node}, 0},
			{[]string{"pods", node}, 0},
			{[]string{"doctor", node}, 1},
			{[]string{"collect", node, "-d", t.TempDir()}, 0},
			{[]string{"cleanup"}, 0},
			{[]string{"cleanup", "-A"}, 0},
		} {
			r := as("e2e-sre", tc.args...)
			if r.ExitCode < 0 || r.ExitCode > tc.maxExit || strings.Contains(r.Stderr, "not allowed") || strings.Contains(r.Stdout, "forbidden") {
				t.Errorf("want exit <= %d and no refusal: %s", tc.maxExit, r)
			}
		}
	})

	t.Run("bound to deploy/rbac.yaml: nothing elsewhere", func(t *testing.T) {
		// Through the plugin: the debug pod may not be created in another namespace.
		r := as("e2e-sre", "verify", node, "-n", other)
		refused(t, r, 2, `not allowed to create pods in namespace "`+other+`"`)

		// Through the API: neither a pod create nor an exec into a running pod there.
		cfg, err := clientcmd.BuildConfigFromFlags("", UserKubeconfig(t, "e2e-sre"))
		if err != nil {
			t.Fatal(err)
		}
		user, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxFor(t, 30*time.Second)
		victim := DebugPod(other, "victim", node)
		if _, err := user.CoreV1().Pods(other).Create(ctx, victim, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("pod create in %s as e2e-sre: %v, want Forbidden", other, err)
		}
		if _, err := Client().CoreV1().Pods(other).Create(ctx, victim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fetchDeletePod(other, victim.Name) })
		WaitPodRunning(t, other, victim.Name, 30*time.Second)
		var stdout, stderr strings.Builder
		err = fetch.RemoteExec(user, cfg)(ctx, other, victim.Name, fetch.ContainerName, []string{"true"}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("exec into %s/%s as e2e-sre: %v, want forbidden", other, victim.Name, err)
		}
		// The admin can: the refusal is RBAC's, not the pod's.
		if _, _, err := ExecInPod(ctx, other, victim.Name, fetch.ContainerName, []string{"true"}); err != nil {
			t.Errorf("exec as admin: %v", err)
		}
		for _, denied := range [][]string{{"create", "pods", other}, {"create", "pods/exec", other}, {"create", "pods/exec", "kube-system"}} {
			if r := Run(t, 0, Env(t), KubectlBin(), "auth", "can-i", denied[0], denied[1], "-n", denied[2], "--as", "e2e-sre"); r.ExitCode == 0 {
				t.Errorf("e2e-sre may %s %s in %s", denied[0], denied[1], denied[2])
			}
		}
		if err := fetchDeletePod(other, victim.Name); err != nil {
			t.Error(err)
		}
	})

	t.Run("not bound", func(t *testing.T) {
		r := as("e2e-nobody", "verify", node)
		refused(t, r, 2, "node "+node+": not allowed to get nodes at the cluster scope")
		rows := tableRows(r.Stdout)
		if len(rows) != 2 || rows[1][len(rows[1])-1] != "forbidden" {
			t.Errorf("want a row saying forbidden:\n%s", r.Stdout)
		}
		refused(t, as("e2e-nobody", "verify", "--all-nodes"), 2, "error: not allowed to list nodes at the cluster scope")
		r = as("e2e-nobody", "cleanup")
		if r.ExitCode == 0 {
			t.Errorf("cleanup without RBAC: exit 0")
		}
		refused(t, r, r.ExitCode, `not allowed to list pods in namespace "`+pluginNamespace+`"`)
	})

	t.Run("without pods/exec", func(t *testing.T) {
		// The Role without pods/exec, in a namespace of its own: the pod is created, the exec refused.
		role, clusterRole := rbacManifest(t)
		noExec := role.DeepCopy()
		noExec.Namespace = NewNamespace(t, nil)
		EnforcePodSecurity(t, noExec.Namespace, "privileged")
		noExec.Rules = nil
		for _, rule := range role.Rules {
			if !strings.Contains(strings.Join(rule.Resources, ","), "pods/exec") {
				noExec.Rules = append(noExec.Rules, rule)
			}
		}
		bindRole(t, noExec, "e2e-noexec")
		bindClusterRole(t, clusterRole.Name, "e2e-noexec")
		waitAllowed(t, "e2e-noexec", "create", "pods", noExec.Namespace)
		r := as("e2e-noexec", "verify", node, "-n", noExec.Namespace)
		if r.ExitCode != 2 || len(nonEmptyLines(r.Stderr)) != 1 {
			t.Fatalf("want exit 2 and one line on stderr: %s", r)
		}
		// client-go returns a refused WebSocket upgrade as a k8s.io/streaming
		// UpgradeFailureError whose Cause is the Forbidden status: it must be explained.
		// The verb is the one the API server checked first: get (WebSocket) or create (SPDY).
		if !strings.Contains(r.Stderr, "pods/exec") {
			t.Errorf("stderr does not name pods/exec:\n%s", r.Stderr)
		}
		refused(t, r, 2, `node `+node+`: not allowed to `)
	})
}

// refused checks the one line a refused user gets: what is missing, and the fix.
func refused(t *testing.T, r Result, code int, missing string) {
	t.Helper()
	if r.ExitCode != code {
		t.Errorf("exit %d, want %d: %s", r.ExitCode, code, r)
	}
	lines := nonEmptyLines(r.Stderr)
	if len(lines) != 1 {
		t.Errorf("want one line on stderr, got %d:\n%s", len(lines), r.Stderr)
	}
	for _, want := range []string{missing, fetch.RequiredPermissions, fetch.SetupCommand} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}

// fetchDeletePod deletes a pod at once (grace 0), as the plugin does.
func fetchDeletePod(ns, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Client().CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitAllowed waits until the API server's authorizer lets user verb resource in ns ("" for
// the cluster scope).
func waitAllowed(t *testing.T, user, verb, resource, ns string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	args := []string{"auth", "can-i", verb, resource, "--as", user}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	for {
		r := Run(t, 0, Env(t), KubectlBin(), args...)
		if r.ExitCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still may not %s %s: %s", user, verb, resource, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
