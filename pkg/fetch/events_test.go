package fetch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

func debugPodRef() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nodestate-n1-xxxxx", Namespace: "kube-system", UID: "uid-debug"}}
}

// kubeletEvent is an event as the kubelet records it about pod.
func kubeletEvent(pod *corev1.Pod, typ, reason, message string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + ".1", Namespace: pod.Namespace, ResourceVersion: "7"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			APIVersion: "v1"},
		Type: typ, Reason: reason, Message: message,
		Source: corev1.EventSource{Component: "kubelet", Host: "n1"},
	}
}

// The messages are the real kubelet's (v1.37.1, see ../shared/docs/real-node.md).
func TestEventError(t *testing.T) {
	pod := debugPodRef()
	opts := Options{Namespace: "kube-system", KubeletRootDir: "/var/lib/kubelet-wrong"}
	tests := []struct {
		name   string
		ev     *corev1.Event
		reason Reason // "" means no failure
		has    []string
	}{
		{
			name: "wrong kubelet root dir",
			ev: kubeletEvent(pod, "Warning", "FailedMount",
				`MountVolume.SetUp failed for volume "kubelet" : hostPath type check failed: /var/lib/kubelet-wrong is not a directory`),
			reason: ReasonRootDir,
			has:    []string{"--kubelet-root-dir", `"/var/lib/kubelet-wrong"`, "is not a directory", "kubelet: FailedMount"},
		},
		{
			name: "wrong kubelet root dir, 1.38's words",
			ev: kubeletEvent(pod, "Warning", "FailedMount",
				`MountVolume.SetUp failed for volume "kubelet" : hostPath /nonexistent/kubelet doesn't exist`),
			reason: ReasonRootDir,
			has:    []string{"--kubelet-root-dir", `"/var/lib/kubelet-wrong"`, "does not exist on the node", "set --kubelet-root-dir", "kubelet: FailedMount"},
		},
		{
			name:   "other mount failure",
			ev:     kubeletEvent(pod, "Warning", "FailedMount", `MountVolume.SetUp failed for volume "kubelet" : permission denied`),
			reason: ReasonRootDir,
			has:    []string{"--kubelet-root-dir", "permission denied"},
		},
		{
			name: "sandbox",
			ev: kubeletEvent(pod, "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error: code = Unknown "+
				"desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "+
				"unable to start container process: can't get final child's PID from pipe: EOF: unknown"),
			reason: ReasonSandbox,
			has:    []string{"container runtime", "can't get final child's PID"},
		},
		{
			name: "admission: out of cpu (a LimitRange gave it requests)",
			ev: kubeletEvent(pod, "Warning", "OutOfcpu",
				"Pod was rejected: Node didn't have enough resource: cpu, requested: 10, used: 1000, capacity: 1000"),
			reason: ReasonPodFailed,
			has:    []string{"LimitRange", `namespace "kube-system"`, "--namespace", "requested: 10"},
		},
		{
			name:   "admission: out of pods",
			ev:     kubeletEvent(pod, "Warning", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"),
			reason: ReasonPodFailed,
			has:    []string{"maxPods"},
		},
		{
			name:   "admission: pressure",
			ev:     kubeletEvent(pod, "Warning", "Evicted", "The node had condition: [MemoryPressure]."),
			reason: ReasonPodFailed,
			has:    []string{"MemoryPressure", "BestEffort"},
		},
		{name: "normal event", ev: kubeletEvent(pod, "Normal", "Pulled", `Container image "busybox:1.37" already present on machine`)},
		{name: "retry that may succeed", ev: kubeletEvent(pod, "Warning", "BackOff", "Back-off pulling image")},
		{
			name: "another pod's event",
			ev: kubeletEvent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "kube-system", UID: "uid-app"}},
				"Warning", "FailedMount", "hostPath type check failed"),
		},
		{
			name: "same name, earlier pod (other UID)",
			ev: kubeletEvent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: "uid-old"}},
				"Warning", "FailedMount", "hostPath type check failed"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := EventError(tt.ev, pod, opts)
			if tt.reason == "" {
				if fe != nil {
					t.Fatalf("EventError = %v, want none", fe)
				}
				return
			}
			if fe == nil {
				t.Fatalf("EventError = nil, want %s", tt.reason)
			}
			wantReason(t, fe, tt.reason)
			if fe.Short != tt.ev.Reason {
				t.Errorf("Short %q, want the event's reason %q", fe.Short, tt.ev.Reason)
			}
			for _, s := range tt.has {
				if !strings.Contains(fe.Error(), s) {
					t.Errorf("%q does not mention %q", fe, s)
				}
			}
		})
	}
}

// An admission rejection reaches the pod's status too (phase Failed, status.reason): the same
// hint names the fix.
func TestStartStateAdmissionHint(t *testing.T) {
	p := pendingPod(phase(corev1.PodFailed, "OutOfpods", "Node didn't have enough resource: pods"))
	_, e := startState(p, "img")
	wantReason(t, e, ReasonPodFailed)
	if !strings.Contains(e.Error(), "maxPods") || !strings.Contains(e.Error(), "OutOfpods") {
		t.Errorf("%q does not name maxPods and the kubelet's reason", e)
	}
}

// A wrong --kubelet-root-dir fails at once on the node (FailedMount); Fetch must say so from the
// event instead of waiting out the pod-running timeout (an hour here: the test would hit its
// own deadline and fail with a timeout instead).
func TestFetchFailsFastOnWarningEvent(t *testing.T) {
	fixSuffix(t)
	c := newClient(false, readyNode("n1"))
	events := watch.NewFake()
	var sel string
	c.PrependWatchReactor("events", func(a clienttesting.Action) (bool, watch.Interface, error) {
		sel = a.(clienttesting.WatchAction).GetWatchRestrictions().Fields.String()
		return true, events, nil
	})
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		pod.UID = types.UID("uid-debug")
		go events.Add(kubeletEvent(pod, "Warning", "FailedMount",
			`MountVolume.SetUp failed for volume "kubelet" : hostPath type check failed: /nope is not a directory`))
		return false, nil, nil
	})
	f := newFetcher(c, tarExec(nodeFS{}))
	f.Options.KubeletRootDir = "/nope"
	f.Options.PodRunningTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := f.Fetch(ctx, "n1")
	fe := wantReason(t, err, ReasonRootDir)
	if !strings.Contains(fe.Error(), `--kubelet-root-dir "/nope"`) || fe.Node != "n1" {
		t.Errorf("error %q: want node n1 and the flag's value", fe)
	}
	for _, s := range []string{"involvedObject.uid=uid-debug", "involvedObject.name=nodestate-n1-xxxxx", "type=Warning"} {
		if !strings.Contains(sel, s) {
			t.Errorf("event watch selector %q lacks %q", sel, s)
		}
	}
	if left := debugPods(t, c); len(left) > 0 {
		t.Errorf("debug pods left: %v", left)
	}
}

// Without permission to watch events, Fetch still works: the events only end a wait early.
func TestFetchWithoutEventPermission(t *testing.T) {
	fixSuffix(t)
	c := newClient(true, readyNode("n1"))
	c.PrependWatchReactor("events", func(a clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "",
			errors.New(`User "u" cannot watch resource "events" in API group "" in the namespace "kube-system"`))
	})
	f := newFetcher(c, tarExec(nodeFS{"cpu_manager_state": "x"}))
	nf, err := f.Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if string(nf.Files["cpu_manager_state"]) != "x" {
		t.Errorf("files %v", nf.Files)
	}
}
