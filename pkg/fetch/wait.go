package fetch

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// watchRetryDelay spaces out re-watches when the API server ends a watch, so a server that
// closes every watch at once is not hammered.
var watchRetryDelay = 500 * time.Millisecond

// Waiting reasons the kubelet keeps retrying but that will not fix themselves in time.
var imagePullReasons = map[string]bool{
	"ErrImagePull":        true,
	"ImagePullBackOff":    true,
	"InvalidImageName":    true,
	"ErrImageNeverPull":   true,
	"RegistryUnavailable": true,
}

// startState says whether the debug pod is running (done), still starting (neither), or will
// never run (err).
func startState(pod *corev1.Pod, image string) (done bool, err *Error) {
	if pod.DeletionTimestamp != nil {
		return false, podDeleted()
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		return true, nil
	case corev1.PodFailed, corev1.PodSucceeded:
		// Kubelet admission rejections (OutOfpods, NodeAffinity, UnexpectedAdmissionError, ...)
		// land here with the reason in status.reason.
		reason, detail := pod.Status.Reason, pod.Status.Message
		if reason == "" {
			reason, detail = string(pod.Status.Phase), terminated(pod)
		}
		msg := "the debug pod ended before it could be read: " + reason
		if detail != "" {
			msg += ": " + text.OneLine(detail)
		}
		if hint := admissionHint(pod.Status.Reason, pod.Namespace); hint != "" {
			msg = "the node's kubelet rejected the debug pod: " + hint + " (kubelet: " + reason + ": " + text.OneLine(detail) + ")"
		}
		return false, &Error{Reason: ReasonPodFailed, Short: reason, Message: msg}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch {
		case imagePullReasons[w.Reason]:
			return false, &Error{Reason: ReasonImagePull, Short: w.Reason,
				Message: fmt.Sprintf("cannot pull image %q (%s: %s); use --image with an image the node can pull "+
					"(or already has, see the node's status.images), or --image-pull-secret", image, w.Reason, text.OneLine(w.Message))}
		case w.Reason == "CreateContainerConfigError":
			// A configuration problem: retrying will not change it.
			return false, &Error{Reason: ReasonPodFailed, Short: w.Reason,
				Message: fmt.Sprintf("the kubelet cannot create the debug container (%s: %s)", w.Reason, text.OneLine(w.Message))}
		}
	}
	return false, nil
}

// terminated describes how the debug container ended, for a pod that failed without a reason.
func terminated(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			s := fmt.Sprintf("container exited with code %d", t.ExitCode)
			if t.Reason != "" {
				s += " (" + t.Reason + ")"
			}
			if t.Message != "" {
				s += ": " + t.Message
			}
			return s
		}
	}
	return ""
}

func podDeleted() *Error {
	return &Error{Reason: ReasonPodDeleted, Short: "pod deleted",
		Message: "the debug pod was deleted before it ran (by `kubectl nodestate cleanup` or another client?)"}
}

// describeState is the last state seen, for the timeout message.
func describeState(pod *corev1.Pod) string {
	s := string(pod.Status.Phase)
	if s == "" {
		s = "Pending"
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			s += "/" + cs.State.Waiting.Reason
		}
	}
	return s
}

// waitRunning watches the pod from the resourceVersion of its create response until it runs,
// fails, is deleted, or timeout passes. Watching, not polling, sees each change as it happens
// and costs the API server nothing between changes. An *Error on failed (from the pod's
// events, see EventError) ends the wait at once; a nil channel never does.
func waitRunning(ctx context.Context, pods corev1client.PodInterface, created *corev1.Pod, image string, timeout time.Duration, failed <-chan *Error) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	last := created
	if done, err := startState(last, image); done || err != nil {
		return nilIfNoError(err)
	}
	rv := created.ResourceVersion
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:       fields.OneTermEqualSelector("metadata.name", created.Name).String(),
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			if ctx.Err() != nil {
				return waitEnded(parent, last, timeout)
			}
			if !transient(err) {
				return err
			}
			// The API server is unreachable for a moment: watch again after the delay below.
		} else {
			done, err := consume(ctx, w, created.Name, image, &last, &rv, failed)
			w.Stop()
			if done || err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return waitEnded(parent, last, timeout)
		}
		// The server ended the watch (its own timeout, a restart) or the version expired:
		// read the pod again and resume from there.
		select {
		case <-ctx.Done():
			return waitEnded(parent, last, timeout)
		case fe := <-failed:
			return fe
		case <-time.After(watchRetryDelay):
		}
		pod, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return podDeleted()
		case err != nil && ctx.Err() != nil:
			return waitEnded(parent, last, timeout)
		case err != nil && transient(err):
			continue // from the same resourceVersion
		case err != nil:
			return err
		}
		last, rv = pod, pod.ResourceVersion
		if done, err := startState(last, image); done || err != nil {
			return nilIfNoError(err)
		}
	}
}

// consume reads events until the pod runs or fails (done or err) or the watch ends (neither).
func consume(ctx context.Context, w watch.Interface, name, image string, last **corev1.Pod, rv *string, failed <-chan *Error) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case fe := <-failed:
			return false, fe
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				// Typically 410 Gone: the caller re-reads the pod. Anything else is real.
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return false, nil
				}
				return false, err
			case watch.Deleted:
				if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Name == name {
					return false, podDeleted()
				}
			case watch.Bookmark:
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					*rv = pod.ResourceVersion
				}
			case watch.Added, watch.Modified:
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok || pod.Name != name {
					continue // fakes ignore field selectors
				}
				*last, *rv = pod, pod.ResourceVersion
				if done, err := startState(pod, image); done || err != nil {
					return done, nilIfNoError(err)
				}
			}
		}
	}
}

// waitEnded tells a timeout from the caller's cancellation (Ctrl-C).
func waitEnded(parent context.Context, last *corev1.Pod, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return err
	}
	return &Error{Reason: ReasonTimeout, Short: "timeout",
		Message: fmt.Sprintf("debug pod %s/%s not Running after %s (last state %s); check that the node's kubelet "+
			"is up and that --kubelet-root-dir exists on the node, or raise --pod-running-timeout",
			last.Namespace, last.Name, timeout, describeState(last))}
}

// nilIfNoError keeps a nil *Error from becoming a non-nil error interface.
func nilIfNoError(err *Error) error {
	if err == nil {
		return nil
	}
	return err
}
