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
	mu       sync.Mutex
	machines map[[sha256.Size]byte]parsedMachine
	configs  map[[sha256.Size]byte]parsedConfig
}

type parsedMachine struct {
	m   *machine.Machine
	err error
}

type parsedConfig struct {
	c   *replay.KubeletConfig
	err error
}

func newParseMemo() *parseMemo {
	return &parseMemo{machines: map[[sha256.Size]byte]parsedMachine{}, configs: map[[sha256.Size]byte]parsedConfig{}}
}

// machine is machine.FromSysfs(dump).
func (p *parseMemo) machine(dump []byte) (*machine.Machine, error) {
	if p == nil {
		return machine.FromSysfs(dump)
	}
	key := sha256.Sum256(dump)
	p.mu.Lock()
	got, ok := p.machines[key]
	p.mu.Unlock()
	if !ok {
		got.m, got.err = machine.FromSysfs(dump)
		p.mu.Lock()
		p.machines[key] = got
		p.mu.Unlock()
	}
	return got.m, got.err
}

// config is replay.ParseKubeletConfig(b).
func (p *parseMemo) config(b []byte) (*replay.KubeletConfig, error) {
	if p == nil {
		return replay.ParseKubeletConfig(b)
	}
	key := sha256.Sum256(b)
	p.mu.Lock()
	got, ok := p.configs[key]
	p.mu.Unlock()
	if !ok {
		got.c, got.err = replay.ParseKubeletConfig(b)
		p.mu.Lock()
		p.configs[key] = got
		p.mu.Unlock()
	}
	return got.c, got.err
}
