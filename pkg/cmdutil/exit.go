// Package cmdutil holds what every subcommand shares: exit codes and output-format checks.
package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every command.
const (
	ExitOK         = 0 // every file read is valid
	ExitNotValid   = 1 // a file was read but is not valid (or the command failed otherwise)
	ExitUnreadable = 2 // a node or file could not be read at all
	// ExitUsage: the command line is wrong (unknown flag, flags that do not go together); nothing
	// was read. Distinct from 1 so a script can tell "my invocation is wrong" from "a file is bad".
	ExitUsage = 3
	// ExitNotJudged (admit): a pod was not judged (its devices not replayed, or it follows one
	// that was not) and none was refused. A refusal (1), a node not read (2) and a usage error
	// (3) take precedence: a script sees "not judged" only where nothing worse happened.
	ExitNotJudged = 4
)

// ExitStatusHelp is the exit-status paragraph of the reading commands' help.
const ExitStatusHelp = "Exit status: 0 when every file is valid, 1 when a file is not, 2 when a node or file\n" +
	"could not be read at all, 3 on a usage error (nothing was read)."

// UsageError marks err as a usage error (exit status ExitUsage).
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Message: err.Error()}
}

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

// RunE wires a Runner into cobra. Complete and Validate judge the command line: their errors
// are usage errors. An error of Run without an exit code of its own exits ExitNotValid, as it
// always did; only errors cobra itself returns (unknown flags, commands) are left unmarked, and
// Execute makes those usage errors too.
func RunE(o Runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return UsageError(err)
		}
		if err := o.Validate(); err != nil {
			return UsageError(err)
		}
		err := o.Run(cmd.Context())
		var exit *ExitError
		if err != nil && !errors.As(err, &exit) {
			return &ExitError{Code: ExitNotValid, Message: err.Error()}
		}
		return err
	}
}
