package decode

import (
	"errors"
	"fmt"
	"path"
)

// readOutcome is what one kubelet makes of a file.
type readOutcome struct {
	verdict Verdict
	err     string
	cause   string
	result  attemptResult // the accepting attempt, when valid
	model   any           // its version-neutral model, when valid
	// restoreFailed: the file loaded, then a restore check refused its content; refusal, when
	// set, is what the kubelet then does instead of the file's Refused row.
	restoreFailed bool
	refusal       *Refusal
	// dropped is the entries the restore skips of a file it accepts.
	dropped []DroppedEntry
}

const notReadError = "this kubelet version does not read this file"

// simulate replays kubelet k's restore path for the file: its attempts in order, the error it
// reports when all fail, worded as it words it.
func simulate(kind Kind, in *input, k Kubelet, rootDir string) readOutcome {
	attempts := attemptsOf(index, kind, k)
	if len(attempts) == 0 {
		return readOutcome{verdict: NotRead, err: notReadError}
	}
	var cause error
	var first attemptResult
	for i := range attempts {
		a := &attempts[i]
		res := a.run(in, k)
		if i == 0 {
			first = res
		}
		if res.err == nil {
			if i > 0 && attempts[0].Keeps && !isJSONError(first.err) {
				res.keptFrom = &first
			}
			model := res.layoutModel()
			var dropped []DroppedEntry
			if dropped, cause = restoreOf(kind, k, model); cause == nil {
				return readOutcome{verdict: Valid, result: res, model: model, dropped: dropped}
			}
			break
		}
		if a.Authoritative != "" && a.Layout.hasOwnData != nil && a.Layout.hasOwnData(res.value) {
			cause = prefixed{a.Authoritative, res.err}
			break
		}
		if !a.Quiet || cause == nil {
			cause = res.err
		}
	}
	wrap := wrapOf(kind, k)
	if errors.As(cause, new(*payloadError)) && files[kind].PayloadWrap != "" {
		wrap = files[kind].PayloadWrap
	}
	verdict := Unreadable
	if errors.Is(cause, errCorrupted) {
		verdict = Corrupt
	}
	out := readOutcome{verdict: verdict, err: fmt.Sprintf(wrap, cause.Error(), path.Join(rootDir, PathOf(kind))), cause: innermost(cause).Error()}
	var re *restoreError
	if errors.As(cause, &re) {
		out.restoreFailed, out.refusal = true, re.refusal
	}
	return out
}

// prefixed is an error with a prefix that keeps errors.Is working.
type prefixed struct {
	prefix string
	err    error
}

func (p prefixed) Error() string { return p.prefix + p.err.Error() }
func (p prefixed) Unwrap() error { return p.err }

// payloadError is a failure to decode the data document inside a checkpoint.
type payloadError struct{ err error }

func (p *payloadError) Error() string { return p.err.Error() }
func (p *payloadError) Unwrap() error { return p.err }

// innermost unwraps prefixes down to the root cause.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
