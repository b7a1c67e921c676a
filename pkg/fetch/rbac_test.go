package fetch

import (
	"bytes"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// deploy/rbac.yaml must grant exactly what the error messages quote: NamespacePermissions in a
// Role of the plugin's own namespace (labelled privileged), ClusterPermissions cluster-wide,
// and nothing else.
func TestRBACManifestMatchesRequiredPermissions(t *testing.T) {
	data, err := os.ReadFile("../../deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ns *corev1.Namespace
	var role *rbacv1.Role
	var clusterRole *rbacv1.ClusterRole
	kinds := map[string]int{}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		kinds[meta.Kind]++
		var into any
		switch meta.Kind {
		case "Namespace":
			ns = &corev1.Namespace{}
			into = ns
		case "Role":
			role = &rbacv1.Role{}
			into = role
		case "ClusterRole":
			clusterRole = &rbacv1.ClusterRole{}
			into = clusterRole
		case "RoleBinding":
			var b rbacv1.RoleBinding
			into = &b
			defer func() {
				if b.RoleRef.Kind != "Role" || b.RoleRef.Name != ManagedBy || b.Namespace != DefaultNamespace {
					t.Errorf("RoleBinding %s/%s refers to %s %q", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}()
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			into = &b
			defer func() {
				if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != ManagedBy {
					t.Errorf("ClusterRoleBinding %s refers to %s %q", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}()
		default:
			t.Fatalf("unexpected document kind %q", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	for _, k := range []string{"Namespace", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		if kinds[k] != 1 {
			t.Errorf("%d documents of kind %s, want 1", kinds[k], k)
		}
	}
	if ns == nil || ns.Name != DefaultNamespace || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Fatalf("want namespace %s labelled pod-security.kubernetes.io/enforce=privileged, got %+v", DefaultNamespace, ns)
	}
	if role == nil || role.Name != ManagedBy || role.Namespace != DefaultNamespace {
		t.Fatalf("want Role %s/%s, got %+v", DefaultNamespace, ManagedBy, role)
	}
	if clusterRole == nil || clusterRole.Name != ManagedBy {
		t.Fatalf("want ClusterRole %s", ManagedBy)
	}
	if got := permissions(t, role.Rules); got != NamespacePermissions {
		t.Errorf("Role grants %q, want %q", got, NamespacePermissions)
	}
	if got := permissions(t, clusterRole.Rules); got != ClusterPermissions {
		t.Errorf("ClusterRole grants %q, want %q", got, ClusterPermissions)
	}
}

// permissions writes rules as "resource: verb, verb; ..." in the manifest's order.
func permissions(t *testing.T, rules []rbacv1.PolicyRule) string {
	t.Helper()
	var parts []string
	for _, rule := range rules {
		if len(rule.APIGroups) != 1 || rule.APIGroups[0] != "" || len(rule.Resources) != 1 || len(rule.ResourceNames) > 0 {
			t.Errorf("rule %+v: want one core resource per rule, no resource names", rule)
			continue
		}
		parts = append(parts, rule.Resources[0]+": "+strings.Join(rule.Verbs, ", "))
	}
	return strings.Join(parts, "; ")
}
