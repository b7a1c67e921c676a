// Package cmdutil holds what every subcommand shares: exit codes and output-format checks.
package cmdutil

import "fmt"

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
