package replay

// The topology manager's policy options (topologymanager/policy_options.go), parsed once into
// a struct the policies read.

import (
	"fmt"
	"sort"
	"strconv"
)

// The topology manager's options.
const (
	OptPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	OptMaxAllowableNUMANodes  = "max-allowable-numa-nodes"

	defaultMaxAllowableNUMANodes = 8
)

// TopologyPolicyOptions are the topology manager's options, parsed once (NewPolicyOptions).
type TopologyPolicyOptions struct {
	PreferClosestNUMA     bool
	MaxAllowableNUMANodes int
}

func newTopologyPolicyOptions(e *env) (TopologyPolicyOptions, error) {
	opts := TopologyPolicyOptions{MaxAllowableNUMANodes: defaultMaxAllowableNUMANodes}
	raw := e.cfg.TopologyManagerPolicyOptions
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names) // the kubelet walks a map: with several bad options it names any one
	for _, name := range names {
		if err := e.release.checkTopologyOption(name, e.gate); err != nil {
			return opts, err
		}
		value := raw[name]
		switch name {
		case OptPreferClosestNUMANodes:
			on, err := strconv.ParseBool(value)
			if err != nil {
				return opts, fmt.Errorf("bad value for option %q: %w", name, err)
			}
			opts.PreferClosestNUMA = on
		case OptMaxAllowableNUMANodes:
			n, err := strconv.Atoi(value)
			if err != nil {
				return opts, fmt.Errorf("unable to convert policy option to integer %q: %w", name, err)
			}
			if n < defaultMaxAllowableNUMANodes {
				return opts, fmt.Errorf("the minimum value of %q should not be less than %v", name, defaultMaxAllowableNUMANodes)
			}
			opts.MaxAllowableNUMANodes = n
		default:
			return opts, fmt.Errorf("unsupported topologymanager option: %q (%s)", name, value)
		}
	}
	return opts, nil
}
