// Package cmdutil holds what every subcommand shares: exit codes and output-format checks.
package cmdutil

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every command.
const (
	ExitOK         = 0 // every file read is valid
	ExitNotValid   = 1 // a file was read but is not valid (or a usage error)
	ExitUnreadable = 2 // a node or file could not be read at all
)

// ExitError carries an exit code up to main. An empty Message means the command already said
// everything it had to say on stdout/stderr.
type ExitError struct {
	Code    int
	Message string
}

func (e *ExitError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Message
}

// Exit returns an ExitError for code, or nil for ExitOK.
func Exit(code int) error {
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code}
}

// Runner is a command's Options, shaped as kubectl's: Complete fills in what the flags and
// arguments imply, Validate checks them, Run does the work.
type Runner interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE wires a Runner into cobra.
func RunE(o Runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
