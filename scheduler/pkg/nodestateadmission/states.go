package nodestateadmission

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// states are the nodes' published states, by node name, as the ConfigMap informer delivers
// them: each decoded once per fingerprint, and prepared (judged) once per fingerprint and Node
// object as the filter first needs it, never per pod.
type states struct {
	mu    sync.RWMutex
	nodes map[string]*published
}

// published is one node's ConfigMap.
type published struct {
	fingerprint string
	readAt      time.Time
	// state is the decoded state, or err why it could not be.
	state *nodestate.PublishedState
	err   error

	mu sync.Mutex
	// prepared was judged for the Node object keyed preparedFor (its kubelet version and
	// extended resources: what PreparePublished reads of it); reported is its pods.
	prepared    *nodestate.PublishedNode
	preparedFor string
	reported    nodestate.ReportedPods
}

func newStates() *states { return &states{nodes: map[string]*published{}} }

// set takes a node's ConfigMap: decoded when its fingerprint is new, else only its read time
// moves (a publisher that found nothing changed rewrites the read-at annotation alone). It
// returns the node's state before (nil if none) and after.
func (s *states) set(cm *corev1.ConfigMap) (old, now *published) {
	fingerprint := cm.Annotations[nodestate.FingerprintAnnotation]
	readAt, _ := time.Parse(time.RFC3339, cm.Annotations[nodestate.ReadAtAnnotation])
	s.mu.RLock()
	old = s.nodes[cm.Name]
	s.mu.RUnlock()
	if old != nil && fingerprint != "" && old.fingerprint == fingerprint && old.err == nil {
		next := &published{fingerprint: fingerprint, readAt: later(old.readAt, readAt), state: old.state}
		old.mu.Lock()
		next.prepared, next.preparedFor, next.reported = old.prepared, old.preparedFor, old.reported
		old.mu.Unlock()
		s.put(cm.Name, next)
		return old, next
	}
	p := &published{fingerprint: fingerprint, readAt: readAt}
	p.state, p.err = nodestate.PublishedStateOf(cm)
	if p.err == nil {
		p.readAt = later(p.state.ReadAt, readAt)
		if p.fingerprint == "" {
			p.fingerprint = p.state.Fingerprint()
		}
	}
	s.put(cm.Name, p)
	return old, p
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *states) put(node string, p *published) {
	s.mu.Lock()
	s.nodes[node] = p
	s.mu.Unlock()
}

func (s *states) remove(node string) {
	s.mu.Lock()
	delete(s.nodes, node)
	s.mu.Unlock()
}

func (s *states) get(node string) *published {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodes[node]
}

// prepare is the state judged for node, and the pods it reports; judged again only when
// node's kubelet version or extended resources changed since.
func (p *published) prepare(node *corev1.Node) (*nodestate.PublishedNode, nodestate.ReportedPods) {
	key := nodeKey(node)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prepared == nil || p.preparedFor != key {
		p.prepared = nodestate.PreparePublished(p.state, node, nil)
		p.preparedFor = key
		p.reported = p.prepared.ReportedPods()
	}
	return p.prepared, p.reported
}

// nodeKey is what PreparePublished reads of a Node object.
func nodeKey(node *corev1.Node) string {
	if node == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(node.Status.NodeInfo.KubeletVersion)
	for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		b.WriteByte('|')
		for _, name := range slices.Sorted(maps.Keys(list)) {
			if admit.IsExtendedResource(name) {
				q := list[name]
				fmt.Fprintf(&b, "%s=%s,", name, q.String())
			}
		}
	}
	return b.String()
}
