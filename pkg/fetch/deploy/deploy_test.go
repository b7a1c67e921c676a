package deploy

import (
	"bytes"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

var hostDirs = []fetch.HostDir{{Name: "cdi-etc", Path: "/etc/cdi", MountPath: "/host/etc/cdi"}, {Name: "cgroup", Path: "/sys/fs/cgroup/", MountPath: "/host/sys/fs/cgroup"}}

// objects decodes the stream strictly (an unknown or misspelt field fails) into typed objects.
func objects(t *testing.T, stream []byte) map[string][]any {
	t.Helper()
	got := map[string][]any{}
	for _, doc := range bytes.Split(stream, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		var into any
		switch meta.Kind {
		case "Namespace":
			into = &corev1.Namespace{}
		case "ConfigMap":
			into = &corev1.ConfigMap{}
		case "Role":
			into = &rbacv1.Role{}
		case "ClusterRole":
			into = &rbacv1.ClusterRole{}
		case "RoleBinding":
			into = &rbacv1.RoleBinding{}
		case "ClusterRoleBinding":
			into = &rbacv1.ClusterRoleBinding{}
		case "ValidatingAdmissionPolicy":
			into = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			into = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s: %v\n%s", meta.Kind, err, doc)
		}
		got[meta.Kind] = append(got[meta.Kind], into)
	}
	return got
}

func TestGenerateForANamespaceMirrorAndRootDirs(t *testing.T) {
	m, err := Generate(Config{Namespace: "team-ns", Images: []string{"mirror.example/busybox:1.37", "busybox:1.37"},
		KubeletRootDirs: []string{"/var/lib/kubelet", "/data/kubelet/"}, HostDirs: hostDirs, Args: " -n team-ns"})
	if err != nil {
		t.Fatal(err)
	}
	all := m.All()
	if !bytes.HasPrefix(all, m.RBAC) || !bytes.HasSuffix(all, m.Policy) {
		t.Error("All is not the RBAC then the policy")
	}
	got := objects(t, all)
	for kind, n := range map[string]int{"Namespace": 1, "ConfigMap": 1, "Role": 1, "ClusterRole": 1, "RoleBinding": 1, "ClusterRoleBinding": 1,
		"ValidatingAdmissionPolicy": 2, "ValidatingAdmissionPolicyBinding": 2} {
		if len(got[kind]) != n {
			t.Errorf("%d %s, want %d", len(got[kind]), kind, n)
		}
	}
	if ns := got["Namespace"][0].(*corev1.Namespace); ns.Name != "team-ns" || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %+v", ns.ObjectMeta)
	}
	cm := got["ConfigMap"][0].(*corev1.ConfigMap)
	if cm.Namespace != "team-ns" || cm.Name != fetch.ParamsConfigMap || cm.Data["images"] != "mirror.example/busybox:1.37,busybox:1.37" ||
		cm.Data["kubeletRootDirs"] != "/var/lib/kubelet,/data/kubelet" {
		t.Errorf("params %s/%s: %v", cm.Namespace, cm.Name, cm.Data)
	}
	for _, b := range got["ValidatingAdmissionPolicyBinding"] {
		b := b.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if b.Name != b.Spec.PolicyName+".team-ns" || b.Spec.MatchResources.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "team-ns" ||
			len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("binding %s: %+v", b.Name, b.Spec)
		}
		if b.Spec.PolicyName == PodPolicy && (b.Spec.ParamRef == nil || b.Spec.ParamRef.Namespace != "team-ns" || b.Spec.ParamRef.Name != fetch.ParamsConfigMap ||
			*b.Spec.ParamRef.ParameterNotFoundAction != admissionregistrationv1.DenyAction) {
			t.Errorf("binding %s: params %+v", b.Name, b.Spec.ParamRef)
		}
	}
	// The policies are the cluster's, shared by every namespace set up: nothing in them may
	// depend on the namespace (its binding and params carry it).
	other, err := Generate(Config{HostDirs: hostDirs})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got["ValidatingAdmissionPolicy"] {
		p := p.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		q := objects(t, other.Policy)["ValidatingAdmissionPolicy"][i].(*admissionregistrationv1.ValidatingAdmissionPolicy)
		a, _ := yaml.Marshal(p)
		b, _ := yaml.Marshal(q)
		if !bytes.Equal(a, b) {
			t.Errorf("policy %s differs between namespaces:\n%s\n%s", p.Name, a, b)
		}
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("policy %s: failurePolicy %v, want Fail", p.Name, p.Spec.FailurePolicy)
		}
	}
	pod := got["ValidatingAdmissionPolicy"][0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	var hostDirsVar string
	for _, v := range pod.Spec.Variables {
		if v.Name == "hostDirs" {
			hostDirsVar = v.Expression
		}
	}
	if want := "{'cdi-etc': ['/etc/cdi', '/host/etc/cdi', 'DirectoryOrCreate'], 'cgroup': ['/sys/fs/cgroup', '/host/sys/fs/cgroup', 'DirectoryOrCreate']}"; hostDirsVar != want {
		t.Errorf("hostDirs variable %q, want %q", hostDirsVar, want)
	}
	// Every rule says which it is: the plugin's refusal message names the fix by that word.
	for _, v := range pod.Spec.Validations {
		msg := v.Message + v.MessageExpression
		if !strings.Contains(msg, ":") && !strings.HasPrefix(msg, "no ") {
			t.Errorf("rule %q names no rule", msg)
		}
	}
	if !strings.Contains(string(m.RBAC), "`kubectl nodestate rbac -n team-ns`") {
		t.Error("the header does not record the command")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Namespace: "kube-system"}, "holds other pods"},
		{Config{Namespace: "default"}, "holds other pods"},
		{Config{Namespace: "Team"}, "not a valid namespace name"},
		{Config{Images: []string{"a:1,b:2"}}, "not an image reference"},
		{Config{Images: []string{"a:1'"}}, "not an image reference"},
		{Config{KubeletRootDirs: []string{"var/lib/kubelet"}}, "absolute path"},
		{Config{HostDirs: []fetch.HostDir{{Name: "x", Path: "/it's", MountPath: "/x"}}}, "quotes"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
		if _, err := Generate(tc.c); err == nil {
			t.Errorf("%+v: generated", tc.c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
