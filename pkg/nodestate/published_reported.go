package nodestate

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// ReportedPods are the pods a published node already holds in its state, so that a consumer
// replaying pods it placed there itself (the scheduler's reserved pods) stops adding them once
// the node's own state counts them: twice would refuse pods the kubelet admits.
type ReportedPods struct {
	// fromPodResources: the kubelet's PodResources List was published; it names every pod the
	// kubelet runs (by namespace/name, its answer has no UID), and is the one source used.
	fromPodResources bool
	names            map[string]bool
	// uids are the pods the checkpoints and allocation files name.
	uids map[string]bool
}

// ReportedPods reads, once, which pods the published node reports: the PodResources section's
// pods when it was published and read, else every pod UID of the node's decoded checkpoints
// (CPU, memory, devices, DRA claims) and pod allocation files.
func (p *PublishedNode) ReportedPods() ReportedPods {
	out := ReportedPods{names: map[string]bool{}, uids: map[string]bool{}}
	if dump, ok := p.State.Sections[machine.PodResourcesHeader]; ok {
		if pr, err := machine.ParsePodResources(dump); err == nil && pr.Error == "" {
			out.fromPodResources = true
			for _, pod := range pr.Pods {
				out.names[pod.Namespace+"/"+pod.Name] = true
			}
			return out
		}
	}
	if p.Result == nil {
		return out
	}
	for _, row := range p.Result.Rows {
		if row.Report == nil {
			continue
		}
		row.Report.Decoded.AddPodUIDs(out.uids)
	}
	return out
}

// Reports says whether the node's published state counts pod already.
func (r ReportedPods) Reports(pod *corev1.Pod) bool {
	if r.fromPodResources {
		return r.names[pod.Namespace+"/"+pod.Name]
	}
	return r.uids[string(pod.UID)]
}

// AdmitAlone replays pod on the published node emptied of every pod (its machine, config and
// devices as published, no checkpointed allocation): a pod refused there is refused whatever
// pods leave the node.
func (p *PublishedNode) AdmitAlone(pod *corev1.Pod) (bool, error) {
	if p.Err != nil {
		return false, p.Err
	}
	p.aloneOnce.Do(func() {
		in := p.input
		in.CPU, in.Memory = nil, nil
		if in.Devices != nil {
			devices := *in.Devices
			devices.Checkpoint = nil
			in.Devices = &devices
		}
		p.alone, p.aloneErr = admit.Prepare(in)
	})
	if p.aloneErr != nil {
		return false, p.aloneErr
	}
	res, err := p.alone.Predict(nil, []*corev1.Pod{pod})
	if err != nil {
		return false, err
	}
	if len(res.Admissions) != 1 {
		return false, errors.New("the replay answered for no pod")
	}
	return res.Admissions[0].Admitted, nil
}
