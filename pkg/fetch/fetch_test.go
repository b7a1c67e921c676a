package fetch

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var testPaths = []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint"}

func newFetcher(c *fake.Clientset, exec ExecFunc) *Fetcher {
	return &Fetcher{Client: c, Exec: exec, Paths: testPaths, Options: Options{Namespace: "kube-system"}, IndexPods: true}
}

func workloadPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", UID: "uid-app"},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", ContainerID: "containerd://c0ffee"},
		}},
	}
}

// deleteOptions returns the grace period of every pod deletion c saw.
func deleteGraces(c *fake.Clientset) []int64 {
	var graces []int64
	for _, a := range c.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			g := int64(-1)
			if p := d.GetDeleteOptions().GracePeriodSeconds; p != nil {
				g = *p
			}
			graces = append(graces, g)
		}
	}
	return graces
}

func TestFetch(t *testing.T) {
	fixSuffix(t)
	c := newClient(true, readyNode("n1"), workloadPod())
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).UID = "uid-debug"
		return false, nil, nil
	})
	var gotCmd []string
	var gotTarget string
	exec := tarExec(nodeFS{"cpu_manager_state": "cpu", "device-plugins/kubelet_internal_checkpoint": "dev"})
	f := newFetcher(c, func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		gotCmd, gotTarget = cmd, ns+"/"+pod+"/"+container
		io.WriteString(stderr, "tar: ./x: Cannot open: Permission denied\n")
		return exec(ctx, ns, pod, container, cmd, stdout, stderr)
	})

	nf, err := f.Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	want := &Snapshot{
		Node:           "n1",
		KubeletVersion: "v1.36.3",
		// What the kubelet's predicate reads of the node object beyond its allocatable.
		NodeObject: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelOSStable: "linux"}}},
		// Read live: known, and empty (the node has no extended resources).
		Devices: noDevices,
		Files: map[string][]byte{
			"cpu_manager_state":                          []byte("cpu"),
			"device-plugins/kubelet_internal_checkpoint": []byte("dev"),
		},
		Missing: []string{"memory_manager_state"},
		Pods: &PodIndex{
			// The debug pod itself is still there when the pods are listed, and marked.
			Pods: map[string]PodRef{"uid-app": {"team-a", "app"}, "uid-debug": {"kube-system", "nodestate-n1-xxxxx"}},
			Containers: map[string]ContainerRef{
				"c0ffee": {"team-a", "app", "main"},
			},
			ContainerNames: map[string]map[string]bool{"uid-debug": {"nodestate": true}},
			Statuses:       map[string][]ContainerStatus{"uid-app": {{Name: "main", ID: "containerd://c0ffee"}}},
			Debug:          map[string]bool{"uid-debug": true},
			Active:         map[string]bool{"uid-app": true, "uid-debug": true},
			DebugNamespace: "kube-system",
		},
		Warnings: []string{"tar: ./x: Cannot open: Permission denied"},
	}
	if nf.Pods != nil {
		if len(nf.Pods.Running) != 1 || nf.Pods.Running[0].Name != "app" {
			t.Errorf("running pods: %v", nf.Pods.Running)
		}
		nf.Pods.Running = nil
	}
	if diff := cmp.Diff(want, nf); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
	if gotTarget != "kube-system/nodestate-n1-xxxxx/nodestate" {
		t.Errorf("exec into %s", gotTarget)
	}
	if diff := cmp.Diff([]string{"./cpu_manager_state", "./memory_manager_state", "./device-plugins/kubelet_internal_checkpoint"}, gotCmd[4:]); diff != "" {
		t.Errorf("exec args (-want +got):\n%s", diff)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
	if diff := cmp.Diff([]int64{0}, deleteGraces(c)); diff != "" {
		t.Errorf("pod deletions' grace periods (-want +got):\n%s", diff)
	}
}

// Every way out of Fetch after the pod exists deletes it.
func TestFetchDeletesPodOnFailure(t *testing.T) {
	fastRetries(t) // a stream reset and a truncated archive are retried first
	tests := []struct {
		name   string
		exec   ExecFunc
		cancel bool // cancel the context once exec starts
		reason Reason
	}{
		{
			name: "exec error",
			exec: func(context.Context, string, string, string, []string, io.Writer, io.Writer) error {
				return errors.New("stream reset")
			},
			reason: ReasonExec,
		},
		{
			name: "exec forbidden",
			exec: func(context.Context, string, string, string, []string, io.Writer, io.Writer) error {
				return apierrors.NewForbidden(podsGR, "p", errors.New(`User "u" cannot create resource "pods/exec" in API group "" in the namespace "kube-system"`))
			},
			reason: ReasonForbidden,
		},
		{
			name: "hostile archive",
			exec: func(_ context.Context, _, _, _ string, _ []string, stdout, _ io.Writer) error {
				_, err := stdout.Write(makeTar(&testing.T{}, entry{name: "../../etc/shadow", body: "x"}))
				return err
			},
			reason: ReasonBadArchive,
		},
		{
			name: "truncated archive",
			exec: func(_ context.Context, _, _, _ string, _ []string, stdout, _ io.Writer) error {
				_, err := stdout.Write(makeTar(&testing.T{}, entry{name: "cpu_manager_state", body: strings.Repeat("x", 2000)})[:900])
				return err
			},
			reason: ReasonBadArchive,
		},
		{
			name: "no tar in the image",
			exec: func(_ context.Context, _, _, _ string, _ []string, _, stderr io.Writer) error {
				_, err := io.WriteString(stderr, noTarMarker+"\n")
				return err
			},
			reason: ReasonExec,
		},
		{
			name: "canceled during exec",
			exec: func(ctx context.Context, _, _, _ string, _ []string, _, _ io.Writer) error {
				<-ctx.Done()
				return ctx.Err()
			},
			cancel: true,
			reason: ReasonCanceled,
		},
		{
			name: "exec ignores cancellation but output is cut",
			exec: func(ctx context.Context, _, _, _ string, _ []string, stdout, _ io.Writer) error {
				<-ctx.Done()
				_, err := stdout.Write(make([]byte, 512))
				return err
			},
			cancel: true,
			reason: ReasonCanceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(true, readyNode("n1"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			exec := tt.exec
			if tt.cancel {
				exec = func(ctx context.Context, ns, pod, cn string, cmd []string, o, e io.Writer) error {
					cancel() // Ctrl-C while the tar streams
					return tt.exec(ctx, ns, pod, cn, cmd, o, e)
				}
			}
			_, err := newFetcher(c, exec).Fetch(ctx, "n1")
			fe := wantReason(t, err, tt.reason)
			if fe.Node != "n1" {
				t.Errorf("error node %q", fe.Node)
			}
			if left := debugPods(t, c); len(left) != 0 {
				t.Errorf("debug pods left: %v", left)
			}
		})
	}
}

func TestFetchImagePullFailure(t *testing.T) {
	c := newClient(false, readyNode("n1"))
	w := watch.NewFakeWithChanSize(1, false)
	c.PrependWatchReactor("pods", clienttesting.DefaultWatchReactor(w, nil))
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		waiting("ImagePullBackOff", "Back-off pulling image")(pod)
		w.Modify(pod)
		return false, nil, nil
	})
	f := newFetcher(c, tarExec(nil))
	f.Options.Image = "registry.local/busybox:1.37"
	_, err := f.Fetch(context.Background(), "n1")
	fe := wantReason(t, err, ReasonImagePull)
	if fe.Short != "ImagePullBackOff" || !strings.Contains(err.Error(), "registry.local/busybox:1.37") {
		t.Errorf("got %q (short %q)", err, fe.Short)
	}
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// Nodes a pod cannot read are refused before anything is created on them.
func TestFetchNodeChecks(t *testing.T) {
	tests := []struct {
		name   string
		node   *corev1.Node
		reason Reason
		text   string
	}{
		{
			name:   "windows by label",
			node:   readyNode("n1", func(n *corev1.Node) { n.Labels[corev1.LabelOSStable] = "windows" }),
			reason: ReasonUnsupportedOS, text: "windows nodes are not supported yet, skipped",
		},
		{
			name: "windows by node info",
			node: readyNode("n1", func(n *corev1.Node) {
				delete(n.Labels, corev1.LabelOSStable)
				n.Status.NodeInfo.OperatingSystem = "windows"
			}),
			reason: ReasonUnsupportedOS, text: "not supported yet, skipped",
		},
		{
			name: "not ready",
			node: readyNode("n1", func(n *corev1.Node) {
				n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
			}),
			reason: ReasonNodeNotReady, text: "Ready=Unknown (NodeStatusUnknown): Kubelet stopped posting node status.",
		},
		{
			name:   "no ready condition",
			node:   readyNode("n1", func(n *corev1.Node) { n.Status.Conditions = nil }),
			reason: ReasonNodeNotReady, text: "no Ready condition",
		},
		{
			name:   "no such node",
			node:   readyNode("other"),
			reason: ReasonNodeNotFound, text: "node n1: no such node",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(true, tt.node)
			_, err := newFetcher(c, tarExec(nil)).Fetch(context.Background(), "n1")
			wantReason(t, err, tt.reason)
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("%q does not contain %q", err, tt.text)
			}
			if got := actions(c, "pods"); len(got) != 0 {
				t.Errorf("pod actions %v, want none", got)
			}
		})
	}
}

func TestFetchCreateRejected(t *testing.T) {
	c := newClient(false, readyNode("n1"))
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsGR, "nodestate-n1-xxxxx",
			errors.New(`violates PodSecurity "baseline:latest": hostPath volumes (volume "kubelet")`))
	})
	_, err := newFetcher(c, tarExec(nil)).Fetch(context.Background(), "n1")
	wantReason(t, err, ReasonPodSecurity)
	want := `node n1: namespace "kube-system" enforces Pod Security level "baseline"`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q\nwant prefix %q", err, want)
	}
	if got := actions(c, "pods"); !slices.Equal(got, []string{"create"}) {
		t.Errorf("pod actions %v, want only the create", got)
	}
}

// A create that never gets an answer is retried until the pod-running timeout; it may have
// created the pod: it is deleted by name.
func TestFetchCreateNoAnswer(t *testing.T) {
	fixSuffix(t)
	c := newClient(false, readyNode("n1"))
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("http2: client connection lost")
	})
	fastRetries(t)
	f := newFetcher(c, tarExec(nil))
	f.Options.PodRunningTimeout = 200 * time.Millisecond
	_, err := f.Fetch(context.Background(), "n1")
	fe := wantReason(t, err, ReasonAPI)
	if !strings.Contains(fe.Message, "client connection lost") {
		t.Errorf("the last failure is not named: %q", err)
	}
	got := actions(c, "pods")
	if len(got) < 3 || got[len(got)-1] != "delete" || slices.Contains(got[:len(got)-1], "delete") {
		t.Errorf("pod actions %v, want retried creates then one delete", got)
	}
}

func TestFetchDeleteFails(t *testing.T) {
	failDelete := func(c *fake.Clientset) {
		c.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(podsGR, "p",
				errors.New(`User "u" cannot delete resource "pods" in API group "" in the namespace "kube-system"`))
		})
	}
	t.Run("after success: a warning", func(t *testing.T) {
		c := newClient(true, readyNode("n1"))
		failDelete(c)
		nf, err := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"})).Fetch(context.Background(), "n1")
		if err != nil {
			t.Fatal(err)
		}
		if len(nf.Warnings) != 1 || !strings.Contains(nf.Warnings[0], "kubectl nodestate cleanup") {
			t.Errorf("warnings %q", nf.Warnings)
		}
	})
	t.Run("after an error: on the error", func(t *testing.T) {
		c := newClient(true, readyNode("n1"))
		failDelete(c)
		_, err := newFetcher(c, func(context.Context, string, string, string, []string, io.Writer, io.Writer) error {
			return errors.New("boom")
		}).Fetch(context.Background(), "n1")
		fe := wantReason(t, err, ReasonExec)
		if fe.Cleanup == nil || !strings.Contains(err.Error(), "could not be deleted") {
			t.Errorf("cleanup failure not reported: %q", err)
		}
	})
}

func TestFetchInvalid(t *testing.T) {
	c := newClient(true, readyNode("n1"))
	f := newFetcher(c, tarExec(nil))
	f.Paths = []string{"../etc/shadow"}
	_, err := f.Fetch(context.Background(), "n1")
	wantReason(t, err, ReasonInvalid)
	if got := c.Actions(); len(got) != 0 {
		t.Errorf("API calls %v, want none", got)
	}
}

func TestFetchPodIndexFailureIsAWarning(t *testing.T) {
	c := newClient(true, readyNode("n1"))
	c.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsGR, "",
			errors.New(`User "u" cannot list resource "pods" in API group "" at the cluster scope`))
	})
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).UID = "uid-debug"
		return false, nil, nil
	})
	nf, err := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"})).Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(nf.Pods.Pods) != 0 || len(nf.Warnings) != 1 || !strings.Contains(nf.Warnings[0], "not allowed to list pods") {
		t.Errorf("pods %v, warnings %q", nf.Pods, nf.Warnings)
	}
	// Without the list, the plugin still knows its own pod: the one it created.
	if !nf.Pods.DebugPod("uid-debug") {
		t.Errorf("the debug pod's UID is not marked: %+v", nf.Pods)
	}
}

// Exec timeouts are reported as such, not as cancellation.
func TestFetchExecTimeout(t *testing.T) {
	c := newClient(true, readyNode("n1"))
	f := newFetcher(c, func(ctx context.Context, _, _, _ string, _ []string, _, _ io.Writer) error {
		<-ctx.Done()
		return ctx.Err()
	})
	f.Options.ExecTimeout = 20 * time.Millisecond
	_, err := f.Fetch(context.Background(), "n1")
	wantReason(t, err, ReasonTimeout)
	if left := debugPods(t, c); len(left) != 0 {
		t.Errorf("debug pods left: %v", left)
	}
}
