package decode

import (
	"errors"
	"fmt"
	"path"
)

// A readerRow is how the kubelets in Versions (with Gate) restore one checkpoint file: the
// GetCheckpoint attempts in order, which failure they report, and how they word it.
type readerRow struct {
	Kind     Kind
	Versions versionRange
	// Gate restricts the row to kubelets with this gate on ("Name") or off ("!Name").
	Gate     string
	Attempts []attempt
	// FirstError: report the first attempt's error when all fail (else the last one's).
	FirstError bool
	// StructNames renames mirror types in JSON errors to that release's type names.
	StructNames map[string]string
	// Wrap words the error: %[1]s is the error, %[2]q the file's path on the node.
	Wrap string
	// PayloadWrap words an error decoding the data document after the checkpoint loaded;
	// empty uses Wrap.
	PayloadWrap string
	// MigratesIntoFirst: when an older layout is accepted, the kubelet copies it into the object
	// of the first attempt, which keeps what that attempt decoded before its checksum failed
	// (1.36 with PodLevelResourceManagers keeps the pod-level entries of a V3 file this way).
	MigratesIntoFirst bool
}

func (r *readerRow) matches(k Kubelet) bool {
	if r.Kind == "" || !r.Versions.contains(k.Version) {
		return false
	}
	switch {
	case r.Gate == "":
		return true
	case r.Gate[0] == '!':
		return !k.Gate(r.Gate[1:])
	}
	return k.Gate(r.Gate)
}

func findReader(kind Kind, k Kubelet) *readerRow {
	for i := range readers {
		if readers[i].Kind == kind && readers[i].matches(k) {
			return &readers[i]
		}
	}
	return nil
}

// readOutcome is what one kubelet makes of a file.
type readOutcome struct {
	verdict Verdict
	err     string
	cause   string
	result  attemptResult // the accepting attempt, when valid
	row     *readerRow
}

const notReadError = "this kubelet version does not read this file"

// simulate replays kubelet k's restore path for the file.
func simulate(kind Kind, in *input, k Kubelet, rootDir string) readOutcome {
	row := findReader(kind, k)
	if row == nil {
		return readOutcome{verdict: NotRead, err: notReadError}
	}
	var failures []error
	var first attemptResult
	var stop error
	for i := range row.Attempts {
		a := &row.Attempts[i]
		res := a.run(in, k, row.StructNames)
		if i == 0 {
			first = res
		}
		if res.err == nil {
			if i > 0 && row.MigratesIntoFirst && !isJSONError(first.err) {
				res.keptFrom = &first
			}
			return readOutcome{verdict: Valid, result: res, row: row}
		}
		if a.Authoritative != nil && a.Authoritative.Applies(res.value) {
			stop = prefixed{a.Authoritative.Prefix, res.err}
			break
		}
		failures = append(failures, res.err)
	}
	cause := stop
	if cause == nil {
		cause = failures[len(failures)-1]
		if row.FirstError {
			cause = failures[0]
		}
	}
	wrap := row.Wrap
	if errors.As(cause, new(*payloadError)) && row.PayloadWrap != "" {
		wrap = row.PayloadWrap
	}
	verdict := Unreadable
	if errors.Is(cause, errCorrupted) {
		verdict = Corrupt
	}
	return readOutcome{verdict: verdict, err: fmt.Sprintf(wrap, cause.Error(), path.Join(rootDir, PathOf(kind))), cause: innermost(cause).Error(), row: row}
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
