package admit

import (
	"errors"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// Prepared is a node whose kubelet started once (replay.StartOnce), to predict the admission of
// pods on it as often as asked: each prediction runs on a copy of the start, so it answers as
// Predict does on the same Input, without starting the kubelet again. Its Predict may be called
// concurrently. It holds the Input and one started kubelet (the managers' state as the
// checkpoints restore it, the machine's topology): what one node's state already holds, once.
type Prepared struct {
	in      Input
	started *replay.Started
	// err is why the kubelet could not be replayed (Predict's error on the same Input).
	err error
}

// Prepare starts in's kubelet once; in.Pods and in.ActivePods are left out, each Predict gives
// its own. A restart's re-admissions change the node as they go and are not prepared.
func Prepare(in Input) (*Prepared, error) {
	if in.Restart != nil {
		return nil, errors.New("a restart's admissions are replayed by PredictRestart, not prepared")
	}
	in.Pods, in.ActivePods = nil, nil
	p := &Prepared{in: in}
	p.started, p.err = replay.StartOnce(startInput(in))
	return p, nil
}

// Predict is Predict on the prepared Input with these active pods (Input.ActivePods) and pods.
func (p *Prepared) Predict(active map[string]bool, pods []*v1.Pod) (Result, error) {
	in := p.in
	in.Pods, in.ActivePods = pods, active
	res, _, err := predict(in, false, p)
	return res, err
}

// PredictSameStart is Predict(in) for an in whose kubelet starts as the prepared one's does:
// the same checkpoints, machine, config, kubelet, root dir and devices (the nodes of a pool that
// publish the same state). Everything else (pods, active and known pods, the node's allocatable
// and pods) is in's own.
func (p *Prepared) PredictSameStart(in Input) (Result, error) {
	if in.Restart != nil {
		return Predict(in)
	}
	res, _, err := predict(in, false, p)
	return res, err
}

// Input is the Input prepared (no pods, no active pods).
func (p *Prepared) Input() Input { return p.in }

// Prefix is a prepared node after some pods were admitted on it (the scheduler's pods reserved
// there and not yet reported), kept to predict each next pod as Predict(active, pods + pod)
// does without replaying pods again. Its Predict may be called concurrently.
type Prefix struct {
	p      *Prepared
	active map[string]bool
	pods   []*v1.Pod
	// run is the prediction after pods; nil when it cannot be kept (no active set known: the
	// stale device holders are then named over the whole result, see Predict).
	run *admitting
	err error
}

// After admits pods on a copy of the start with these active pods, and keeps the node they
// leave.
func (p *Prepared) After(active map[string]bool, pods []*v1.Pod) *Prefix {
	x := &Prefix{p: p, active: active, pods: slices.Clip(pods)}
	if active == nil {
		return x
	}
	in := p.in
	in.Pods, in.ActivePods = x.pods, active
	run, err := begin(in, false, p)
	if err == nil && run.node != nil {
		run.admitPods()
	}
	x.run, x.err = run, err
	return x
}

// Predict is the prepared node's Predict(active, pods + pod): the admissions of the prefix's
// pods, then pod's on a copy of the node they left.
func (x *Prefix) Predict(pod *v1.Pod) (Result, error) {
	if x.run == nil {
		return x.p.Predict(x.active, append(x.pods, pod))
	}
	if x.err != nil || x.run.node == nil {
		return x.run.res, x.err
	}
	run := x.run.copy()
	run.in.Pods = append(run.in.Pods, pod)
	run.admit(len(run.in.Pods)-1, pod)
	res, _, err := run.finish()
	return res, err
}
