package replay

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The static policy's options (cpumanager/policy_options.go), parsed once into a struct the
// policy reads.

// The static policy's options (policy_options.go).
const (
	OptFullPCPUsOnly             = "full-pcpus-only"
	OptDistributeCPUsAcrossNUMA  = "distribute-cpus-across-numa"
	OptAlignBySocket             = "align-by-socket"
	OptDistributeCPUsAcrossCores = "distribute-cpus-across-cores"
	OptStrictCPUReservation      = "strict-cpu-reservation"
	OptPreferAlignByUncoreCache  = "prefer-align-cpus-by-uncorecache"
)

// StaticPolicyOptions are the static policy's options, parsed once (NewStaticPolicyOptions).
type StaticPolicyOptions struct {
	FullPhysicalCPUsOnly      bool
	DistributeCPUsAcrossNUMA  bool
	AlignBySocket             bool
	DistributeCPUsAcrossCores bool
	StrictCPUReservation      bool
	PreferAlignByUncoreCache  bool
}

// field is where each option lands.
func (o *StaticPolicyOptions) field(name string) *bool {
	return map[string]*bool{
		OptFullPCPUsOnly: &o.FullPhysicalCPUsOnly, OptDistributeCPUsAcrossNUMA: &o.DistributeCPUsAcrossNUMA,
		OptAlignBySocket: &o.AlignBySocket, OptDistributeCPUsAcrossCores: &o.DistributeCPUsAcrossCores,
		OptStrictCPUReservation: &o.StrictCPUReservation, OptPreferAlignByUncoreCache: &o.PreferAlignByUncoreCache,
	}[name]
}

// newStaticPolicyOptions checks each option against the release's levels and gates (in name
// order: the kubelet walks a map, so with several bad options it names any one of them),
// then the pairs the release refuses together, then ValidateStaticPolicyOptions.
func newStaticPolicyOptions(e *env, topo *CPUTopology, tm *TopologyManager) (StaticPolicyOptions, error) {
	var opts StaticPolicyOptions
	raw := e.cfg.CPUManagerPolicyOptions
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		level, known := e.release.cpuOptions[name]
		switch {
		case !known:
			return opts, fmt.Errorf("unknown CPU Manager Policy option: %q", name)
		case level == alpha && !e.gate(decode.GateCPUManagerPolicyAlphaOptions):
			return opts, fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", name)
		case level == beta && !e.gate(decode.GateCPUManagerPolicyBetaOptions):
			return opts, fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", name)
		}
		on, err := strconv.ParseBool(raw[name])
		if err != nil {
			return opts, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		*opts.field(name) = on
	}
	for _, pair := range e.release.cpuOptionConflicts {
		if *opts.field(pair[0]) && *opts.field(pair[1]) {
			return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", pair[0], pair[1])
		}
	}
	if opts.AlignBySocket {
		if tm.GetPolicy().Name() == TopologyPolicySingleNumaNode {
			//lint:ignore ST1005 the kubelet's own text, typo included
			return opts, fmt.Errorf("Topolgy manager %s policy is incompatible with CPUManager %s policy option", TopologyPolicySingleNumaNode, OptAlignBySocket)
		}
		if topo.NumSockets > topo.NumNUMANodes {
			//lint:ignore ST1005 the kubelet's own text
			return opts, errors.New("Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
		}
	}
	if !e.release.has(StrictReservation) {
		opts.StrictCPUReservation = false // the option exists but nothing reads it yet
	}
	return opts, nil
}
