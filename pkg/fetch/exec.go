package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
)

// ExecFunc runs command in a container without stdin or a TTY and streams its output. It is
// a seam: fake clientsets cannot exec, so unit tests substitute their own.
type ExecFunc func(ctx context.Context, namespace, pod, container string, command []string, stdout, stderr io.Writer) error

// RemoteExec execs through the API server as kubectl does: WebSocket first, falling back to
// SPDY when the server (or a proxy) cannot upgrade to WebSocket.
func RemoteExec(client kubernetes.Interface, config *rest.Config) ExecFunc {
	return func(ctx context.Context, namespace, pod, container string, command []string, stdout, stderr io.Writer) error {
		u := client.CoreV1().RESTClient().Post().
			Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{
				Container: container,
				Command:   command,
				Stdout:    true,
				Stderr:    true,
			}, scheme.ParameterCodec).URL()
		exec, err := newExecutor(config, u)
		if err != nil {
			return err
		}
		return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	}
}

// newExecutor mirrors kubectl's createExecutor (pkg/cmd/exec), except that the SPDY executor
// is only built when the fallback needs it: building one makes a TLS config (the client key
// parsed again) per exec, a few percent of the plugin's CPU over a fan-out that never uses it.
func newExecutor(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	spdy := lazyExecutor(func() (remotecommand.Executor, error) { return remotecommand.NewSPDYExecutor(config, "POST", u) })
	// WebSocket must be GET (RFC 6455 4.1).
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		// A 401/403 answer is the same for SPDY: keep it (execError explains it).
		var upgrade *httpstream.UpgradeFailureError
		if errors.As(err, &upgrade) && (apierrors.IsForbidden(upgrade.Cause) || apierrors.IsUnauthorized(upgrade.Cause)) {
			return false
		}
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// lazyExecutor builds its executor when first asked to stream.
type lazyExecutor func() (remotecommand.Executor, error)

func (l lazyExecutor) Stream(o remotecommand.StreamOptions) error {
	return l.StreamWithContext(context.Background(), o)
}

func (l lazyExecutor) StreamWithContext(ctx context.Context, o remotecommand.StreamOptions) error {
	e, err := l()
	if err != nil {
		return err
	}
	return e.StreamWithContext(ctx, o)
}

// collectScript keeps only the arguments that are regular files, then tars them to stdout.
// It always exits 0 and never reads stdin: under kwok (and some runtimes) a non-zero exit
// loses its code and stdin EOF never arrives. With no file present it sends nothing, which
// ReadTar takes as an empty archive (busybox tar refuses to create an empty one). tar's stderr
// is kept: a file that exists but cannot be read is reported there.
//
// The loop is the POSIX idiom for filtering "$@" in place: the word list is expanded once, each
// pass shifts one original argument off the front and re-appends it if it passes the test.
//
// Without tar in the image every file would look missing, so that case says so on stderr.
//
// It ends by writing endMarker to stderr, unless tar was killed (status 128 and up; a tar that
// failed to read a file still wrote an archive): an exec whose container was killed, or whose
// stream was cut, can come back without an error and with nothing (or part of a tar) on stdout,
// which would read as "no file" (or fewer files); without the marker the read is refused.
const collectScript = `command -v tar >/dev/null || { echo "` + noTarMarker + `" >&2; exit 0; }; ` +
	`for f in "$@"; do shift; [ -f "$f" ] && set -- "$@" "$f"; done; ` +
	`[ $# -eq 0 ] || tar -cf - "$@" || [ $? -lt 128 ] || exit 0; echo "` + endMarker + `" >&2; exit 0`

const (
	noTarMarker = "kubectl-nodestate: no tar in the image"
	endMarker   = "kubectl-nodestate: end of collect"
)

// CollectEnd is the line the collect command writes last on stderr: an ExecFunc standing in
// for the real exec (tests) writes it too, or the read is refused as cut short.
const CollectEnd = endMarker + "\n"

// errNoEndMarker is an exec that ended before the collect command did.
var errNoEndMarker = fmt.Errorf("the exec ended before the collect command did (stream cut or container killed): %w", io.ErrUnexpectedEOF)

// CollectCommand is the exec command that streams a tar of paths (relative to the working
// directory), with no section.
func CollectCommand(paths []string) []string {
	return ShellReaderCommand(collectScript, paths, nil)
}

// maxTrailer bounds what is drained after the end of the archive: tar pads its last record
// (GNU tar: to 10 KiB), anything much longer is not tar padding.
const maxTrailer = 1 << 20

// maxStderr bounds the stderr kept from the exec.
const maxStderr = 16 << 10

var errStopReading = errors.New("stopped reading the exec output")

// collect runs the collect command in the debug pod and parses its tar as it streams in, so
// the archive is never held twice in memory. It returns the files, the missing paths and tar's
// stderr lines. An exec that fails for a transient reason (the API server or the node's exec
// endpoint unreachable for a moment, the stream cut, the tar truncated) is run again, up to
// maxExecAttempts times within the exec timeout; what a failed attempt read is dropped whole,
// so no file is ever judged from part of a stream.
func (f *Fetcher) collect(parent context.Context, pod *corev1.Pod, opts Options) (*collected, error) {
	ctx, cancel := context.WithTimeout(parent, opts.ExecTimeout)
	defer cancel()
	var got *collected
	pods := f.Client.CoreV1().Pods(pod.Namespace)
	err := retryTransient(ctx, maxExecAttempts, func(context.Context) (err error) {
		got, err = f.collectOnce(parent, ctx, pod, opts)
		if transient(err) && f.podGone(ctx, pods, pod, err) {
			// Killed under us: no use running it again in this pod (the caller replaces it).
			return &Error{Reason: ReasonPodDeleted, Short: "pod deleted",
				Message: "the debug pod was deleted during the exec (by `kubectl nodestate cleanup`, an eviction or another client?)"}
		}
		return err
	})
	if err != nil && parent.Err() != nil {
		return nil, parent.Err()
	}
	return got, err
}

// Command is what the debug pod runs: the tar of f.Paths, and the dumps after it.
func (f *Fetcher) Command() []string {
	if f.Options.Reader == ReaderBinary {
		return NodeReadCommand(f.Paths, f.Dumps)
	}
	script := f.ShellScript
	if script == "" {
		script = ShellReaderScript(f.Dumps)
	}
	return ShellReaderCommand(script, f.Paths, f.Dumps)
}

// collectOnce is one exec of the collect command within ctx, the exec timeout's context.
func (f *Fetcher) collectOnce(parent, ctx context.Context, pod *corev1.Pod, opts Options) (*collected, error) {
	attempt, cancel := context.WithCancel(ctx)
	defer cancel()

	pr, pw := io.Pipe()
	stderr := &cappedBuffer{max: maxStderr}
	command := f.Command()
	for _, d := range f.Dumps {
		stderr.max += d.Max
	}
	execDone := make(chan error, 1)
	go func() {
		err := f.exec()(attempt, pod.Namespace, pod.Name, ContainerName, command, pw, stderr)
		pw.CloseWithError(err) // nil: the reader sees EOF after the last byte
		execDone <- err
	}()

	files, missing, tarErr := ReadTar(pr, f.Paths, opts.Limits)
	if tarErr == nil {
		if n, _ := io.Copy(io.Discard, io.LimitReader(pr, maxTrailer+1)); n > maxTrailer {
			tarErr = &ArchiveError{Problem: "unexpected data after the end of the archive"}
		}
	}
	refused := refusedArchive(tarErr)
	if refused {
		cancel() // stop the exec rather than wait for a stream we will not read
	}
	pr.CloseWithError(errStopReading) // a writer still going gets an error, not a hang
	execErr := <-execDone

	switch {
	case parent.Err() != nil:
		return nil, parent.Err()
	case refused:
		// What the node sent is the cause, not the exec we then cut short.
		return nil, badArchive(tarErr)
	case execErr != nil && ctx.Err() != nil:
		return nil, &Error{Reason: ReasonTimeout, Short: "timeout",
			Message: fmt.Sprintf("reading the files took longer than the exec timeout (%s)", opts.ExecTimeout), Err: execErr}
	}
	dumps, rest := splitDumps(stderr.String(), f.Dumps)
	switch {
	case execErr != nil:
		return nil, execError(pod, execErr, rest)
	case tarErr != nil:
		return nil, badArchive(tarErr)
	case strings.Contains(rest, noTarMarker):
		return nil, &Error{Reason: ReasonExec, Short: "no tar in image",
			Message: fmt.Sprintf("the debug image %q has no tar; use --image with an image that has sh and tar", opts.Image)}
	case !stderr.ended():
		return nil, &Error{Reason: ReasonExec, Short: "exec cut", Message: "exec into debug pod " + pod.Namespace + "/" + pod.Name +
			" ended early: " + errNoEndMarker.Error(), Err: errNoEndMarker}
	}
	rest = strings.Replace(rest, endMarker+"\n", "", 1)
	return &collected{files: files, missing: missing, warnings: stderrLines(rest), dumps: dumps}, nil
}

// collected is what one exec brought back.
type collected struct {
	files    map[string][]byte
	missing  []string
	warnings []string          // tar's stderr
	dumps    map[string][]byte // Fetcher.Dumps' sections, by header
}

// refusedArchive tells ReadTar refusing the content (a bad entry, a size cap) from the stream
// itself failing, which surfaces as the exec's error.
func refusedArchive(err error) bool {
	var ae *ArchiveError
	return errors.As(err, &ae) && (ae.Err == nil || errors.Is(ae.Err, ErrTooLarge))
}

func badArchive(err error) *Error {
	return &Error{Reason: ReasonBadArchive, Short: "bad archive", Message: err.Error(), Err: err}
}

func execError(pod *corev1.Pod, err error, stderr string) error {
	// A refused upgrade carries the API status as its Cause, without Unwrap.
	var upgrade *httpstream.UpgradeFailureError
	if errors.As(err, &upgrade) && upgrade.Cause != nil {
		err = upgrade.Cause
	}
	explained := ExplainError(err, pod.Namespace)
	var fe *Error
	if errors.As(explained, &fe) && fe.Reason != ReasonAPI {
		return explained
	}
	msg := "exec into debug pod " + pod.Namespace + "/" + pod.Name + " failed: " + text.OneLine(err.Error())
	if s := text.OneLine(stderr); s != "" {
		msg += " (stderr: " + s + ")"
	}
	if strings.Contains(err.Error(), "executable file not found") || strings.Contains(err.Error(), "no such file or directory") {
		if c := pod.Spec.Containers; len(c) > 0 && len(c[0].Command) > 0 && c[0].Command[0] == ReaderPath {
			msg += "; --reader=binary needs the plugin's own image (" + ReaderImageRepo + "), pick it or its mirror with --image"
		} else if strings.Contains(err.Error(), "executable file not found") {
			msg += "; the image needs sh and tar, pick one with --image"
		}
	}
	return &Error{Reason: ReasonExec, Short: "exec failed", Message: msg, Err: err}
}

func stderrLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// cappedBuffer keeps the first max bytes written and drops the rest without failing the
// writer: a chatty stderr must not break the exec stream.
//
// It also keeps the last bytes written, past the cap too, to see the collect script's endMarker.
type cappedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	max  int
	tail []byte
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	b.tail = append(b.tail, p...)
	if keep := len(endMarker) + 1; len(b.tail) > keep {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-keep:]...)
	}
	return len(p), nil
}

// ended reports whether the last line written is the collect script's endMarker.
func (b *cappedBuffer) ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.tail) == endMarker+"\n"
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
