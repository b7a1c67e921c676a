package fetch

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// statusError is the error client-go returns for a refusal: the API server's Status, its
// message as the server wrote it.
func statusError(code int32, reason metav1.StatusReason, message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}}
}

// The refusals of admission control, in the exact words of the API server (the policy's from
// the real kube-apiserver in the e2e suite, the webhooks' from the projects' own reports), each
// one line with its fix, never a timeout or a generic API error.
func TestExplainAdmissionRefusals(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		short    string
		contains []string
	}{
		{
			name: "own policy, another image",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: ValidatingAdmissionPolicy 'kubectl-nodestate-debug-pod' `+
				`with binding 'kubectl-nodestate-debug-pod.kubectl-nodestate' denied request: image: registry.internal/busybox:1.37 is not an allowed debug pod image `+
				`(busybox:1.37; ConfigMap kubectl-nodestate/kubectl-nodestate-policy lists them)`),
			short: "refused by kubectl-nodestate-debug-pod",
			contains: []string{"the admission policy kubectl-nodestate-debug-pod refused the debug pod: image: registry.internal/busybox:1.37 is not",
				"add it to ConfigMap team/kubectl-nodestate-policy", "`kubectl nodestate rbac -n team --image IMAGE | kubectl apply -f -`"},
		},
		{
			name: "own policy, another kubelet root dir",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: ValidatingAdmissionPolicy 'kubectl-nodestate-debug-pod' `+
				`with binding 'kubectl-nodestate-debug-pod.team' denied request: volumes: only the kubelet root dir (/var/lib/kubelet) as volume kubelet, and cdi-etc=/etc/cdi, `+
				`as hostPath volumes; got kubelet=/data/kubelet`),
			short:    "refused by kubectl-nodestate-debug-pod",
			contains: []string{"volumes: only the kubelet root dir", "--kubelet-root-dir DIR"},
		},
		{
			name: "own policy, another version's rule",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: ValidatingAdmissionPolicy 'kubectl-nodestate-debug-pod' `+
				`with binding 'kubectl-nodestate-debug-pod.team' denied request: mounts: every volume mounted read-only`),
			contains: []string{"another version of kubectl-nodestate", "`kubectl nodestate rbac -n team | kubectl apply -f -`"},
		},
		{
			// The API server's words (TestLiveAdmissionPolicy), for an exec the policy of another
			// plugin version does not admit.
			name: "own exec policy, another version's read",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: ValidatingAdmissionPolicy 'kubectl-nodestate-exec' `+
				`with binding 'kubectl-nodestate-exec.team' denied request: exec: only the read of the kubectl-nodestate version that wrote ConfigMap `+
				`team/kubectl-nodestate-policy (its reader, sections and kubelet files); got: sh -c ... (5 words)`),
			short: "refused by kubectl-nodestate-exec",
			contains: []string{"the admission policy kubectl-nodestate-exec refused the read in the debug pod: exec: only the read",
				"another version of kubectl-nodestate", "`kubectl nodestate rbac -n team | kubectl apply -f -`"},
		},
		{
			name: "own policy, a deadline past the cap",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: ValidatingAdmissionPolicy 'kubectl-nodestate-debug-pod' `+
				`with binding 'kubectl-nodestate-debug-pod.team' denied request: lifetime: restartPolicy Never and an activeDeadlineSeconds of at most 14400 s `+
				`(maxActiveDeadlineSeconds in ConfigMap team/kubectl-nodestate-policy), so the pod ends by itself`),
			short:    "refused by kubectl-nodestate-debug-pod",
			contains: []string{"refused the debug pod: lifetime:", "shorten them, or raise maxActiveDeadlineSeconds in ConfigMap team/kubectl-nodestate-policy"},
		},
		{
			name: "someone else's policy, default reason Invalid, no binding name",
			err: statusError(422, metav1.StatusReasonInvalid, `pods "nodestate-n1-abcde" is invalid: : ValidatingAdmissionPolicy 'no-hostpath' `+
				`denied request: hostPath volumes are not allowed`),
			short: "refused by no-hostpath",
			contains: []string{"ValidatingAdmissionPolicy no-hostpath refused the debug pod: hostPath volumes are not allowed",
				"exclude namespace team from its binding's matchResources"},
		},
		{
			name: "kyverno, its multi-line report",
			err: statusError(400, "", "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/team/nodestate-n1-abcde "+
				"was blocked due to the following policies \n\ndisallow-host-path:\n  host-path: 'validation error: HostPath volumes are forbidden. "+
				"The field spec.volumes[*].hostPath must be unset. rule host-path failed at path /spec/volumes/0/hostPath/'\n"),
			short: "refused by webhook",
			contains: []string{`admission webhook "validate.kyverno.svc-fail" refused the debug pod: resource Pod/team/nodestate-n1-abcde was blocked`,
				"disallow-host-path: host-path:", "kyverno PolicyException for the pods of namespace team"},
		},
		{
			name: "gatekeeper",
			err: statusError(403, metav1.StatusReasonForbidden, `admission webhook "validation.gatekeeper.sh" denied the request: [psp-host-filesystem] `+
				`HostPath volume {"hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}, "name": "kubelet"} is not allowed, pod: nodestate-n1-abcde. `+
				`Allowed path: [{"pathPrefix": "/foo", "readOnly": true}]`),
			short:    "refused by webhook",
			contains: []string{"[psp-host-filesystem] HostPath volume", "excludedNamespaces"},
		},
		{
			name: "openshift scc",
			err: statusError(403, metav1.StatusReasonForbidden, `pods "nodestate-n1-abcde" is forbidden: unable to validate against any security context constraint: `+
				`[provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.volumes[0]: Invalid value: "hostPath": hostPath volumes are not allowed to be used, `+
				`spec.containers[0].securityContext.runAsUser: Invalid value: 0: must be in the ranges: [1000680000, 1000689999], provider "restricted": Forbidden: `+
				`not usable by user or serviceaccount]`),
			short:    "refused by SCC",
			contains: []string{"no OpenShift SecurityContextConstraints admits the debug pod", "`oc adm policy add-scc-to-user hostmount-anyuid-v2 -z default -n team`"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ExplainError(tc.err, "team")
			var fe *Error
			if !errors.As(err, &fe) || fe.Reason != ReasonAdmission {
				t.Fatalf("got %#v, want reason %s", err, ReasonAdmission)
			}
			if tc.short != "" && fe.Short != tc.short {
				t.Errorf("short %q, want %q", fe.Short, tc.short)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("not one line: %q", msg)
			}
			for _, want := range tc.contains {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if !errors.Is(err, tc.err) {
				t.Error("the server's error is not wrapped")
			}
		})
	}
}

// RBAC and Pod Security refusals keep their own explanations, and a plain Forbidden is not
// taken for an admission refusal.
func TestAdmissionDeniedOnlyForItsShapes(t *testing.T) {
	for _, err := range []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`User "u" cannot create resource "pods" in API group "" in the namespace "team"`)),
		apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`violates PodSecurity "baseline:latest": hostPath volumes`)),
		errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: not an API status`),
	} {
		if admissionDenied(err) {
			t.Errorf("%v taken for an admission refusal", err)
		}
	}
}

// A long refusal is cut, not carried whole into the table's error line.
func TestAdmissionDetailCapped(t *testing.T) {
	long := strings.Repeat("é", 2*maxDetail)
	err := ExplainError(statusError(403, metav1.StatusReasonForbidden, `ValidatingAdmissionPolicy 'x' denied request: `+long), "team")
	if n := strings.Count(err.Error(), "é"); n != maxDetail {
		t.Errorf("kept %d runes of the detail, want %d", n, maxDetail)
	}
}
