// Package nodestateadmission is the NodeStateAdmission scheduler plugin: it filters out the
// nodes whose kubelet would refuse the pod, by replaying the kubelet's admission (topology,
// CPU, memory and device managers, as the node's kubelet release runs them) on the state each
// node publishes (kubectl-nodestate node-publish), plus the pods this scheduler reserved there
// that the node has not reported yet.
package nodestateadmission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	nrtconfig "sigs.k8s.io/scheduler-plugins/apis/config"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesourcetopology"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Name is the plugin's name in a scheduler profile.
const Name = "NodeStateAdmission"

// Plugin is NodeStateAdmission.
type Plugin struct {
	args     Args
	states   *states
	reserved *reservations
	// rejected are the pods to retry when a node's published state changes.
	rejected *rejected
	// activate moves pods to the scheduling queue's activeQ (the framework's PodActivator).
	activate func(klog.Logger, map[string]*corev1.Pod)
	// nodeOf is a Node object from the scheduler's informer (nil: none known).
	nodeOf func(name string) (*corev1.Node, error)
	// kubeletsSeen are the nodes' kubelet versions met, to log once which of them are builds the
	// rules were not checked against (sayUnchecked).
	kubeletsSeen      sync.Map
	kubeletsSeenCount atomic.Int64
	// topologyMatch is the upstream NodeResourceTopologyMatch when it is the fallback, else nil.
	topologyMatch topologyMatch
	now           func() time.Time
}

var (
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ReservePlugin     = (*Plugin)(nil)
	_ fwk.PostBindPlugin    = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
)

// topologyMatch is the upstream NodeResourceTopologyMatch's extension points this plugin runs
// it at when it is the fallback: PreFilter (its preemption stack) and Filter for the verdict;
// Reserve, Unreserve and PostBind for every pod, so that its cache counts what this profile
// placed as it would in a profile of its own; its events, so that its refusals are retried.
type topologyMatch interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
	fwk.ReservePlugin
	fwk.PostBindPlugin
	fwk.EnqueueExtensions
}

// newTopologyMatch builds the upstream plugin from the carried source (scheduler-plugins at
// 903da7d, hack/nrtscheduler/third_party): its factory, its args type.
var newTopologyMatch = func(ctx context.Context, args *nrtconfig.NodeResourceTopologyMatchArgs, h fwk.Handle) (topologyMatch, error) {
	p, err := noderesourcetopology.New(ctx, args, h)
	if err != nil {
		return nil, err
	}
	tm, ok := p.(topologyMatch)
	if !ok {
		return nil, fmt.Errorf("%s: %T lacks an extension point this plugin runs it at", noderesourcetopology.Name, p)
	}
	return tm, nil
}

// New is the plugin's factory (frameworkruntime.PluginFactory): it watches the published
// ConfigMaps of its namespace and label only, and waits for them before the first pod.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	p := newPlugin(args)
	// The method value reads the framework's PodActivator at each call: the scheduler sets it
	// (its queue) only after the plugins are built. Nothing is activated before a Filter fails.
	p.activate = h.Activate
	if args.Fallback == FallbackNodeResourceTopologyMatch {
		nrtArgs, err := nodeResourceTopologyMatchArgs(args.NodeResourceTopologyMatch)
		if err != nil {
			return nil, err
		}
		if p.topologyMatch, err = newTopologyMatch(ctx, nrtArgs, h); err != nil {
			return nil, fmt.Errorf("%s: fallback %s: %w", Name, noderesourcetopology.Name, err)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0, informers.WithNamespace(args.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = nodestate.PublishedLabel // the label's presence: whatever its value
		}))
	configMaps := factory.Core().V1().ConfigMaps().Informer()
	handled, err := configMaps.AddEventHandler(p.configMapHandler())
	if err != nil {
		return nil, err
	}
	// The scheduler's own node informer: what a node's new state is replayed with (mayAdmit).
	p.nodeOf = h.SharedInformerFactory().Core().V1().Nodes().Lister().Get
	// The scheduler's own pod informer: a deleted or ended pod holds nothing on its node.
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(p.podHandler()); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	// Synced is the handler's: every ConfigMap listed has been taken, not only cached.
	if !cache.WaitForCacheSync(ctx.Done(), handled.HasSynced) {
		return nil, fmt.Errorf("%s: the ConfigMaps of namespace %s did not sync", Name, args.Namespace)
	}
	return p, nil
}

func newPlugin(args Args) *Plugin {
	return &Plugin{args: args, states: newStates(), reserved: newReservations(), rejected: newRejected(),
		activate: func(klog.Logger, map[string]*corev1.Pod) {}, now: time.Now}
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return Name }

// configMapHandler keeps states up to date with the published ConfigMaps.
func (p *Plugin) configMapHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.configMapChanged(obj) },
		UpdateFunc: func(_, obj any) { p.configMapChanged(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				p.states.remove(cm.Name)
				p.retryRejected("published state removed", cm.Name, nil) // the fallback judges it now
			}
		},
	}
}

func (p *Plugin) configMapChanged(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		old, now := p.states.set(cm)
		if why := p.verdictsMayChange(old, now); why != "" {
			p.retryRejected(why, cm.Name, now)
		}
	}
}

// podHandler drops the reservation of a pod deleted, or ended (the kubelet refused it, or it
// finished): it holds nothing the kubelet counts; and forgets a rejected pod once bound or gone.
func (p *Plugin) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				p.reserved.drop(pod.UID)
			}
			if pod.Spec.NodeName != "" {
				p.rejected.drop(pod.UID)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				p.reserved.drop(pod.UID)
				p.rejected.drop(pod.UID)
			}
		},
	}
}

// PreFilter skips the pods the kubelet's resource managers decide nothing for: a pod neither
// Guaranteed (exclusive CPUs, memory-manager memory) nor asking for an extended resource
// (devices) is admitted by every hint provider and policy.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !managed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if p.topologyMatch != nil { // its preemption stack, which its Filter reads
		if _, st := p.topologyMatch.PreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
			return nil, st
		}
	}
	return nil, nil
}

// managed: the kubelet's managers decide where pod lands, and may refuse it.
func managed(pod *corev1.Pod) bool {
	return qos.GetPodQOS(pod) == corev1.PodQOSGuaranteed || admit.AsksExtendedResource([]*corev1.Pod{pod})
}

// PreFilterExtensions: the fallback plugin's, which keep its preemption stack; none for the
// replay. Filter reads the node's pods from the NodeInfo it is given, so the pods preemption
// adds (nominated) and removes (victims) reach the replay without them.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions {
	if p.topologyMatch != nil {
		return p.topologyMatch.PreFilterExtensions()
	}
	return nil
}

// Filter replays, on the node's published state, the pods reserved there that it does not
// report yet, then pod, and fails the node with the kubelet's own reason when it refuses pod.
// A pod it fails anywhere is retried when a node's published state changes.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	st := p.filter(ctx, state, pod, nodeInfo)
	if !st.IsSuccess() {
		p.rejected.add(pod)
	}
	return st
}

func (p *Plugin) filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	prepared, reported, cannot := p.judging(node, p.states.get(node.Name))
	if cannot != "" {
		return p.fallback(ctx, state, pod, nodeInfo, cannot)
	}
	p.sayUnchecked(ctx, node)
	reserved := p.reserved.unreported(node.Name, reported, pod.UID)
	nominated := nominatedPods(nodeInfo, pod, reserved)
	before := append(reserved, nominated...)
	pods := append(slices.Clip(before), pod)
	// The pods before are replayed once for every pod asked after them (the node as they leave
	// it is kept until they change), not again for each.
	res, err := prepared.AdmitAfter(activePods(nodeInfo), before, pod)
	if err == nil && len(res.Admissions) != len(pods) {
		err = fmt.Errorf("%d answers for %d pods", len(res.Admissions), len(pods))
	}
	if err != nil {
		return p.fallback(ctx, state, pod, nodeInfo, fmt.Sprintf("replay failed: %v", err))
	}
	a := res.Admissions[len(pods)-1]
	switch a.Verdict {
	case admit.VerdictAdmitted:
		return nil
	case admit.VerdictNotJudged:
		return p.fallback(ctx, state, pod, nodeInfo, "kubelet admission not judged: "+strings.Join(a.NotJudged, "; "))
	}
	code := fwk.Unschedulable
	// Refused on the node emptied of pods: no pod leaving it helps, so preemption need not try.
	if alone, err := prepared.AdmitAlone(pod); err == nil && !alone {
		code = fwk.UnschedulableAndUnresolvable
	}
	return fwk.NewStatus(code, refusal(a, len(reserved), len(nominated)))
}

// judging is node's published state (st, nil if none) prepared for the replay, and the pods it
// reports; or, when it cannot judge, why (the fallback's reason): none, unreadable, stale, or
// not replayable.
func (p *Plugin) judging(node *corev1.Node, st *published) (*nodestate.PublishedNode, nodestate.ReportedPods, string) {
	switch {
	case st == nil:
		return nil, nodestate.ReportedPods{}, fmt.Sprintf("no published state (ConfigMap %s/%s)", p.args.Namespace, node.Name)
	case st.err != nil:
		return nil, nodestate.ReportedPods{}, fmt.Sprintf("published state not readable: %v", st.err)
	}
	if age := p.now().Sub(st.readAt); age > p.args.MaxAge.Duration {
		return nil, nodestate.ReportedPods{}, fmt.Sprintf("published state stale: read %s ago (%s), over maxAge %s",
			age.Round(time.Second), st.readAt.UTC().Format(time.RFC3339), p.args.MaxAge.Duration)
	}
	prepared, reported := st.prepare(node)
	if prepared.Err != nil {
		return nil, nodestate.ReportedPods{}, fmt.Sprintf("published state cannot be replayed: %v", prepared.Err)
	}
	return prepared, reported, ""
}

// maxKubeletsSeen bounds the kubelet versions remembered: a node's status is its own, and one
// that reports a new version at every update fills no more than this.
const maxKubeletsSeen = 256

// sayUnchecked logs, once per kubelet version, that the nodes running a build the rules were
// not checked against (a release day's, until a plugin release names it) are judged by the
// rules of the nearest earlier build checked: the scheduler's answers for them rest on that.
func (p *Plugin) sayUnchecked(ctx context.Context, node *corev1.Node) {
	version := node.Status.NodeInfo.KubeletVersion
	if _, seen := p.kubeletsSeen.Load(version); seen || p.kubeletsSeenCount.Load() >= maxKubeletsSeen {
		return
	}
	if _, seen := p.kubeletsSeen.LoadOrStore(version, true); seen {
		return
	}
	p.kubeletsSeenCount.Add(1)
	if k, err := nodestate.ParseKubelet(version, nil); err == nil {
		if why := k.Unchecked(); why != "" {
			klog.FromContext(ctx).Info("judging nodes of a kubelet build not checked", "plugin", Name, "node", node.Name, "kubeletVersion", version, "why", why)
		}
	}
}

// nominatedPods are the pods preemption nominated to the node that the scheduler added to
// nodeInfo for this pass (RunFilterPluginsWithNominatedPods: those of pod's priority or
// higher, not bound, so Spec.NodeName is empty) and that the kubelet's managers decide for:
// pod must fit after them, as the kubelet will admit them first once their victims are gone.
// A nominated pod this scheduler already reserved here is among reserved.
func nominatedPods(nodeInfo fwk.NodeInfo, pod *corev1.Pod, reserved []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pi := range nodeInfo.GetPods() {
		n := pi.GetPod()
		if n.Spec.NodeName != "" || n.UID == pod.UID || !managed(n) ||
			slices.ContainsFunc(reserved, func(r *corev1.Pod) bool { return r.UID == n.UID }) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// refusal is the kubelet's reason and message as its pod status would carry them, and the
// first reason why, short enough for kubectl describe's FailedScheduling event.
func refusal(a admit.Admission, reservedBefore, nominatedBefore int) string {
	reason := a.Reason
	if reason == "" { // the kubelet never answers (a.Hangs, a.NotReached): Message says where
		reason = "refused"
	}
	msg := reason + ": " + a.Message
	if len(a.Why) > 0 {
		msg += " (" + a.Why[0] + ")"
	}
	switch {
	case reservedBefore > 0 && nominatedBefore > 0:
		msg += fmt.Sprintf(" [after %d pod(s) bound here and not yet reported by the node, and %d nominated here by preemption]", reservedBefore, nominatedBefore)
	case reservedBefore > 0:
		msg += fmt.Sprintf(" [after %d pod(s) bound here and not yet reported by the node]", reservedBefore)
	case nominatedBefore > 0:
		msg += fmt.Sprintf(" [after %d pod(s) nominated here by preemption]", nominatedBefore)
	}
	return clip(msg, 512)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// fallback is the answer for a node whose state cannot judge pod: what the args say, and why.
// NodeResourceTopologyMatch's refusal keeps its code and words, and says it was the fallback's.
func (p *Plugin) fallback(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo, why string) *fwk.Status {
	node := nodeInfo.Node().Name
	switch p.args.Fallback {
	case FallbackPass:
		klog.FromContext(ctx).V(4).Info("node passed unjudged (fallback: pass)", "plugin", Name, "pod", klog.KObj(pod), "node", node, "why", why)
		return nil
	case FallbackNodeResourceTopologyMatch:
		st := p.topologyMatch.Filter(ctx, state, pod, nodeInfo)
		if st.IsSuccess() {
			klog.FromContext(ctx).V(4).Info("node passed by the fallback", "plugin", Name, "fallback", noderesourcetopology.Name, "pod", klog.KObj(pod), "node", node, "why", why)
			return nil
		}
		msg := strings.Join(st.Reasons(), "; ")
		if msg == "" && st.AsError() != nil {
			msg = st.AsError().Error()
		}
		return fwk.NewStatus(st.Code(), clip(msg+" (judged by the fallback "+noderesourcetopology.Name+": "+why+")", 512))
	}
	return fwk.NewStatus(fwk.Unschedulable, why+" (fallback: reject)")
}

// Reserve counts pod on node until the node reports it; the fallback plugin counts every pod
// the profile places, as it would in a profile of its own.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	if managed(pod) {
		p.reserved.reserve(pod, node)
	}
	if p.topologyMatch != nil {
		return p.topologyMatch.Reserve(ctx, state, pod, node)
	}
	return nil
}

// Unreserve frees pod's reservation (a later plugin or the binding failed), in the fallback
// plugin's cache too.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) {
	p.reserved.drop(pod.UID)
	if p.topologyMatch != nil {
		p.topologyMatch.Unreserve(ctx, state, pod, node)
	}
}

// PostBind tells the fallback plugin's cache that pod is bound (it then waits for the node's
// NodeResourceTopology to count it); the replay's reservation needs nothing here.
func (p *Plugin) PostBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) {
	if p.topologyMatch != nil {
		p.topologyMatch.PostBind(ctx, state, pod, node)
	}
}

// activePods are the UIDs the kubelet knows the scheduler's pods on the node by (a static
// pod's its mirror's annotation names), those not Succeeded or Failed: the pods its managers
// count active. A checkpoint owner not among them is a deleted pod whose devices the kubelet
// frees at its next admission, though its device checkpoint still lists them.
func activePods(nodeInfo fwk.NodeInfo) map[string]bool {
	active := map[string]bool{}
	for _, pi := range nodeInfo.GetPods() {
		p := pi.GetPod()
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		active[string(p.UID)] = true
		if uid := p.Annotations[corev1.MirrorPodAnnotationKey]; uid != "" {
			active[uid] = true
		}
	}
	return active
}
