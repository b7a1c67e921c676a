package nodestateadmission

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/publishedtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// The nodes of these tests are examples/admit-node's machine and config, published with its
// real checkpoints (loaded) or none (a fresh node).
var example = publishedtest.Example{Root: "../../.."}

func nodeState(t testing.TB, node string, loaded bool, topologyPolicy string, readAt time.Time) *nodestate.PublishedState {
	return example.State(t, node, loaded, topologyPolicy, readAt)
}

func configMap(t testing.TB, s *nodestate.PublishedState) *corev1.ConfigMap {
	return publishedtest.ConfigMap(t, s, nodestate.PublishedNamespace)
}

// guaranteed is a Guaranteed pod of one container.
func guaranteed(name, cpu, memory string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
}

// harness is a real scheduler framework with the plugin at PreFilter, Filter and Reserve,
// over a fake clientset holding the published ConfigMaps.
type harness struct {
	t testing.TB
	// capacity is the extended resources the nodes' status counts (the device plugins').
	capacity corev1.ResourceList
	// onNode are the pods the scheduler has on each node (its NodeInfo's).
	onNode map[string][]*corev1.Pod
	fw     framework.Framework
	plugin *Plugin
	client *fake.Clientset
	// activated are the pods the plugin moved to the scheduling queue's activeQ.
	activated *activations
}

// activations is the scheduling queue's PodActivator, as the plugin sees it: it records.
type activations struct {
	mu   sync.Mutex
	pods []string
}

func (a *activations) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range pods {
		a.pods = append(a.pods, key)
	}
}

// wait returns the pods activated since the last take once there are want of them (want 0:
// after the informer's handler had time to activate any), sorted.
func (a *activations) wait(want int) []string {
	deadline := time.Now().Add(5 * time.Second)
	if want == 0 {
		deadline = time.Now().Add(200 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		a.mu.Lock()
		n := len(a.pods)
		a.mu.Unlock()
		if want > 0 && n >= want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return a.take()
}

// take returns the pods activated since the last take, sorted.
func (a *activations) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.pods
	a.pods = nil
	slices.Sort(out)
	return out
}

func newHarness(t testing.TB, args string, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, args, nil, objs...)
}

// newHarnessWith is newHarness whose framework hands plugins kubeConfig (the fallback plugin
// builds its own client from it).
func newHarnessWith(t testing.TB, args string, kubeConfig *rest.Config, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{t: t, client: fake.NewClientset(objs...), activated: &activations{}}
	factory := func(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
		p, err := New(ctx, obj, handle)
		if err == nil {
			h.plugin = p.(*Plugin)
		}
		return p, err
	}
	withArgs := func(_ *frameworkruntime.Registry, profile *schedulerapi.KubeSchedulerProfile) {
		if args != "" {
			profile.PluginConfig = append(profile.PluginConfig, schedulerapi.PluginConfig{Name: Name, Args: &runtime.Unknown{Raw: []byte(args), ContentType: runtime.ContentTypeJSON}})
		}
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Filter", "Reserve", "PostBind"),
		withArgs,
	}, "nodestate-scheduler", frameworkruntime.WithClientSet(h.client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(h.client, 0)),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewEmptySnapshot()),
		frameworkruntime.WithPodActivator(h.activated), frameworkruntime.WithKubeConfig(kubeConfig))
	if err != nil {
		t.Fatal(err)
	}
	h.fw = fw
	// The scheduler's nodes are the ones filter builds (the informer is not started here).
	h.plugin.nodeOf = func(name string) (*corev1.Node, error) { return h.node(name), nil }
	return h
}

// node is the Node object of name as the scheduler holds it: kubelet v1.37.1, capacity's
// extended resources.
func (h *harness) node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"},
		Capacity: h.capacity, Allocatable: h.capacity}}
}

// filter runs PreFilter then Filter for pod on node, as a scheduling cycle does.
func (h *harness) filter(pod *corev1.Pod, node string) *fwk.Status {
	h.t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, st, _ := h.fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() {
		h.t.Fatalf("PreFilter %s: %v", pod.Name, st)
	}
	info := framework.NewNodeInfo()
	info.SetNode(h.node(node))
	for _, p := range h.onNode[node] {
		info.AddPod(p)
	}
	return h.fw.RunFilterPlugins(ctx, state, pod, info)
}

func (h *harness) reserve(pod *corev1.Pod, node string) {
	h.t.Helper()
	if st := h.fw.RunReservePluginsReserve(context.Background(), framework.NewCycleState(), pod, node); !st.IsSuccess() {
		h.t.Fatalf("Reserve %s on %s: %v", pod.Name, node, st)
	}
}

func (h *harness) unreserve(pod *corev1.Pod, node string) {
	h.fw.RunReservePluginsUnreserve(context.Background(), framework.NewCycleState(), pod, node)
}

// publish writes cm through the API and waits for the plugin's informer to hold its fingerprint.
func (h *harness) publish(cm *corev1.ConfigMap) {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if _, err := h.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := h.plugin.states.get(cm.Name); p != nil && p.fingerprint == cm.Annotations[nodestate.FingerprintAnnotation] {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("the plugin never saw ConfigMap %s's fingerprint", cm.Name)
}

// statusOf is a status's code and message, for failures.
func statusOf(st *fwk.Status) string {
	if st == nil {
		return "Success"
	}
	b, _ := json.Marshal(st.Reasons())
	return st.Code().String() + " " + string(b)
}

func TestMain(m *testing.M) {
	metrics.Register() // the framework's instrumented plugins need the scheduler's metrics
	os.Exit(m.Run())
}

// republish updates cm through the API (its fingerprint may be the one the plugin holds) and
// waits for the plugin's informer to have taken it: its read time.
func (h *harness) republish(cm *corev1.ConfigMap) {
	h.t.Helper()
	if _, err := h.client.CoreV1().ConfigMaps(cm.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	want, _ := time.Parse(time.RFC3339, cm.Annotations[nodestate.ReadAtAnnotation])
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := h.plugin.states.get(cm.Name); p != nil && !p.readAt.Before(want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("the plugin never saw ConfigMap %s read at %s", cm.Name, want)
}
