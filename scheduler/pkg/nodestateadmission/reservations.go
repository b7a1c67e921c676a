package nodestateadmission

import (
	"cmp"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// reservations are the pods this scheduler reserved on each node (Reserve, then bound) that
// the node's published state does not count yet: the kubelet will admit them before the next
// pod, so the filter replays them first, in the order they were reserved. A pod leaves when
// Unreserve frees it, when the node reports it, or when it is deleted or ends.
type reservations struct {
	mu    sync.Mutex
	seq   uint64
	nodes map[string]map[types.UID]reserved
	where map[types.UID]string
}

type reserved struct {
	pod *corev1.Pod
	seq uint64
}

func newReservations() *reservations {
	return &reservations{nodes: map[string]map[types.UID]reserved{}, where: map[types.UID]string{}}
}

func (r *reservations) reserve(pod *corev1.Pod, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(pod.UID)
	r.seq++
	if r.nodes[node] == nil {
		r.nodes[node] = map[types.UID]reserved{}
	}
	r.nodes[node][pod.UID] = reserved{pod: pod, seq: r.seq}
	r.where[pod.UID] = node
}

func (r *reservations) drop(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(uid)
}

func (r *reservations) dropLocked(uid types.UID) {
	node, ok := r.where[uid]
	if !ok {
		return
	}
	delete(r.where, uid)
	delete(r.nodes[node], uid)
	if len(r.nodes[node]) == 0 {
		delete(r.nodes, node)
	}
}

// unreported are node's reserved pods its state does not report, in reservation order, but
// pod itself (asked about again); the reported ones leave.
func (r *reservations) unreported(node string, reported nodestate.ReportedPods, pod types.UID) []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []reserved
	for uid, res := range r.nodes[node] {
		switch {
		case reported.Reports(res.pod):
			r.dropLocked(uid)
		case uid != pod:
			out = append(out, res)
		}
	}
	slices.SortFunc(out, func(a, b reserved) int { return cmp.Compare(a.seq, b.seq) })
	pods := make([]*corev1.Pod, len(out))
	for i, res := range out {
		pods[i] = res.pod
	}
	return pods
}

// count is how many pods are reserved on node.
func (r *reservations) count(node string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.nodes[node])
}
