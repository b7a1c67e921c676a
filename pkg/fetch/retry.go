package fetch

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/streaming/pkg/httpstream"
)

// retryBackoff spaces the retries of a request that failed for a transient reason: quick at
// first (a dropped connection), then every few seconds (an API server restarting). Its
// DelayFunc stays at Cap once there, so retries go on until the node's own timeout (create and
// wait, exec, delete) ends them.
var retryBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 4 * time.Second, Steps: math.MaxInt32}

// maxExecAttempts bounds the execs of one debug pod: an exec that always breaks the same way
// (a node that always cuts its tar) fails in seconds rather than at the exec timeout.
const maxExecAttempts = 5

// transientMarkers are the texts of failures that say "not now" rather than "no": a connection
// dropped or refused while the API server restarts, a stream cut between it and the kubelet.
// Exec errors often reach us only as text (a WebSocket close reason, the kubelet's message
// inside an API status).
var transientMarkers = []string{
	"connection refused", "connection reset", "broken pipe", "error sending request",
	"unexpected EOF", "abnormal closure", "http2: server sent GOAWAY", "http2: client connection lost",
	"use of closed network connection", "TLS handshake timeout", "i/o timeout", "server is currently unable",
	// A 500 of the exec path, as text: the node's exec endpoint (kubelet, runtime) failed.
	"Internal error occurred",
}

// permanentMarkers win over transientMarkers: the same 500 carries them when retrying cannot help.
var permanentMarkers = []string{"executable file not found", "no such file or directory"}

// transient reports whether err is worth retrying a moment later: the API server or the node's
// exec endpoint unreachable for a moment, a 5xx or 429 answer, a stream cut short. A refusal
// (forbidden, invalid, not found) and a cancellation or timeout of our own are not.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	for _, m := range permanentMarkers {
		if strings.Contains(err.Error(), m) {
			return false
		}
	}
	var upgrade *httpstream.UpgradeFailureError
	if errors.As(err, &upgrade) && upgrade.Cause != nil && transient(upgrade.Cause) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			hasTransientMarker(status.Status().Message)
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsTimeout(err) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return hasTransientMarker(err.Error())
}

func hasTransientMarker(msg string) bool {
	for _, m := range transientMarkers {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// retryTransient calls fn until it succeeds, fails for a reason that is not transient, has been
// called maxAttempts times (0: no limit), or ctx ends (apimachinery's capped exponential backoff
// between calls). It returns fn's last error, so a request that kept failing until its timeout
// reports why it failed, not just the timeout.
func retryTransient(ctx context.Context, maxAttempts int, fn func(context.Context) error) error {
	var last error
	attempts := 0
	err := retryBackoff.DelayFunc().Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		last = fn(ctx)
		attempts++
		switch {
		case last == nil:
			return true, nil
		case transient(last) && ctx.Err() == nil && (maxAttempts == 0 || attempts < maxAttempts):
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
