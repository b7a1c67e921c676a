package fetch

import (
	"bytes"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// deploy/rbac.yaml must grant exactly RequiredPermissions, which the error messages quote.
func TestRBACManifestMatchesRequiredPermissions(t *testing.T) {
	data, err := os.ReadFile("../../deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			var b rbacv1.ClusterRoleBinding
			if yaml.UnmarshalStrict(doc, &b) != nil {
				t.Fatalf("document is neither a ClusterRole nor a ClusterRoleBinding: %v", err)
			}
			if b.RoleRef.Name != "kubectl-nodestate" {
				t.Errorf("binding refers to %q", b.RoleRef.Name)
			}
			continue
		}
		if r.Kind == "ClusterRole" {
			role = &r
		}
	}
	if role == nil || role.Name != "kubectl-nodestate" {
		t.Fatalf("no ClusterRole kubectl-nodestate in deploy/rbac.yaml")
	}
	var parts []string
	for _, rule := range role.Rules {
		if len(rule.APIGroups) != 1 || rule.APIGroups[0] != "" || len(rule.Resources) != 1 {
			t.Errorf("rule %+v: want one core resource per rule", rule)
			continue
		}
		parts = append(parts, rule.Resources[0]+": "+strings.Join(rule.Verbs, ", "))
	}
	// RequiredPermissions lists pods first; the manifest lists nodes first.
	got := map[string]bool{}
	for _, p := range parts {
		got[p] = true
	}
	for _, p := range strings.Split(RequiredPermissions, "; ") {
		if !got[p] {
			t.Errorf("RequiredPermissions has %q, the ClusterRole does not", p)
		}
		delete(got, p)
	}
	for p := range got {
		t.Errorf("the ClusterRole grants %q beyond RequiredPermissions", p)
	}
}
