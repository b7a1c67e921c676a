package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func TestExplainError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		reason   Reason
		contains []string
	}{
		{
			name: "pod security",
			err: apierrors.NewForbidden(podsGR, "x",
				errors.New(`violates PodSecurity "baseline:latest": hostPath volumes (volume "kubelet")`)),
			reason: ReasonPodSecurity,
			contains: []string{`namespace "team-a" enforces Pod Security level "baseline"`, "--namespace kubectl-nodestate", SetupCommand,
				"`kubectl nodestate rbac -n team-a | kubectl apply -f -`"},
		},
		{
			name: "pod security restricted, versioned",
			err: apierrors.NewForbidden(podsGR, "x",
				errors.New(`violates PodSecurity "restricted:v1.36": allowPrivilegeEscalation != false`)),
			reason:   ReasonPodSecurity,
			contains: []string{`level "restricted"`},
		},
		{
			name: "rbac create pods",
			err: apierrors.NewForbidden(podsGR, "x",
				errors.New(`User "u" cannot create resource "pods" in API group "" in the namespace "default"`)),
			reason: ReasonForbidden,
			contains: []string{`not allowed to create pods in namespace "default"`, RequiredPermissions,
				SetupCommand},
		},
		{
			name: "rbac exec",
			err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, "x",
				errors.New(`User "u" cannot create resource "pods/exec" in API group "" in the namespace "default"`)),
			reason:   ReasonForbidden,
			contains: []string{`not allowed to create pods/exec in namespace "default"`, "pods/exec: create, get"},
		},
		{
			name: "rbac cluster scope",
			err: apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
				errors.New(`User "u" cannot list resource "nodes" in API group "" at the cluster scope`)),
			reason:   ReasonForbidden,
			contains: []string{"not allowed to list nodes at the cluster scope", "nodes: get, list"},
		},
		{
			name:     "forbidden without the usual text",
			err:      apierrors.NewForbidden(podsGR, "x", errors.New("denied by webhook")),
			reason:   ReasonForbidden,
			contains: []string{"forbidden;", RequiredPermissions},
		},
		{
			name:     "node not found",
			err:      apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n9"),
			reason:   ReasonNodeNotFound,
			contains: []string{"no such node"},
		},
		{
			name:     "namespace not found",
			err:      apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "team-a"),
			reason:   ReasonNamespaceNotFound,
			contains: []string{`namespace "team-a" does not exist`, "--namespace"},
		},
		{
			name:     "unauthorized",
			err:      apierrors.NewUnauthorized("token expired"),
			reason:   ReasonUnauthorized,
			contains: []string{"--kubeconfig"},
		},
		{
			name:   "canceled",
			err:    fmt.Errorf("watch: %w", context.Canceled),
			reason: ReasonCanceled,
		},
		{
			name:   "deadline",
			err:    context.DeadlineExceeded,
			reason: ReasonTimeout,
		},
		{
			name:     "other",
			err:      apierrors.NewInternalError(errors.New("etcd\nleader changed")),
			reason:   ReasonAPI,
			contains: []string{"etcd leader changed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ExplainError(tt.err, "team-a")
			fe := wantReason(t, err, tt.reason)
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q\ndoes not contain %q", err, s)
				}
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("the original error is not in the chain")
			}
			if fe.Short == "" {
				t.Errorf("no short reason")
			}
		})
	}
	if ExplainError(nil, "x") != nil {
		t.Error("ExplainError(nil) != nil")
	}
}

func TestErrorMessage(t *testing.T) {
	err := &Error{Node: "n1", Reason: ReasonTimeout, Message: "slow", Cleanup: errors.New("gone away")}
	want := "node n1: slow (and the debug pod could not be deleted: gone away)"
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err.Error(), want)
	}
	if ReasonOf(fmt.Errorf("wrapped: %w", err)) != ReasonTimeout {
		t.Error("ReasonOf does not see through wrapping")
	}
}
