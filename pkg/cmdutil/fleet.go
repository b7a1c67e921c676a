package cmdutil

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// FleetFlags say where a fleet read's answers come from: the conditions the Node Problem
// Detector's monitor (deploy/npd) set, when fresh enough, else a debug pod per node.
type FleetFlags struct {
	Fresh           bool
	MaxConditionAge time.Duration
}

// AddFlags adds --fresh and --max-condition-age.
func (f *FleetFlags) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.Fresh, "fresh", false, "Read every node now through a debug pod instead of the conditions the Node Problem Detector's monitor set")
	cmd.Flags().DurationVar(&f.MaxConditionAge, "max-condition-age", nodestate.DefaultMaxConditionAge,
		"Read a node through a debug pod when its monitor's conditions are older than this (the detector rewrites them at least every 5m)")
}

// Options are the library's options for the flags, ages measured from now.
func (f *FleetFlags) Options(now time.Time) nodestate.FleetOptions {
	return nodestate.FleetOptions{Fresh: f.Fresh, MaxAge: f.MaxConditionAge, Now: now}
}

// Validate checks the flags' values.
func (f *FleetFlags) Validate() error {
	if f.MaxConditionAge <= 0 {
		return fmt.Errorf("--max-condition-age must be positive, e.g. 15m")
	}
	return nil
}
