package nodestateadmission

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Retrying the pods this plugin failed. The published states are ConfigMaps, which the
// scheduler's EventsToRegister cannot watch as this plugin does: a resource it does not know
// (kube-scheduler v1.37.2, eventhandlers.go) gets a dynamic informer over every namespace
// ("configmaps.v1." would list and cache every ConfigMap of the cluster, without a label
// selector, and the scheduler's start waits for it). So the plugin's own informer, of the
// publish namespace and label only, activates the pods it failed when a node's state changes
// in a way that can change a verdict; EventsToRegister names the rest (nodes, pods leaving,
// and the fallback plugin's NodeResourceTopology objects).

// rejected are the pods Filter failed on some node since they were last activated: each is
// activated once per change, and only again after another cycle fails it.
type rejected struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func newRejected() *rejected { return &rejected{pods: map[types.UID]*corev1.Pod{}} }

func (r *rejected) add(pod *corev1.Pod) {
	r.mu.Lock()
	r.pods[pod.UID] = pod
	r.mu.Unlock()
}

func (r *rejected) drop(uid types.UID) {
	r.mu.Lock()
	delete(r.pods, uid)
	r.mu.Unlock()
}

// take empties the set into the map PodActivator.Activate takes (namespace/name keys).
func (r *rejected) take() map[string]*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pods) == 0 {
		return nil
	}
	out := make(map[string]*corev1.Pod, len(r.pods))
	for uid, pod := range r.pods {
		out[pod.Namespace+"/"+pod.Name] = pod
		delete(r.pods, uid)
	}
	return out
}

// verdictsMayChange says why a node's new published state may judge a pod otherwise than the
// old one did ("" if it cannot): a first state, a new fingerprint, a state readable or
// unreadable now, or one fresh again after being stale. A read time moved on a state already
// fresh changes nothing.
func (p *Plugin) verdictsMayChange(old, now *published) string {
	switch {
	case old == nil:
		return "state published"
	case old.err != nil || now.err != nil:
		return "state readable or unreadable"
	case old.fingerprint != now.fingerprint:
		return "state changed"
	}
	t := p.now()
	if t.Sub(old.readAt) > p.args.MaxAge.Duration && t.Sub(now.readAt) <= p.args.MaxAge.Duration {
		return "state fresh again"
	}
	return ""
}

// retryRejected activates the pods Filter failed, that they are scheduled again now instead
// of after their backoff or the unschedulable pods' flush: those node's new state may admit
// (now; nil when the node has none now: every one, the fallback judges them).
func (p *Plugin) retryRejected(why, node string, now *published) {
	pods := p.rejected.take()
	if now != nil {
		pods = p.mayAdmit(node, now, pods)
	}
	if len(pods) == 0 {
		return
	}
	logger := klog.Background().WithValues("plugin", Name)
	logger.V(4).Info("retrying the pods this plugin failed", "node", node, "why", why, "pods", len(pods))
	p.activate(logger, pods)
}

// mayAdmit are the pods of pods that node's new state may admit. A pod it refuses even with
// the node emptied of every pod (its machine, config and devices cannot hold it: the Filter's
// UnschedulableAndUnresolvable) waits, still rejected, for another node's change: a scheduling
// cycle for it would fail on this node as before, and every other node is as it was. So a
// fleet's churn on nodes that cannot hold a pending pod (a CPU pool's, for a GPU pod) schedules
// it again no more. Where the state cannot say (unreadable, stale, not replayable, the node not
// known: the Filter's fallback judges), every pod may be admitted.
func (p *Plugin) mayAdmit(node string, now *published, pods map[string]*corev1.Pod) map[string]*corev1.Pod {
	if len(pods) == 0 || p.nodeOf == nil {
		return pods
	}
	n, err := p.nodeOf(node)
	if err != nil {
		return pods
	}
	prepared, _, cannot := p.judging(n, now)
	if cannot != "" {
		return pods
	}
	for key, pod := range pods {
		if alone, err := prepared.AdmitAlone(pod); err == nil && !alone {
			delete(pods, key)
			p.rejected.add(pod)
		}
	}
	return pods
}

// EventsToRegister are the cluster events that may lift this plugin's refusals: a node added,
// or changed where the replay reads it (kubelet version, extended resources); a pod the
// kubelet's managers count leaving a node (deleted, ended, or un-assumed by the scheduler);
// and with NodeResourceTopologyMatch as the fallback, its own (its NodeResourceTopology
// objects: its CRD is then served, without which the scheduler's start would wait forever for
// their informer). A node's published ConfigMap: retryRejected.
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Update}, QueueingHintFn: nodeReplayedOtherwise},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: managedPodLeft},
	}
	if p.topologyMatch != nil {
		theirs, err := p.topologyMatch.EventsToRegister(ctx)
		if err != nil {
			return nil, err
		}
		events = append(events, theirs...)
	}
	return events, nil
}

// nodeReplayedOtherwise: a node's update matters when it changes what the replay reads of it.
func nodeReplayedOtherwise(_ klog.Logger, _ *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, _ := oldObj.(*corev1.Node)
	newNode, _ := newObj.(*corev1.Node)
	if oldNode == nil || newNode == nil || nodeKey(oldNode) != nodeKey(newNode) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// managedPodLeft: only a pod the kubelet's managers count frees CPUs, memory or devices.
func managedPodLeft(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if pod, ok := oldObj.(*corev1.Pod); ok && !managed(pod) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
