package nodepublish

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

var deployDir = filepath.Join("..", "..", "..", "deploy", "publish")

// docs are a manifest file's documents, each decoded strictly into the type its kind names.
func docs(t *testing.T, file string) map[string][]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, file))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]any{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var obj any
		switch meta.Kind {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Role", "ClusterRole":
			obj = &rbacv1.Role{}
		case "RoleBinding", "ClusterRoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "DaemonSet":
			obj = &appsv1.DaemonSet{}
		case "ValidatingAdmissionPolicy":
			obj = &admissionv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionv1.ValidatingAdmissionPolicyBinding{}
		default:
			t.Fatalf("%s: unexpected kind %q", file, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %s: %v", file, meta.Kind, err)
		}
		out[meta.Kind] = append(out[meta.Kind], obj)
	}
	return out
}

// The DaemonSet runs node-publish as the command parses it, in the namespace consumers read,
// with read-only hostPath mounts only, its resources bounded, every capability dropped.
func TestPublishDaemonSet(t *testing.T) {
	ds := docs(t, "daemonset.yaml")["DaemonSet"][0].(*appsv1.DaemonSet)
	if ds.Namespace != nodestate.PublishedNamespace {
		t.Errorf("namespace %s, want %s", ds.Namespace, nodestate.PublishedNamespace)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 || spec.HostNetwork || spec.HostPID {
		t.Fatalf("pod spec %+v", spec)
	}
	c := spec.Containers[0]
	cmd := NewCmdNodePublish(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{})
	if len(c.Args) == 0 || c.Args[0] != cmd.Name() {
		t.Fatalf("args %q", c.Args)
	}
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Errorf("args %q: %v", c.Args, err)
	}
	if env := c.Env; len(env) != 1 || env[0].Name != NodeNameEnv || env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %+v", env)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 || sc.Privileged != nil {
		t.Errorf("security context %+v", sc)
	}
	mounted := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		if !vm.ReadOnly {
			t.Errorf("mount %s is not read-only", vm.MountPath)
		}
		mounted[vm.Name] = true
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil || v.HostPath.Type == nil || (*v.HostPath.Type != corev1.HostPathDirectory && *v.HostPath.Type != corev1.HostPathFile) {
			t.Errorf("volume %s: only hostPaths that exist on the node (%+v)", v.Name, v.VolumeSource)
		}
		if !mounted[v.Name] {
			t.Errorf("volume %s is not mounted", v.Name)
		}
	}
}

// RBAC grants the publisher its own objects only: ConfigMaps in its namespace, the
// NodeResourceTopologies, get on nodes; readers list the ConfigMaps and nothing else.
func TestPublishRBAC(t *testing.T) {
	d := docs(t, "rbac.yaml")
	if ns := d["Namespace"][0].(*corev1.Namespace); ns.Name != nodestate.PublishedNamespace {
		t.Errorf("namespace %s", ns.Name)
	}
	rules := map[string][]string{}
	for _, r := range append(d["Role"], d["ClusterRole"]...) {
		role := r.(*rbacv1.Role)
		for _, rule := range role.Rules {
			if len(rule.ResourceNames) > 0 || slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*") {
				t.Errorf("%s: wildcard or named rule %+v", role.Name, rule)
			}
			for _, res := range rule.Resources {
				key := role.Name + " " + role.Namespace + " " + strings.Join(rule.APIGroups, ",") + "/" + res
				rules[key] = append(rules[key], rule.Verbs...)
			}
		}
	}
	want := map[string][]string{
		"nodestate-publish nodestate-publish /configmaps":                  {"create", "patch"},
		"nodestate-publish  /nodes":                                        {"get"},
		"nodestate-publish  topology.node.k8s.io/noderesourcetopologies":   {"create", "patch"},
		"kubectl-nodestate-published-reader nodestate-publish /configmaps": {"list"},
	}
	if len(rules) != len(want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
	for k, v := range want {
		if !slices.Equal(rules[k], v) {
			t.Errorf("%s: %v, want %v", k, rules[k], v)
		}
	}
}

// The policy binds the publisher's ServiceAccount to its own node's objects; the CRD shipped is
// upstream's byte for byte, as the README names it.
func TestPublishPolicyAndCRD(t *testing.T) {
	d := docs(t, "policy.yaml")
	p := d["ValidatingAdmissionPolicy"][0].(*admissionv1.ValidatingAdmissionPolicy)
	b := d["ValidatingAdmissionPolicyBinding"][0].(*admissionv1.ValidatingAdmissionPolicyBinding)
	if b.Spec.PolicyName != p.Name || !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) || *p.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("binding %+v, failure policy %v", b.Spec, *p.Spec.FailurePolicy)
	}
	if mc := p.Spec.MatchConditions; len(mc) != 1 || !strings.Contains(mc[0].Expression, "system:serviceaccount:"+nodestate.PublishedNamespace+":nodestate-publish") {
		t.Errorf("match conditions %+v", mc)
	}
	crd, err := os.ReadFile(filepath.Join(deployDir, "noderesourcetopology-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(deployDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(crd)
	if !strings.Contains(string(readme), hex.EncodeToString(sum[:])) {
		t.Errorf("noderesourcetopology-crd.yaml (sha256 %x) is not the file README.md names", sum)
	}
}
