package fetch

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// Reason classifies a fetch failure, for the command layer's per-node row and exit code.
type Reason string

// The reasons Fetch can fail for.
const (
	ReasonNodeNotFound      Reason = "NodeNotFound"
	ReasonNodeNotReady      Reason = "NodeNotReady"
	ReasonUnsupportedOS     Reason = "UnsupportedOS" // not a failure of the node: it is skipped
	ReasonPodSecurity       Reason = "PodSecurity"
	ReasonAdmission         Reason = "AdmissionDenied" // an admission policy or webhook refused the request
	ReasonForbidden         Reason = "Forbidden"
	ReasonUnauthorized      Reason = "Unauthorized"
	ReasonNamespaceNotFound Reason = "NamespaceNotFound"
	ReasonImagePull         Reason = "ImagePullFailed"
	ReasonPodFailed         Reason = "PodFailed"
	ReasonRootDir           Reason = "KubeletRootDir" // the hostPath mount failed: --kubelet-root-dir
	ReasonSandbox           Reason = "PodSandbox"     // the node's runtime cannot start the pod
	ReasonPodDeleted        Reason = "PodDeleted"
	ReasonTimeout           Reason = "Timeout"
	ReasonCanceled          Reason = "Canceled"
	ReasonExec              Reason = "ExecFailed"
	ReasonBadArchive        Reason = "BadArchive"
	ReasonAPI               Reason = "APIError"
	ReasonInvalid           Reason = "Invalid" // bad options or paths: a usage error
)

// What the plugin asks of the API server; deploy/rbac.yaml grants exactly this: NamespacePermissions
// in a Role of the debug pods' namespace, ClusterPermissions in a ClusterRole. pods/exec needs
// both verbs: `create` for WebSocket exec (1.35+), `get` before. events: watch is optional: it
// only ends a doomed wait early (see EventError).
const (
	NamespacePermissions = "pods: create, delete, get, list, watch; pods/exec: create, get; events: watch"
	ClusterPermissions   = "nodes: get, list; pods: list"
	RequiredPermissions  = NamespacePermissions + " in the debug pods' namespace; " + ClusterPermissions + " cluster-wide"
)

// SetupCommand prints the cluster setup: namespace, RBAC and admission policy (deploy/ holds its
// default output).
const SetupCommand = "kubectl nodestate rbac | kubectl apply -f -"

// RBACFix is the one-line fix the RBAC and Pod Security messages name.
const RBACFix = "`" + SetupCommand + "` creates namespace " + DefaultNamespace +
	" with a Role and a ClusterRole granting exactly that, and its admission policy; bind your user to both"

// Error is the one error type Fetch returns. Its message is a single line that says what went
// wrong and how to fix it; Short is the few words a table cell has room for.
type Error struct {
	Node    string // the node, or "" when the error is not about one node
	Reason  Reason
	Short   string // e.g. "ImagePullBackOff", "not supported yet, skipped"
	Message string // one line: cause and fix
	Err     error  // the underlying error, if any

	// Cleanup is set when the debug pod could not be deleted afterwards; the pod dies on its
	// own at its activeDeadlineSeconds, and the CleanupCommand its message names removes it.
	Cleanup error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Cleanup != nil {
		msg += fmt.Sprintf(" (and the debug pod could not be deleted: %v)", e.Cleanup)
	}
	if e.Node != "" {
		return "node " + e.Node + ": " + msg
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of the *Error in err's chain, or "" if there is none.
func ReasonOf(err error) Reason {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return ""
}

// ExplainError turns an API, context or exec error into an *Error with a one-line message that
// names the fix. namespace is where the debug pod lives (it appears in the advice). Errors it
// does not recognise become ReasonAPI with the server's message; nil stays nil.
func ExplainError(err error, namespace string) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Reason: ReasonCanceled, Short: "canceled", Message: "canceled", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Reason: ReasonTimeout, Short: "timeout", Message: "timed out: " + text.OneLine(err.Error()), Err: err}
	case admissionDenied(err):
		return admissionError(err, namespace)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"):
		return podSecurityError(err, namespace)
	case apierrors.IsForbidden(err):
		return rbacError(err)
	case apierrors.IsUnauthorized(err):
		return &Error{Reason: ReasonUnauthorized, Short: "unauthorized",
			Message: "the API server rejected the credentials; check --kubeconfig / --context or log in again", Err: err}
	case apierrors.IsNotFound(err):
		return notFoundError(err, namespace)
	}
	return &Error{Reason: ReasonAPI, Short: "API error", Message: text.OneLine(err.Error()), Err: err}
}

// `violates PodSecurity "baseline:latest": hostPath volumes (volume "kubelet")`
var podSecurityRE = regexp.MustCompile(`violates PodSecurity "([a-z]+)(?::([^"]*))?"`)

func podSecurityError(err error, namespace string) *Error {
	level := "baseline or restricted"
	if m := podSecurityRE.FindStringSubmatch(err.Error()); m != nil {
		level = m[1]
	}
	return &Error{
		Reason: ReasonPodSecurity,
		Short:  "Pod Security " + level,
		Message: fmt.Sprintf("namespace %q enforces Pod Security level %q, which forbids the debug pod's read-only hostPath "+
			"mount and uid 0; use the plugin's own namespace (--namespace %s, labelled privileged, with an admission policy that admits "+
			"only the debug pod there: `%s`), or set this one up the same way: `kubectl nodestate rbac -n %s | kubectl apply -f -`",
			namespace, level, DefaultNamespace, SetupCommand, namespace),
		Err: err,
	}
}

// `User "u" cannot create resource "pods/exec" in API group "" in the namespace "default"`
var rbacRE = regexp.MustCompile(`cannot (\S+) resource "([^"]+)"(?: in API group "([^"]*)")?(?: in the namespace "([^"]*)"| at the cluster scope)?`)

func rbacError(err error) *Error {
	what := "forbidden"
	if m := rbacRE.FindStringSubmatch(err.Error()); m != nil {
		verb, resource, group, ns := m[1], m[2], m[3], m[4]
		if group != "" {
			resource += "." + group
		}
		what = fmt.Sprintf("not allowed to %s %s", verb, resource)
		switch {
		case ns != "":
			what += fmt.Sprintf(" in namespace %q", ns)
		case strings.Contains(m[0], "cluster scope"):
			what += " at the cluster scope"
		}
	}
	return &Error{
		Reason:  ReasonForbidden,
		Short:   "forbidden",
		Message: what + "; kubectl-nodestate needs " + RequiredPermissions + " (" + RBACFix + ")",
		Err:     err,
	}
}

func notFoundError(err error, namespace string) *Error {
	var status apierrors.APIStatus
	kind := ""
	if errors.As(err, &status) && status.Status().Details != nil {
		kind = status.Status().Details.Kind
	}
	switch kind {
	case "nodes":
		return &Error{Reason: ReasonNodeNotFound, Short: "node not found", Message: "no such node", Err: err}
	case "namespaces":
		msg := fmt.Sprintf("namespace %q does not exist; pick another with --namespace", namespace)
		if namespace == DefaultNamespace {
			msg = fmt.Sprintf("namespace %q does not exist; `%s` creates it (or pick another with --namespace)", namespace, SetupCommand)
		}
		return &Error{Reason: ReasonNamespaceNotFound, Short: "namespace not found", Message: msg, Err: err}
	}
	return &Error{Reason: ReasonAPI, Short: "not found", Message: text.OneLine(err.Error()), Err: err}
}

// withNode sets the node on err if it is an *Error without one; other errors are explained
// first, so Fetch only ever returns *Error.
func withNode(err error, node, namespace string) error {
	if err == nil {
		return nil
	}
	err = ExplainError(err, namespace)
	var fe *Error
	if errors.As(err, &fe) && fe.Node == "" {
		fe.Node = node
	}
	return err
}
