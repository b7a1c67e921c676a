package fetch

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"golang.org/x/sync/errgroup"
)

// readyNodes are n ready nodes named n00, n01, ...: as objects for a fake clientset, and their names.
func readyNodes(n int) ([]runtime.Object, []string) {
	var objs []runtime.Object
	var names []string
	for i := range n {
		name := fmt.Sprintf("n%02d", i)
		objs = append(objs, readyNode(name))
		names = append(names, name)
	}
	return objs, names
}

// runsAfterCreate makes pod Running in c once its create has stored it, so the wait for it goes
// through a watch rather than the create's answer.
func runsAfterCreate(c *fake.Clientset, pod *corev1.Pod) {
	running := pod.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	go func() {
		for c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), running, running.Namespace) != nil {
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

func readyNode(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: "linux"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OperatingSystem: "linux"},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

// newClient returns a fake clientset holding objs. Pods it creates come back Running, as if a
// kubelet had started them at once, unless startPods is false.
func newClient(startPods bool, objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	if startPods {
		c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
			pod.Status.Phase = corev1.PodRunning
			return false, nil, nil // let the tracker store it
		})
	}
	return c
}

// nodeFS is a fake node's kubelet dir for tarExec.
type nodeFS map[string]string

// tarExec answers the collect command like the real script: a tar of the requested paths that
// exist, nothing at all when none does.
func tarExec(fs nodeFS) ExecFunc {
	return func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		if len(cmd) < 4 || cmd[0] != "sh" || cmd[2] != collectScript {
			return fmt.Errorf("unexpected command %q", cmd)
		}
		var present []string
		for _, arg := range cmd[4:] {
			if _, ok := fs[strings.TrimPrefix(arg, "./")]; ok {
				present = append(present, arg)
			}
		}
		defer io.WriteString(stderr, endMarker+"\n") // what the script's last line prints
		if len(present) == 0 {
			return nil
		}
		tw := tar.NewWriter(stdout)
		for _, name := range present {
			body := fs[strings.TrimPrefix(name, "./")]
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := io.WriteString(tw, body); err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

// debugPods lists the debug pods left in the fake cluster.
func debugPods(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	list, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	return names
}

// actions returns the verbs c saw on resource, in order.
func actions(c *fake.Clientset, resource string) []string {
	var verbs []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource == resource {
			verbs = append(verbs, a.GetVerb())
		}
	}
	return verbs
}

func wantReason(t *testing.T, err error, want Reason) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", want)
	}
	fe, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T (%v), want *Error", err, err)
	}
	if fe.Reason != want {
		t.Fatalf("reason %s (%v), want %s", fe.Reason, err, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("message is not one line: %q", err.Error())
	}
	return fe
}

// fanout fetches nodes on one Fanout, limit at a time, as nodestate does, and returns each
// node's error (nil: read).
func fanout(ctx context.Context, f *Fetcher, nodes []NodeInfo, limit int) map[string]error {
	fo := f.Fanout(ctx)
	defer fo.Close()
	var mu sync.Mutex
	got := map[string]error{}
	var g errgroup.Group
	g.SetLimit(limit)
	for _, n := range nodes {
		g.Go(func() error {
			_, err := fo.Fetch(ctx, n)
			mu.Lock()
			defer mu.Unlock()
			got[n.Name] = err
			return nil
		})
	}
	_ = g.Wait()
	return got
}
