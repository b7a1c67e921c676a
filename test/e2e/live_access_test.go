//go:build e2e

package e2e

// What a cluster may refuse the plugin: Pod Security admission of the hostPath debug pod, and
// RBAC (deploy/rbac.yaml grants exactly what the plugin needs).

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
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
			"--namespace kube-system",
			"kubectl label namespace " + ns + " pod-security.kubernetes.io/enforce=privileged",
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

		// Both fixes the message names work.
		if r := nodestate(t, nil, "verify", node, "-n", "kube-system"); r.ExitCode != 0 {
			t.Errorf("--namespace kube-system: %s", r)
		}
		EnforcePodSecurity(t, ns, "privileged")
		if r := nodestate(t, nil, "verify", node, "-n", ns); r.ExitCode != 0 {
			t.Errorf("namespace labelled privileged: %s", r)
		}
	}
}

// rbacClusterRole decodes the ClusterRole of deploy/rbac.yaml.
func rbacClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	for _, doc := range strings.Split(repoFile(t, "deploy/rbac.yaml"), "\n---") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		if meta.Kind != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			t.Fatalf("deploy/rbac.yaml ClusterRole: %v", err)
		}
		return &role
	}
	t.Fatal("deploy/rbac.yaml has no ClusterRole")
	return nil
}

// applyClusterRole creates role (replacing one of that name) and bindings of it to users,
// all deleted when the test ends.
func applyClusterRole(t *testing.T, role *rbacv1.ClusterRole, users ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	roles := Client().RbacV1().ClusterRoles()
	role = role.DeepCopy()
	role.ResourceVersion = ""
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		cur, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.ResourceVersion = cur.ResourceVersion
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatalf("create ClusterRole %s: %v", role.Name, err)
	}
	t.Cleanup(func() { _ = roles.Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	for _, user := range users {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := Client().RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind %s: %v", user, err)
		}
		t.Cleanup(func() {
			_ = Client().RbacV1().ClusterRoleBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
}

func TestLiveRBAC(t *testing.T) {
	node := "live-rbac"
	CreateNode(t, node, decode.HomeKubelet, nil, KubeletDir(t, repoDirFiles(t, "examples/kubelet-root")))
	ns := NewNamespace(t, nil)
	sel := TestSelector(t) // of the test, not of a subtest
	expectNoLeftovers(t)

	role := rbacClusterRole(t)
	applyClusterRole(t, role, "e2e-sre")
	// The same role without pods/exec: the pod is created, the exec refused.
	noExec := role.DeepCopy()
	noExec.Name = "e2e-nodestate-no-exec"
	noExec.Rules = nil
	for _, rule := range role.Rules {
		if !strings.Contains(strings.Join(rule.Resources, ","), "pods/exec") {
			noExec.Rules = append(noExec.Rules, rule)
		}
	}
	applyClusterRole(t, noExec, "e2e-noexec")
	as := func(user string, args ...string) Result {
		t.Helper()
		env := Env(t, "KUBECONFIG="+UserKubeconfig(t, user))
		r := nodestate(t, env, args...)
		if n := CountManagedPods(t, ""); n != 0 {
			t.Errorf("%s: %d debug pods left after kubectl nodestate %s", user, n, strings.Join(args, " "))
		}
		return r
	}
	// The authorizer sees new bindings through its informer: wait until it does.
	waitAllowed(t, "e2e-sre", "create", "pods/exec", ns)
	waitAllowed(t, "e2e-noexec", "create", "pods", ns)

	t.Run("bound to deploy/rbac.yaml", func(t *testing.T) {
		for _, args := range [][]string{
			{"verify", node, "-n", ns},
			{"cpus", node, "-n", ns},
			{"verify", "--all-nodes", "-l", sel, "-n", ns, "-o", "json"},
			{"collect", node, "-n", ns, "-d", t.TempDir()},
			{"cleanup", "-n", ns},
			{"cleanup", "-A"},
		} {
			if r := as("e2e-sre", args...); r.ExitCode != 0 {
				t.Errorf("%s", r)
			}
		}
	})

	// The one line a refused user gets names what is missing and the fix.
	refused := func(t *testing.T, r Result, code int, missing string) {
		t.Helper()
		if r.ExitCode != code {
			t.Errorf("exit %d, want %d: %s", r.ExitCode, code, r)
		}
		lines := nonEmptyLines(r.Stderr)
		if len(lines) != 1 {
			t.Errorf("want one line on stderr, got %d:\n%s", len(lines), r.Stderr)
		}
		for _, want := range []string{missing, "deploy/rbac.yaml", "pods: create, delete, get, list, watch; pods/exec: create, get; nodes: get, list"} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
			}
		}
	}

	t.Run("not bound", func(t *testing.T) {
		r := as("e2e-nobody", "verify", node, "-n", ns)
		refused(t, r, 2, "node "+node+": not allowed to get nodes at the cluster scope")
		rows := tableRows(r.Stdout)
		if len(rows) != 2 || rows[1][len(rows[1])-1] != "forbidden" {
			t.Errorf("want a row saying forbidden:\n%s", r.Stdout)
		}
		refused(t, as("e2e-nobody", "verify", "--all-nodes", "-n", ns), 2, "error: not allowed to list nodes at the cluster scope")
		r = as("e2e-nobody", "cleanup", "-n", ns)
		if r.ExitCode == 0 {
			t.Errorf("cleanup without RBAC: exit 0")
		}
		refused(t, r, r.ExitCode, `not allowed to list pods in namespace "`+ns+`"`)
	})

	t.Run("without pods/exec", func(t *testing.T) {
		r := as("e2e-noexec", "verify", node, "-n", ns)
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

// waitAllowed waits until the API server's authorizer lets user verb resource in ns.
func waitAllowed(t *testing.T, user, verb, resource, ns string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := Run(t, 0, Env(t), KubectlBin(), "auth", "can-i", verb, resource, "-n", ns, "--as", user)
		if r.ExitCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still may not %s %s: %s", user, verb, resource, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
