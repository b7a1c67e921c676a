package nodestate

import (
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
)

// RecordedPods are a node's pods as the API server listed them when collect read the node
// (NodeInfo.Pods): what its files do not say and a restart outlook needs: which containers ran
// (a kubelet restart keeps them running, holding their devices), which pods were gone or done
// (not re-admitted), and the pods' names, owners and creation times (the kubelet's order).
type RecordedPods struct {
	// ByUID is keyed by the UID the kubelet's files use (a static pod's: its mirror's annotation).
	ByUID map[string]RecordedPod `json:"byUID"`
}

// RecordedPod is one pod of RecordedPods.
type RecordedPod struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Created   metav1.Time `json:"created,omitempty"`
	// Owner is the kind of its controller, "" for a bare pod.
	Owner string `json:"owner,omitempty"`
	// Terminal: Succeeded or Failed, which the kubelet does not re-admit.
	Terminal   bool                `json:"terminal,omitempty"`
	Containers []RecordedContainer `json:"containers,omitempty"`
}

// RecordedContainer is a container's status as the API server had it.
type RecordedContainer struct {
	Name    string `json:"name"`
	ID      string `json:"id,omitempty"`
	Running bool   `json:"running,omitempty"`
	// Restarted: it ran before (restartCount > 0): the runtime may list an exited instance beside.
	Restarted bool `json:"restarted,omitempty"`
}

// RecordPods is what collect records of a live node's pods (nil when they were not listed):
// the pods the node's read listed, less this plugin's debug pods. A list that failed is not
// recorded, since it would say every pod of the files is gone.
func RecordPods(n *NodeResult) *RecordedPods {
	ix := n.Snapshot.Pods
	if n.Node == "" || ix == nil || ix.Unlisted {
		return nil
	}
	owners := map[string]RecordedPod{}
	for _, p := range ix.Running {
		owners[string(p.UID)] = RecordedPod{Created: p.CreationTimestamp, Owner: ownerKind(p)}
	}
	out := &RecordedPods{ByUID: map[string]RecordedPod{}}
	for uid, ref := range ix.Pods {
		if ix.DebugPod(uid) || ix.DebugPodNamed(ref.Namespace, ref.Name) {
			continue
		}
		// ix.Running keeps the pods not terminal, under their API UID; a static pod's files
		// use its annotation's, which ix.Pods also holds.
		p := owners[uid]
		p.Namespace, p.Name, p.Terminal = ref.Namespace, ref.Name, !ix.Active[uid]
		for _, c := range ix.Statuses[uid] {
			p.Containers = append(p.Containers, RecordedContainer{Name: c.Name, ID: c.ID, Running: c.Running, Restarted: c.Restarted})
		}
		out.ByUID[uid] = p
	}
	return out
}

// containers are the containers that ran, and those with an exited instance beside, by pod UID,
// as the live outlook takes them from the API server's statuses.
func (rp *RecordedPods) containers() (running, exited map[string]map[string]bool) {
	running, exited = map[string]map[string]bool{}, map[string]map[string]bool{}
	for uid, p := range rp.ByUID {
		for _, c := range p.Containers {
			if c.Running {
				addRunning(running, exited, uid, c.Name, c.Restarted)
			}
		}
	}
	return running, exited
}

// addRunning counts pod uid's container name as running, with an exited instance beside when
// it restarted: what the runtime lists at the kubelet's start.
func addRunning(running, exited map[string]map[string]bool, uid, name string, restarted bool) {
	if running[uid] == nil {
		running[uid], exited[uid] = map[string]bool{}, map[string]bool{}
	}
	running[uid][name] = true
	exited[uid][name] = restarted
}

// name gives the rebuilt pods what the API server said of them: names, owners, creation times;
// when every pod has its time, the kubelet's order is known and the pods are put in it.
func (rp *RecordedPods) name(rb *admit.Rebuild) {
	timed := len(rb.Pods) > 0
	for i, p := range rb.Pods {
		r, ok := rp.ByUID[string(p.Pod.UID)]
		if !ok || r.Terminal {
			continue // not re-admitted (gone): its place in the order does not matter
		}
		pod := p.Pod.DeepCopy()
		pod.Namespace, pod.Name, pod.CreationTimestamp = r.Namespace, r.Name, r.Created
		pod.OwnerReferences = nil
		if r.Owner != "" {
			controller := true
			pod.OwnerReferences = []metav1.OwnerReference{{Kind: r.Owner, Controller: &controller}}
		}
		rb.Pods[i].Pod, rb.Pods[i].OwnerKnown = pod, true
		timed = timed && !r.Created.IsZero()
	}
	if timed && !rb.OrderKnown {
		rb.OrderKnown = true
		sort.SliceStable(rb.Pods, func(i, j int) bool {
			return rb.Pods[i].Pod.CreationTimestamp.Before(&rb.Pods[j].Pod.CreationTimestamp)
		})
		rb.Notes = slices.DeleteFunc(rb.Notes, func(n string) bool { return n == admit.NoteNoCreationTimes })
	}
}

// gone says why a rebuilt pod is not re-admitted by the API server's list ("": it is listed and
// not terminal).
func (rp *RecordedPods) gone(uid string) string {
	switch r, ok := rp.ByUID[uid]; {
	case !ok:
		return "not among the node's pods the API server listed when the bundle was collected: deleted since its entries were written (not re-admitted)"
	case r.Terminal:
		return "Succeeded or Failed when the bundle was collected (not re-admitted)"
	}
	return ""
}
