package nodestate

import (
	"crypto/sha256"
	"sync"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/replay"
)

// parseMemo keeps, across the nodes of one fleet read, what parsing bytes that nodes share
// gave: a pool's nodes publish the same sysfs dump and the same kubelet config, and the same
// bytes parse to the same machine and config, which the engines only read (as they read the
// one --machine and --kubelet-config given for every node). A nil memo parses every time.
type parseMemo struct {
	machines memo[*machine.Machine]
	configs  memo[*replay.KubeletConfig]
	// topologies are the machines' CPU topologies (replay.Discover), by machine: one per
	// content, as the machines are.
	topologyMu sync.Mutex
	topologies map[*machine.Machine]*replay.CPUTopology
	// starts are the kubelets started, by what their start read (startKey): a pool's nodes that
	// publish the same files start alike, and each admission runs on a copy of the start.
	starts memo[*admit.Prepared]
	// startsSeen are the start keys met once: a start is kept only when a second node starts
	// alike, so a fleet whose every node is its own holds none of them.
	startsMu   sync.Mutex
	startsSeen map[[sha256.Size]byte]bool
	// noneRunning is, by start key, which pods are admitted with no checkpoint owner running
	// (ownersDecide): the same start and the same pods, the same answer.
	noneRunning memo[[]bool]
}

// maxStartsKept bounds the starts kept across a fleet's nodes: each holds the managers' state
// and the machine's CPU topology (a few tens of KB); past the bound a node's kubelet is
// started for it alone, as without the memo.
const maxStartsKept = 1024

func newParseMemo() *parseMemo {
	return &parseMemo{machines: memo[*machine.Machine]{parsed: map[[sha256.Size]byte]parsed[*machine.Machine]{}},
		configs:     memo[*replay.KubeletConfig]{parsed: map[[sha256.Size]byte]parsed[*replay.KubeletConfig]{}},
		topologies:  map[*machine.Machine]*replay.CPUTopology{},
		startsSeen:  map[[sha256.Size]byte]bool{},
		starts:      memo[*admit.Prepared]{parsed: map[[sha256.Size]byte]parsed[*admit.Prepared]{}, max: maxStartsKept},
		noneRunning: memo[[]bool]{parsed: map[[sha256.Size]byte]parsed[[]bool]{}, max: maxStartsSeen}}
}

// admittedNoneRunning is, per pod of in, whether it is admitted on the node with no checkpoint
// owner running (every one gone or finished: the kubelet frees their entries at its next
// admission), kept per start key.
func (p *parseMemo) admittedNoneRunning(key [sha256.Size]byte, ok bool, in admit.Input) ([]bool, error) {
	in.ActivePods = map[string]bool{}
	replay := func() ([]bool, error) {
		res, err := p.predict(key, ok, in)
		if err != nil {
			return nil, err
		}
		admitted := make([]bool, len(res.Admissions))
		for i, a := range res.Admissions {
			admitted[i] = a.Admitted
		}
		return admitted, nil
	}
	if p == nil || !ok {
		return replay()
	}
	return p.noneRunning.getKey(key, replay)
}

// predict is admit.Predict(in), on a copy of the kubelet started once for every node whose
// start reads the same (key; ok false: none known, started here).
func (p *parseMemo) predict(key [sha256.Size]byte, ok bool, in admit.Input) (admit.Result, error) {
	if p == nil || !ok || in.Restart != nil || p.firstSighting(key) {
		return admit.Predict(in)
	}
	prepared, err := p.starts.getKey(key, func() (*admit.Prepared, error) { return admit.Prepare(in) })
	if err != nil || prepared == nil {
		return admit.Predict(in)
	}
	return prepared.PredictSameStart(in)
}

// maxStartsSeen bounds the start keys remembered (32 bytes each); past it, no more starts are kept.
const maxStartsSeen = 1 << 16

// firstSighting says whether no node before started as key says (and remembers it).
func (p *parseMemo) firstSighting(key [sha256.Size]byte) bool {
	p.startsMu.Lock()
	defer p.startsMu.Unlock()
	if p.startsSeen[key] {
		return false
	}
	if len(p.startsSeen) < maxStartsSeen {
		p.startsSeen[key] = true
	}
	return true
}

// machine is machine.FromSysfs(dump).
func (p *parseMemo) machine(dump []byte) (*machine.Machine, error) {
	if p == nil {
		return machine.FromSysfs(dump)
	}
	return p.machines.get(dump, machine.FromSysfs)
}

// topology is replay.Discover(m), discovered once per machine (nil: the start discovers it).
func (p *parseMemo) topology(m *machine.Machine) *replay.CPUTopology {
	if p == nil || m == nil {
		return nil
	}
	p.topologyMu.Lock()
	defer p.topologyMu.Unlock()
	t, ok := p.topologies[m]
	if !ok {
		t = replay.Discover(m)
		p.topologies[m] = t
	}
	return t
}

// config is replay.ParseKubeletConfig(b).
func (p *parseMemo) config(b []byte) (*replay.KubeletConfig, error) {
	if p == nil {
		return replay.ParseKubeletConfig(b)
	}
	return p.configs.get(b, replay.ParseKubeletConfig)
}

// memo is what parse gave for each content seen, by its hash.
type memo[T any] struct {
	mu     sync.Mutex
	parsed map[[sha256.Size]byte]parsed[T]
	// max bounds the entries kept (0: no bound, below 0: none kept); past it, what is not kept
	// is built each time.
	max int
}

type parsed[T any] struct {
	v   T
	err error
}

func (m *memo[T]) get(b []byte, parse func([]byte) (T, error)) (T, error) {
	return m.getKey(sha256.Sum256(b), func() (T, error) { return parse(b) })
}

// getKey is what build gave for key: built once while the memo has room.
func (m *memo[T]) getKey(key [sha256.Size]byte, build func() (T, error)) (T, error) {
	m.mu.Lock()
	got, ok := m.parsed[key]
	m.mu.Unlock()
	if !ok {
		got.v, got.err = build()
		m.mu.Lock()
		if m.max == 0 || len(m.parsed) < m.max {
			m.parsed[key] = got
		}
		m.mu.Unlock()
	}
	return got.v, got.err
}
