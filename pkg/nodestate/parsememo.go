package nodestate

import (
	"crypto/sha256"
	"sync"

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
}

func newParseMemo() *parseMemo {
	return &parseMemo{machines: memo[*machine.Machine]{parsed: map[[sha256.Size]byte]parsed[*machine.Machine]{}},
		configs: memo[*replay.KubeletConfig]{parsed: map[[sha256.Size]byte]parsed[*replay.KubeletConfig]{}}}
}

// machine is machine.FromSysfs(dump).
func (p *parseMemo) machine(dump []byte) (*machine.Machine, error) {
	if p == nil {
		return machine.FromSysfs(dump)
	}
	return p.machines.get(dump, machine.FromSysfs)
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
}

type parsed[T any] struct {
	v   T
	err error
}

func (m *memo[T]) get(b []byte, parse func([]byte) (T, error)) (T, error) {
	key := sha256.Sum256(b)
	m.mu.Lock()
	got, ok := m.parsed[key]
	m.mu.Unlock()
	if !ok {
		got.v, got.err = parse(b)
		m.mu.Lock()
		m.parsed[key] = got
		m.mu.Unlock()
	}
	return got.v, got.err
}
