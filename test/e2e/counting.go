//go:build e2e

package e2e

import (
	"net/http"
	"regexp"
	"sync/atomic"
)

// harnessRequests counts the harness's requests that requestCount counts too.
var harnessRequests atomic.Int64

type countingTransport struct{ rt http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if countedPath(r.URL.Path) {
		harnessRequests.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// countedPath says whether a request path is one requestCount counts: core pods and nodes,
// and pods/exec; not their status (kwok's business) nor anything else.
var countedPathRE = regexp.MustCompile(`^/api/v1/(namespaces/[^/]+/)?(pods|nodes)(/[^/]+(/exec)?)?$`)

func countedPath(p string) bool { return countedPathRE.MatchString(p) }
