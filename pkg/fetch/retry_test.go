package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/streaming/pkg/httpstream"
)

func TestTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("Post \"https://127.0.0.1:6443/api\": %w", refused), true},
		{"connection reset", &net.OpError{Op: "read", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}, true},
		{"apiserver to kubelet", apierrors.NewInternalError(errors.New("error sending request: Post \"https://127.0.0.1:10250/exec\": EOF")), true},
		{"503", apierrors.NewServiceUnavailable("the server is currently unable to handle the request"), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1), true},
		{"stream cut", io.ErrUnexpectedEOF, true},
		{"websocket closed", errors.New("websocket: close 1006 (abnormal closure): unexpected EOF"), true},
		{"upgrade refused by a 500", &httpstream.UpgradeFailureError{Cause: apierrors.NewInternalError(errors.New("error sending request"))}, true},
		{"kwok or runtime exec 500", errors.New(`Internal error occurred: error executing command in container: no exec found for container "nodestate"`), true},
		{"tar cut", badArchive(&ArchiveError{Problem: "truncated", Err: io.ErrUnexpectedEOF}), true},

		{"forbidden", apierrors.NewForbidden(podsGR, "p", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(podsGR, "p"), false},
		{"already exists", apierrors.NewAlreadyExists(podsGR, "p"), false},
		{"invalid", apierrors.NewBadRequest("bad"), false},
		{"canceled", context.Canceled, false},
		{"our timeout", fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false},
		{"bad entry", badArchive(&ArchiveError{Entry: "/etc/shadow", Problem: "absolute name"}), false},
		{"no tar", errors.New(`exec: "tar": executable file not found in $PATH`), false},
		{"no sh, as a 500", apierrors.NewInternalError(errors.New(`error executing command in container: exec: "sh": executable file not found in $PATH`)), false},
		{"no sh", errors.New(`Internal error occurred: error executing command in container: exec: "sh": executable file not found in $PATH`), false},
		{"nil", nil, false},
	} {
		if got := transient(tt.err); got != tt.want {
			t.Errorf("%s: transient(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// fastRetries makes the backoff between retries 1 ms for the test.
func fastRetries(t *testing.T) {
	old := retryBackoff
	retryBackoff.Duration, retryBackoff.Cap = time.Millisecond, time.Millisecond
	t.Cleanup(func() { retryBackoff = old })
}

// failFirst makes the first n calls of verb on pods fail with err, then lets them through.
func failFirst(c *fake.Clientset, verb string, n int32, err error) *atomic.Int32 {
	var calls atomic.Int32
	c.PrependReactor(verb, "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &calls
}

// A blip of the API server or of the node's exec endpoint costs retries, not the node: each of
// create, exec, pod list and delete fails twice, and the node is read all the same.
func TestFetchRetriesTransientFailures(t *testing.T) {
	fastRetries(t)
	c := newClient(true, readyNode("n1"))
	refused := errors.New(`Post "https://127.0.0.1:6443/api/v1/namespaces/x/pods": dial tcp 127.0.0.1:6443: connect: connection refused`)
	creates := failFirst(c, "create", 2, refused)
	lists := failFirst(c, "list", 2, apierrors.NewServiceUnavailable("the server is currently unable to handle the request"))
	deletes := failFirst(c, "delete", 2, apierrors.NewTooManyRequests("slow down", 0))
	var execs atomic.Int32
	files := tarExec(nodeFS{"cpu_manager_state": "x"})
	f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		if execs.Add(1) <= 2 {
			return apierrors.NewInternalError(errors.New(`error sending request: Post "https://127.0.0.1:10250/exec/x": EOF`))
		}
		return files(ctx, ns, pod, container, cmd, stdout, stderr)
	})
	nf, err := f.Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if string(nf.Files["cpu_manager_state"]) != "x" || len(nf.Warnings) != 0 {
		t.Errorf("files %v, warnings %q", nf.Files, nf.Warnings)
	}
	for what, n := range map[string]int32{"create": creates.Load(), "exec": execs.Load(), "list": lists.Load(), "delete": deletes.Load()} {
		if n != 3 {
			t.Errorf("%d %s calls, want 3 (two failed, one through)", n, what)
		}
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// A create whose answer was lost after the server stored the pod: the retry finds the name
// taken by the pod it made, and goes on with it.
func TestFetchCreateStoredAnswerLost(t *testing.T) {
	fastRetries(t)
	c := newClient(true, readyNode("n1"))
	var calls atomic.Int32
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) > 1 {
			return false, nil, nil
		}
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.Status.Phase = corev1.PodRunning
		if err := c.Tracker().Create(podsGR.WithVersion("v1"), pod, pod.Namespace); err != nil {
			t.Error(err)
		}
		return true, nil, errors.New("http2: client connection lost")
	})
	nf, err := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"})).Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(nf.Files) != 1 {
		t.Errorf("files %v", nf.Files)
	}
	// The pod list runs beside the delete: compare them unordered.
	got := actions(c, "pods")
	slices.Sort(got[3:])
	if !slices.Equal(got, []string{"create", "create", "get", "delete", "list"}) {
		t.Errorf("pod actions %v, want two creates, the get that finds the pod, its delete (and the pod list)", got)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// halfTar streams the first half of a valid tar and ends without error: a node whose stream was
// cut. err, if set, is returned after it.
func halfTar(err error) ExecFunc {
	return func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		var full strings.Builder
		if e := tarExec(nodeFS{"cpu_manager_state": strings.Repeat("c", 2000), "memory_manager_state": "m"})(ctx, ns, pod, container, cmd, &full, stderr); e != nil {
			return e
		}
		_, _ = io.WriteString(stdout, full.String()[:full.Len()/2])
		return err
	}
}

// A tar cut mid-stream is never judged: it is read again, and a node that cuts it every time
// fails as a bad archive after maxExecAttempts, without a snapshot.
func TestFetchTarCut(t *testing.T) {
	fastRetries(t)
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"exec ends cleanly", nil},
		{"exec stream broken", errors.New("websocket: close 1006 (abnormal closure): unexpected EOF")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(true, readyNode("n1"))
			var execs atomic.Int32
			cut := halfTar(tt.err)
			f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
				execs.Add(1)
				return cut(ctx, ns, pod, container, cmd, stdout, stderr)
			})
			nf, err := f.Fetch(context.Background(), "n1")
			if nf != nil {
				t.Errorf("a snapshot from a cut stream: %+v", nf)
			}
			if r := ReasonOf(err); r != ReasonBadArchive && r != ReasonExec {
				t.Errorf("reason %q (%v), want a bad archive or a failed exec", r, err)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "node n1: ")) {
				t.Errorf("not one line about the node: %q", err)
			}
			if n := execs.Load(); n != maxExecAttempts {
				t.Errorf("%d execs, want %d", n, maxExecAttempts)
			}
			if left := debugPods(t, c); len(left) != 0 {
				t.Errorf("debug pods left: %v", left)
			}
		})
	}
	t.Run("cut once, then whole", func(t *testing.T) {
		c := newClient(true, readyNode("n1"))
		var execs atomic.Int32
		whole := tarExec(nodeFS{"cpu_manager_state": "x"})
		f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
			if execs.Add(1) == 1 {
				return halfTar(nil)(ctx, ns, pod, container, cmd, stdout, stderr)
			}
			return whole(ctx, ns, pod, container, cmd, stdout, stderr)
		})
		nf, err := f.Fetch(context.Background(), "n1")
		if err != nil || string(nf.Files["cpu_manager_state"]) != "x" {
			t.Fatalf("files %v, err %v", nf, err)
		}
	})
}

// Someone deletes the debug pod during the exec (a user, an eviction, a preemption): the read
// goes on through a new pod, once; a second deletion fails the node with one line.
func TestFetchPodDeletedDuringExec(t *testing.T) {
	fastRetries(t)
	for _, tt := range []struct {
		name      string
		deletions int32
		wantErr   bool
	}{
		{"deleted once: replaced", 1, false},
		{"deleted twice: fails", 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(true, readyNode("n1"))
			var execs atomic.Int32
			whole := tarExec(nodeFS{"cpu_manager_state": "x"})
			f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
				if execs.Add(1) <= tt.deletions {
					// What a kubelet does to an exec when its pod is killed.
					if err := c.Tracker().Delete(podsGR.WithVersion("v1"), ns, pod); err != nil {
						t.Error(err)
					}
					return errors.New("command terminated with exit code 137")
				}
				return whole(ctx, ns, pod, container, cmd, stdout, stderr)
			})
			nf, err := f.Fetch(context.Background(), "n1")
			creates := 0
			for _, a := range actions(c, "pods") {
				if a == "create" {
					creates++
				}
			}
			if creates != 2 {
				t.Errorf("%d pods created, want 2 (one replacement)", creates)
			}
			if tt.wantErr {
				fe := wantReason(t, err, ReasonExec)
				if strings.Contains(fe.Error(), "\n") {
					t.Errorf("not one line: %q", fe)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(nf.Warnings) != 1 || !strings.Contains(nf.Warnings[0], "deleted by someone else") {
					t.Errorf("warnings %q", nf.Warnings)
				}
			}
			if left := debugPods(t, c); len(left) != 0 {
				t.Errorf("debug pods left: %v", left)
			}
		})
	}
}

// The node goes away while its pod waits: the timeout names why.
func TestFetchNodeGoneWhileWaiting(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(c *fake.Clientset) error
		want   Reason
	}{
		{"deleted", func(c *fake.Clientset) error {
			return c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		}, ReasonNodeNotFound},
		{"NotReady", func(c *fake.Clientset) error {
			node := readyNode("n1")
			node.Status.Conditions[0].Status = corev1.ConditionUnknown
			node.Status.Conditions[0].Reason = "NodeStatusUnknown"
			return c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), node, "")
		}, ReasonNodeNotReady},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(false, readyNode("n1"))
			c.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				if err := tt.change(c); err != nil {
					t.Error(err)
				}
				return false, nil, nil
			})
			f := newFetcher(c, tarExec(nil))
			f.Options.PodRunningTimeout = 100 * time.Millisecond
			_, err := f.Fetch(context.Background(), "n1")
			wantReason(t, err, tt.want)
			if left := debugPods(t, c); len(left) != 0 {
				t.Errorf("debug pods left: %v", left)
			}
		})
	}
}

// A pod that could not be deleted (the API server gone for longer than the delete timeout)
// is named with the exact command that removes it.
func TestFetchDeleteNeverAnswered(t *testing.T) {
	fastRetries(t)
	c := newClient(true, readyNode("n1"))
	c.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	old := deleteTimeout
	deleteTimeout = 50 * time.Millisecond
	t.Cleanup(func() { deleteTimeout = old })
	nf, err := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"})).Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	want := "run `kubectl nodestate cleanup -n kube-system`"
	if len(nf.Warnings) != 1 || !strings.Contains(nf.Warnings[0], want) || !strings.Contains(nf.Warnings[0], "connection refused") {
		t.Errorf("warnings %q, want one naming %q", nf.Warnings, want)
	}
	var deletes int
	for _, a := range actions(c, "pods") {
		if a == "delete" {
			deletes++
		}
	}
	if deletes < 2 {
		t.Errorf("%d deletes, want retries", deletes)
	}
}

// An exec that comes back without an error but before the collect script's end (a killed
// container under some runtimes, kwok among them) is never read as "no file": it is read again,
// and fails the node if it keeps happening.
func TestFetchExecEndedEarly(t *testing.T) {
	fastRetries(t)
	c := newClient(true, readyNode("n1"))
	var execs atomic.Int32
	f := newFetcher(c, func(context.Context, string, string, string, []string, io.Writer, io.Writer) error {
		execs.Add(1)
		return nil // nothing on stdout, no end marker
	})
	nf, err := f.Fetch(context.Background(), "n1")
	if nf != nil {
		t.Errorf("a snapshot from an exec cut short: %+v", nf)
	}
	if fe := wantReason(t, err, ReasonExec); !strings.Contains(fe.Message, "ended early") {
		t.Errorf("message %q", fe.Message)
	}
	if n := execs.Load(); n != maxExecAttempts {
		t.Errorf("%d execs, want %d", n, maxExecAttempts)
	}
}

// An exec cut short in a pod being deleted is not run again in that pod: the pod is replaced.
func TestFetchExecCutInTerminatingPod(t *testing.T) {
	fastRetries(t)
	c := newClient(true, readyNode("n1"))
	var execs atomic.Int32
	whole := tarExec(nodeFS{"cpu_manager_state": "x"})
	f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		if execs.Add(1) == 1 {
			// Someone deletes the pod with a grace period: it is terminating, the exec cut.
			p, err := c.Tracker().Get(podsGR.WithVersion("v1"), ns, pod)
			if err != nil {
				t.Fatal(err)
			}
			terminating := p.(*corev1.Pod).DeepCopy()
			now := metav1.Now()
			terminating.DeletionTimestamp = &now
			if err := c.Tracker().Update(podsGR.WithVersion("v1"), terminating, ns); err != nil {
				t.Fatal(err)
			}
			return nil // no end marker
		}
		return whole(ctx, ns, pod, container, cmd, stdout, stderr)
	})
	nf, err := f.Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if execs.Load() != 2 || len(nf.Warnings) != 1 || !strings.Contains(nf.Warnings[0], "deleted by someone else") {
		t.Errorf("%d execs, warnings %q; want the second exec in a new pod", execs.Load(), nf.Warnings)
	}
}
