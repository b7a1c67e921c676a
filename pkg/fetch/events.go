package fetch

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// eventRule is one kind of Warning event the kubelet records for a pod that will not run in
// time: the kubelet retries a failed mount or sandbox for minutes, but with the debug pod's one
// hostPath volume and no requests, retrying does not fix them. Rules are tried in order; the
// first whose reason (and message part, if any) matches wins.
type eventRule struct {
	reason   string // the event's reason; a trailing "*" matches a prefix ("OutOf*")
	contains string // part of the message, "" for any
	result   Reason
	// fix is the advice after the kubelet's own words; %[1]s is the kubelet root dir,
	// %[2]s the namespace.
	fix string
}

var eventRules = []eventRule{
	{reason: "FailedMount", contains: "hostPath type check failed", result: ReasonRootDir,
		fix: "--kubelet-root-dir %[1]q is not a directory on the node; set --kubelet-root-dir to the node kubelet's --root-dir " +
			"(e.g. /var/lib/k0s/kubelet, /var/snap/microk8s/common/var/lib/kubelet)"},
	// 1.38 checks existence first, in its own words (1.38.0-beta.0 pkg/volume/hostpath/host_path.go:408
	// "hostPath %s doesn't exist"); up to 1.37 a missing path failed the type check above.
	{reason: "FailedMount", contains: "doesn't exist", result: ReasonRootDir,
		fix: "--kubelet-root-dir %[1]q does not exist on the node; set --kubelet-root-dir to the node kubelet's --root-dir " +
			"(e.g. /var/lib/k0s/kubelet, /var/snap/microk8s/common/var/lib/kubelet)"},
	{reason: "FailedMount", result: ReasonRootDir,
		fix: "the node cannot mount --kubelet-root-dir %[1]q read-only; check the flag against the node kubelet's --root-dir"},
	{reason: "FailedCreatePodSandBox", result: ReasonSandbox,
		fix: "the node's container runtime cannot start any pod; fix its runtime or CNI (see the runtime's log on the node)"},
}

// Admission rejections: the kubelet records an event and fails the pod with the same reason
// (pod status.reason), so both paths share these hints; %[1]q is the namespace.
var admissionHints = []struct{ reason, fix string }{
	{"OutOfpods", "the node runs its maximum number of pods (the kubelet's maxPods); free a pod slot on it"},
	// The debug pod requests nothing; only a LimitRange's defaults can give it requests.
	{"OutOf*", "the node has no room for the debug pod's requests, which only a LimitRange's defaults in namespace %[1]q " +
		"can have set; use --namespace with a namespace without default requests"},
	{"Evicted", "the node reports a pressure condition (MemoryPressure, DiskPressure or PIDPressure) and admits no BestEffort pod; " +
		"relieve it first (see `kubectl describe node`)"},
	{"NodeShutdown", "the node is shutting down"},
	{"UnexpectedAdmissionError", "the kubelet's admission failed; see the kubelet's log on the node"},
}

// matchReason matches an event or status reason against a rule's reason ("OutOf*": prefix).
func matchReason(rule, reason string) bool {
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		return strings.HasPrefix(reason, prefix)
	}
	return rule == reason
}

// admissionHint is the advice for a pod in namespace that the kubelet rejected with reason, or "".
func admissionHint(reason, namespace string) string {
	for _, h := range admissionHints {
		if matchReason(h.reason, reason) {
			if strings.Contains(h.fix, "%[1]q") {
				return fmt.Sprintf(h.fix, namespace)
			}
			return h.fix
		}
	}
	return ""
}

// EventError says whether ev, an event about the debug pod pod, means it will never run: an
// *Error with one line naming the flag or node condition to fix, or nil for an event that is
// no reason to give up (Normal events, events about other objects, retries that may succeed).
// It is pure, so any source of events can feed it: the per-pod watch below, or a shared one.
func EventError(ev *corev1.Event, pod *corev1.Pod, opts Options) *Error {
	opts = opts.WithDefaults()
	if ev == nil || ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Pod" {
		return nil
	}
	if ev.InvolvedObject.UID != pod.UID || ev.InvolvedObject.Name != pod.Name || ev.InvolvedObject.Namespace != pod.Namespace {
		return nil
	}
	said := ev.Reason
	if m := text.OneLine(ev.Message); m != "" {
		said += ": " + m
	}
	for _, r := range eventRules {
		if matchReason(r.reason, ev.Reason) && strings.Contains(ev.Message, r.contains) {
			return &Error{Reason: r.result, Short: ev.Reason,
				Message: fmt.Sprintf(r.fix, opts.KubeletRootDir, opts.Namespace) + " (kubelet: " + said + ")"}
		}
	}
	if hint := admissionHint(ev.Reason, pod.Namespace); hint != "" {
		return &Error{Reason: ReasonPodFailed, Short: ev.Reason,
			Message: "the node's kubelet rejected the debug pod: " + hint + " (kubelet: " + said + ")"}
	}
	return nil
}

// watchPodEvents feeds the Warning events recorded for pod to EventError, and sends the first
// failure on failed. It watches from the pod's create response, so no event is missed, and ends
// with ctx. Events help, they are not required: without permission to watch them (or if the
// server ends the watch for good) it stops quietly and the caller's timeout still applies.
func watchPodEvents(ctx context.Context, events corev1client.EventInterface, pod *corev1.Pod, opts Options, failed chan<- *Error) {
	selector := fields.Set{
		"involvedObject.kind": "Pod",
		"involvedObject.name": pod.Name,
		"involvedObject.uid":  string(pod.UID),
		"type":                corev1.EventTypeWarning,
	}.AsSelector().String()
	rv := pod.ResourceVersion
	for ctx.Err() == nil {
		w, err := events.Watch(ctx, metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv})
		if err != nil {
			return
		}
		ended := func() bool {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return true
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false
					}
					switch ev.Type {
					case watch.Error:
						// 410 Gone: resume from now; an event before it may be lost, the
						// timeout still covers that.
						if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
							rv = ""
							return false
						}
						return true
					case watch.Added, watch.Modified:
						e, ok := ev.Object.(*corev1.Event)
						if !ok {
							continue
						}
						rv = e.ResourceVersion
						if fe := EventError(e, pod, opts); fe != nil {
							select {
							case failed <- fe:
							case <-ctx.Done():
							}
							return true
						}
					}
				}
			}
		}()
		if ended {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(watchRetryDelay):
		}
	}
}
