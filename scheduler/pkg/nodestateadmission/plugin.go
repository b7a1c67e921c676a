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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

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
	now      func() time.Time
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.ReservePlugin   = (*Plugin)(nil)
)

// New is the plugin's factory (frameworkruntime.PluginFactory): it watches the published
// ConfigMaps of its namespace and label only, and waits for them before the first pod.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	p := newPlugin(args)
	factory := informers.NewSharedInformerFactoryWithOptions(h.ClientSet(), 0, informers.WithNamespace(args.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = nodestate.PublishedLabel // the label's presence: whatever its value
		}))
	configMaps := factory.Core().V1().ConfigMaps().Informer()
	handled, err := configMaps.AddEventHandler(p.configMapHandler())
	if err != nil {
		return nil, err
	}
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
	return &Plugin{args: args, states: newStates(), reserved: newReservations(), now: time.Now}
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
			}
		},
	}
}

func (p *Plugin) configMapChanged(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		p.states.set(cm)
	}
}

// podHandler drops the reservation of a pod deleted, or ended (the kubelet refused it, or it
// finished): it holds nothing the kubelet counts.
func (p *Plugin) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
				p.reserved.drop(pod.UID)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				p.reserved.drop(pod.UID)
			}
		},
	}
}

// PreFilter skips the pods the kubelet's resource managers decide nothing for: a pod neither
// Guaranteed (exclusive CPUs, memory-manager memory) nor asking for an extended resource
// (devices) is admitted by every hint provider and policy.
func (p *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !managed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// managed: the kubelet's managers decide where pod lands, and may refuse it.
func managed(pod *corev1.Pod) bool {
	return qos.GetPodQOS(pod) == corev1.PodQOSGuaranteed || admit.AsksExtendedResource([]*corev1.Pod{pod})
}

// PreFilterExtensions: none. Filter reads the node's pods from the NodeInfo it is given, so
// the pods preemption adds (nominated) and removes (victims) reach the replay without them.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter replays, on the node's published state, the pods reserved there that it does not
// report yet, then pod, and fails the node with the kubelet's own reason when it refuses pod.
func (p *Plugin) Filter(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	st := p.states.get(node.Name)
	switch {
	case st == nil:
		return p.fallback(ctx, pod, node.Name, fmt.Sprintf("no published state (ConfigMap %s/%s)", p.args.Namespace, node.Name))
	case st.err != nil:
		return p.fallback(ctx, pod, node.Name, fmt.Sprintf("published state not readable: %v", st.err))
	}
	if age := p.now().Sub(st.readAt); age > p.args.MaxAge.Duration {
		return p.fallback(ctx, pod, node.Name, fmt.Sprintf("published state stale: read %s ago, over maxAge %s", age.Round(time.Second), p.args.MaxAge.Duration))
	}
	prepared, reported := st.prepare(node)
	if prepared.Err != nil {
		return p.fallback(ctx, pod, node.Name, fmt.Sprintf("published state cannot be replayed: %v", prepared.Err))
	}
	reserved := p.reserved.unreported(node.Name, reported, pod.UID)
	nominated := nominatedPods(nodeInfo, pod, reserved)
	pods := append(append(reserved, nominated...), pod)
	res, err := prepared.AdmitAmong(activePods(nodeInfo), pods)
	if err == nil && len(res.Admissions) != len(pods) {
		err = fmt.Errorf("%d answers for %d pods", len(res.Admissions), len(pods))
	}
	if err != nil {
		return p.fallback(ctx, pod, node.Name, fmt.Sprintf("replay failed: %v", err))
	}
	a := res.Admissions[len(pods)-1]
	switch a.Verdict {
	case admit.VerdictAdmitted:
		return nil
	case admit.VerdictNotJudged:
		return p.fallback(ctx, pod, node.Name, "kubelet admission not judged: "+strings.Join(a.NotJudged, "; "))
	}
	code := fwk.Unschedulable
	// Refused on the node emptied of pods: no pod leaving it helps, so preemption need not try.
	if alone, err := prepared.AdmitAlone(pod); err == nil && !alone {
		code = fwk.UnschedulableAndUnresolvable
	}
	return fwk.NewStatus(code, refusal(a, len(reserved), len(nominated)))
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
func (p *Plugin) fallback(ctx context.Context, pod *corev1.Pod, node, why string) *fwk.Status {
	if p.args.Fallback == FallbackPass {
		klog.FromContext(ctx).V(4).Info("node passed unjudged (fallback: pass)", "plugin", Name, "pod", klog.KObj(pod), "node", node, "why", why)
		return nil
	}
	return fwk.NewStatus(fwk.Unschedulable, why+" (fallback: reject)")
}

// Reserve counts pod on node until the node reports it.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	if managed(pod) {
		p.reserved.reserve(pod, node)
	}
	return nil
}

// Unreserve frees pod's reservation (a later plugin or the binding failed).
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.reserved.drop(pod.UID)
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
