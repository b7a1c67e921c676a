package fetch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// The refusals of admission control other than Pod Security, as the API server words them:
//
//	ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>     (CEL, 1.30+)
//	admission webhook "validate.kyverno.svc-fail" denied the request: <message>  (kyverno, Gatekeeper, any webhook)
//	unable to validate against any security context constraint: [<reasons>]     (OpenShift SCC)
var (
	policyDeniedRE  = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request: (.*)`)
	webhookDeniedRE = regexp.MustCompile(`admission webhook "([^"]+)" denied the request:?(.*)`)
)

const sccDenied = "unable to validate against any security context constraint"

// The plugin's own admission policies (package deploy) start with this.
const ownPolicyPrefix = ManagedBy + "-"

// ParamsConfigMap is the ConfigMap in the plugin's namespace holding its admission policy's
// parameters (the images and kubelet root dirs allowed).
const ParamsConfigMap = ManagedBy + "-policy"

// maxDetail bounds how much of a refusal's own message goes into the one line.
const maxDetail = 300

func admissionDenied(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	msg := err.Error()
	return policyDeniedRE.MatchString(msg) || webhookDeniedRE.MatchString(msg) || strings.Contains(msg, sccDenied)
}

// admissionError explains a refusal by an admission policy or webhook in one line with its fix:
// a refusal is final, so the plugin says so at once rather than wait out a timeout.
func admissionError(err error, namespace string) *Error {
	msg := text.OneLine(err.Error())
	e := &Error{Reason: ReasonAdmission, Err: err}
	switch m := policyDeniedRE.FindStringSubmatch(msg); {
	case m != nil && strings.HasPrefix(m[1], ownPolicyPrefix):
		e.Short = "refused by " + m[1]
		what := "the debug pod"
		if strings.HasPrefix(m[3], "exec:") {
			what = "the read in the debug pod"
		}
		e.Message = fmt.Sprintf("the admission policy %s refused %s: %s; %s", m[1], what, detail(m[3]), ownPolicyFix(m[3], namespace))
	case m != nil:
		by := "ValidatingAdmissionPolicy " + m[1]
		if m[2] != "" {
			by += " (binding " + m[2] + ")"
		}
		e.Short = "refused by " + m[1]
		e.Message = fmt.Sprintf("%s refused the debug pod: %s; %s", by, detail(m[3]), exemptFix("exclude namespace "+namespace+" from its binding's matchResources", namespace))
	case webhookDeniedRE.MatchString(msg):
		m := webhookDeniedRE.FindStringSubmatch(msg)
		hook, fix := m[1], "exempt namespace "+namespace+" from that webhook's policy"
		switch {
		case strings.Contains(hook, "kyverno"):
			fix = "a kyverno PolicyException for the pods of namespace " + namespace + ", or exclude it in the policy"
		case strings.Contains(hook, "gatekeeper"):
			fix = "add namespace " + namespace + " to the constraint's excludedNamespaces (or to Gatekeeper's Config exemptions)"
		}
		e.Short = "refused by webhook"
		e.Message = fmt.Sprintf("admission webhook %q refused the debug pod: %s; %s", hook, detail(m[2]), exemptFix(fix, namespace))
	default: // OpenShift SCC
		e.Short = "refused by SCC"
		e.Message = fmt.Sprintf("no OpenShift SecurityContextConstraints admits the debug pod (it mounts hostPath read-only and runs as uid 0 "+
			"with all capabilities dropped); grant one to the namespace's default service account: "+
			"`oc adm policy add-scc-to-user hostmount-anyuid-v2 -z default -n %s` (hostmount-anyuid before OpenShift 4.15)", namespace)
	}
	return e
}

// exemptFix is the advice for a refusal by someone else's policy: the plugin cannot change its
// pod, the cluster admin can exempt its namespace.
func exemptFix(how, namespace string) string {
	return "the debug pod needs the kubelet dir as a read-only hostPath and uid 0; ask a cluster admin to " + how +
		" (the plugin's own policy, from `" + SetupCommand + "`, admits only its pod there)"
}

// ownPolicyFix names the fix for a refusal by the plugin's own policy: an image or kubelet root
// dir it was not set up with, or a policy from another version of the plugin.
func ownPolicyFix(rule, namespace string) string {
	switch {
	case strings.HasPrefix(rule, "image:"):
		return fmt.Sprintf("allow the --image you pass: add it to ConfigMap %s/%s, or `kubectl nodestate rbac -n %s --image IMAGE | kubectl apply -f -`",
			namespace, ParamsConfigMap, namespace)
	case strings.HasPrefix(rule, "volumes:"):
		return fmt.Sprintf("allow the --kubelet-root-dir you pass: add it to ConfigMap %s/%s, or `kubectl nodestate rbac -n %s --kubelet-root-dir DIR | kubectl apply -f -`",
			namespace, ParamsConfigMap, namespace)
	case strings.HasPrefix(rule, "lifetime:"):
		return fmt.Sprintf("the debug pod lives --pod-running-timeout plus --exec-timeout plus a minute: shorten them, or raise maxActiveDeadlineSeconds in ConfigMap %s/%s",
			namespace, ParamsConfigMap)
	}
	// exec: and command: too: this version's reader is not the one the policy admits.
	return fmt.Sprintf("the policy is from another version of kubectl-nodestate: apply this version's, `kubectl nodestate rbac -n %s | kubectl apply -f -`", namespace)
}

func detail(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxDetail {
		s = string(r[:maxDetail]) + "..."
	}
	return s
}
