//go:build e2e

package e2e

// The exec mapper. kwok runs `exec` ON THE HOST, in the workDir of the kwok
// Exec object named like the pod (same namespace). For every pod labelled
// app.kubernetes.io/managed-by=kubectl-nodestate that is bound to a node, the
// mapper creates that Exec with workDir = the node's simulated kubelet dir
// (registered by CreateNode, else the node's nodestate-e2e/kubelet-dir
// annotation, else an empty dir), then annotates the pod
// nodestate-e2e/exec-ready=true; the pod-ready stage waits for that
// annotation, so the pod is Running only once exec will land in the right
// dir. The Exec is deleted when the pod is gone. A pod whose container runs the node reader
// (--reader=binary) is marked, and its node pointed at the node reader proxy (readerproxy.go),
// which runs the reader's exec as the plugin binary under test, in the same dir.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	nodestatelib "github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

const mapperWorkers = 16

type execMapper struct {
	cp    *controlPlane
	queue workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex
	pods map[string]*corev1.Pod // "ns/name" -> latest seen
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func startExecMapper(ctx context.Context, cp *controlPlane) (<-chan struct{}, error) {
	m := &execMapper{
		cp:    cp,
		pods:  map[string]*corev1.Pod{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	rv, err := m.relist(ctx)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range mapperWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.next(ctx) {
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.watchLoop(ctx, rv)
	}()
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
		wg.Wait()
		close(done)
	}()
	return done, nil
}

// relist replaces the pod map with a fresh list, enqueues every key (old
// and new) and returns the list's resourceVersion.
func (m *execMapper) relist(ctx context.Context) (string, error) {
	// RV "0": served from the watch cache, so the watch below can start at
	// once (from a quorum list's RV the first watch lagged ~2 s).
	list, err := m.cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: ManagedBySelector, ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	old := m.pods
	m.pods = make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		m.pods[podKey(&list.Items[i])] = &list.Items[i]
	}
	m.mu.Unlock()
	for k := range old {
		m.queue.Add(k)
	}
	for i := range list.Items {
		m.queue.Add(podKey(&list.Items[i]))
	}
	return list.ResourceVersion, nil
}

// watchLoop is a minimal reflector: watch from rv, relist when the watch
// ends or errors (e.g. 410 Gone).
func (m *execMapper) watchLoop(ctx context.Context, rv string) {
	for ctx.Err() == nil {
		w, err := m.cp.client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
			LabelSelector: ManagedBySelector, ResourceVersion: rv, AllowWatchBookmarks: true,
		})
		if err == nil {
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if ev.Type == watch.Error || !ok {
					if ctx.Err() == nil {
						logf2("exec mapper: watch ended with %s %v; relisting", ev.Type, ev.Object)
					}
					break
				}
				rv = p.ResourceVersion
				if ev.Type == watch.Bookmark {
					continue
				}
				m.mu.Lock()
				if ev.Type == watch.Deleted {
					delete(m.pods, podKey(p))
				} else {
					m.pods[podKey(p)] = p
				}
				m.mu.Unlock()
				m.queue.Add(podKey(p))
			}
			w.Stop()
		}
		for ctx.Err() == nil {
			if rv, err = m.relist(ctx); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func (m *execMapper) next(ctx context.Context) bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	if err := m.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			logf2("exec mapper: %s: %v (retrying)", key, err)
		}
		m.queue.AddRateLimited(key)
		return true
	}
	m.queue.Forget(key)
	return true
}

func (m *execMapper) sync(ctx context.Context, key string) error {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	execs := m.cp.dynamic.Resource(execGVR).Namespace(ns)

	m.mu.Lock()
	pod, exists := m.pods[key]
	m.mu.Unlock()
	if !exists {
		readerPods.Delete(key)
		// Pod gone: delete its Exec unless it already belongs to a newer
		// pod of the same name (the store would show that pod then).
		ex, err := execs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		uid := ex.GetUID()
		err = execs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		return nil
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return nil
	}
	if pod.Annotations[execReadyAnnotation] == "true" {
		return nil
	}
	if isNodeReaderPod(pod) {
		readerPods.Store(key, true)
		if err := m.pointNodeAtReaderProxy(ctx, pod.Spec.NodeName); err != nil {
			return err
		}
	}
	workDir := emptyDir
	if d, ok := kubeDirs.Load(pod.Spec.NodeName); ok {
		workDir = d.(string)
	} else if node, err := m.cp.client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err == nil && node.Annotations[KubeletDirAnnotation] != "" {
		workDir = node.Annotations[KubeletDirAnnotation]
	}
	want := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Exec",
		"metadata": map[string]any{
			"name":        name,
			"namespace":   ns,
			"annotations": map[string]any{execPodUIDAnnotation: string(pod.UID)},
		},
		"spec": map[string]any{
			"execs": []any{map[string]any{"local": map[string]any{"workDir": workDir, "envs": m.cp.execEnv(pod.Spec.NodeName)}}},
		},
	}}
	_, err := execs.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Left over from an earlier pod of the same name: replace its spec.
		cur, gerr := execs.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		want.SetResourceVersion(cur.GetResourceVersion())
		_, err = execs.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create Exec: %w", err)
	}
	// kwok serves exec from its own cache of Exec objects, which can lag the create (about one
	// exec in a thousand failed with "no exec found"): wait until an exec goes through before
	// letting the pod become Running. kwok serves exec on a Pending pod too.
	if err := m.probeExec(ctx, pod); err != nil {
		// After an API server restart kwok's cache of Exec objects can lag longer than the probe
		// waits (CI, stop 40: a debug pod made Running then failed its exec with "no exec
		// found"): keep the pod Pending and sync again, until kwok serves the exec.
		if strings.Contains(err.Error(), kwokExecLag) {
			return err
		}
		logf2("exec mapper: %v", err) // e.g. a node kwok does not manage: let the test see it
	}
	// The uid makes the patch fail if the pod was replaced meanwhile.
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:"true"}}}`, pod.UID, execReadyAnnotation)
	_, err = m.cp.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // a newer pod of that name gets its own sync
	}
	return err
}

// kwokExecLag is kwok's answer to an exec whose Exec object its cache does not hold yet.
const kwokExecLag = "no exec found"

// probeExec runs `true` in the pod until kwok's exec handler knows its Exec object.
func (m *execMapper) probeExec(ctx context.Context, pod *corev1.Pod) error {
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	// kwok's lag alone ("no exec found") is waited out for up to 15 s: with a hundred Exec
	// objects created at once on a busy machine it exceeded a second (TestSmokeScale). Any
	// other failure keeps the short budget, so a paused API server does not hold the mapper.
	// The probe is an empty read, the only kind of exec the exec policy admits in the plugin's
	// namespace (the shell reader's script with no argument). A node reader pod's goes through
	// only once the API server sends the node's exec to the reader proxy, which runs it as
	// `true` (readerProbe).
	probe := fetch.ShellReaderCommand(nodestatelib.DebugPodReads().ShellScript, nil, nil)
	if isNodeReaderPod(pod) {
		probe = readerProbe
	}
	var err error
	lagUntil := time.Now().Add(15 * time.Second)
	for tries := 0; tries < 50 || (strings.Contains(fmt.Sprint(err), kwokExecLag) && time.Now().Before(lagUntil)); tries++ {
		if _, _, err = ExecInPod(ctx, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name, probe); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("exec into %s/%s still fails after its Exec was created: %w", pod.Namespace, pod.Name, err)
}
