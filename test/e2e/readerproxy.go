//go:build e2e

package e2e

// The node reader under kwok. A debug pod of --reader=binary runs the plugin's own image, whose
// binary is /kubectl-nodestate, and the plugin execs `/kubectl-nodestate node-read ...` in it.
// kwok runs an exec's command on the host as given, and the host has no /kubectl-nodestate. So
// the exec mapper marks such pods (their container's command is the node reader's) and points
// their node's kubelet endpoint at this proxy, in front of kwok: it passes every request through
// unchanged, except an exec into a marked pod whose command is the node reader's, which it
// rewrites to the plugin binary under test. kwok then runs that binary in the node's kubelet dir
// (the Exec object's workDir), as it runs the busybox reader's sh there.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// readerProbe is the exec mapper's probe of a node reader pod: the proxy runs it as `true`. It
// goes through only once the API server sends the node's exec to the proxy (kwok would look for
// /kubectl-nodestate on the host and fail), and it costs what the busybox reader pod's probe
// costs: not the start of a Go binary per pod. It is an empty read, which the exec policy admits.
var readerProbe = fetch.NodeReadCommand(nil, nil)

// readerPods are the debug pods ("namespace/name") whose container runs the node reader.
var readerPods sync.Map

// isNodeReaderPod says whether the pod's container runs the node reader (fetch.ReaderBinary).
func isNodeReaderPod(p *corev1.Pod) bool {
	c := p.Spec.Containers
	return len(c) > 0 && len(c[0].Command) > 1 && c[0].Command[0] == fetch.ReaderPath && c[0].Command[1] == fetch.NodeReadVerb
}

// readerProxy is the proxy in front of kwok's kubelet server.
type readerProxy struct {
	port int
	srv  *http.Server
	rp   *httputil.ReverseProxy
}

// startReaderProxy serves on a free loopback port with kwok's serving certificate (the API
// server checks it against the cluster CA, as kwok's) and forwards to kwok at kwokPort.
func startReaderProxy(ca *x509.Certificate, kwokPort int, crt, key string) (*readerProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	target := &url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", kwokPort)}
	rp := httputil.NewSingleHostReverseProxy(target)
	// HTTP/1.1 to kwok: exec is an upgraded connection (SPDY or WebSocket), which HTTP/2 cannot carry.
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: false,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(logWriter{}, "reader proxy: ", 0)
	p := &readerProxy{port: ln.Addr().(*net.TCPAddr).Port, rp: rp}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: rp.ErrorLog}
	go func() { _ = p.srv.ServeTLS(ln, crt, key) }()
	logf2("node reader proxy at 127.0.0.1:%d, in front of kwok", p.port)
	return p, nil
}

func (p *readerProxy) close() {
	if p != nil {
		_ = p.srv.Close()
	}
}

// ServeHTTP forwards r to kwok, with a marked pod's node reader exec rewritten.
func (p *readerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The kubelet's exec paths: /exec/{namespace}/{pod}/{container} and
	// /exec/{namespace}/{pod}/{uid}/{container}.
	if parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/"); len(parts) >= 4 && parts[0] == "exec" {
		q := r.URL.Query()
		if cmd := q["command"]; len(cmd) > 0 && cmd[0] == fetch.ReaderPath {
			if _, marked := readerPods.Load(parts[1] + "/" + parts[2]); marked {
				if slices.Equal(cmd, readerProbe) {
					// The mapper's probe: `true`, as a busybox reader pod's probe is, so that the
					// harness spends the same on a pod of either reader (bench-fanout compares them).
					cmd = []string{"true"}
				} else {
					bin, err := readerBinary()
					if err != nil {
						http.Error(w, err.Error(), http.StatusInternalServerError)
						return
					}
					cmd[0] = bin
				}
				q["command"] = cmd
				r.URL.RawQuery = q.Encode()
			}
		}
	}
	p.rp.ServeHTTP(w, r)
}

// readerBinary is the plugin binary under test: the one PluginBin built or linked, else
// NODESTATE_PLUGIN (a cluster-up.sh cluster, where the user runs the plugin).
func readerBinary() (string, error) {
	pluginMu.Lock()
	bin := pluginBin
	pluginMu.Unlock()
	if bin == "" {
		bin = os.Getenv("NODESTATE_PLUGIN")
	}
	if bin == "" {
		return "", fmt.Errorf("e2e reader proxy: no plugin binary for the node reader (set NODESTATE_PLUGIN)")
	}
	return filepath.Abs(bin)
}

// pointNodeAtReaderProxy makes the API server send the node's exec requests to the proxy: the
// node's kubelet endpoint port. kwok sets it only while it initialises the node (its
// node-initialize stage, until Ready), so the change stays; the proxy passes every other
// request through.
func (m *execMapper) pointNodeAtReaderProxy(ctx context.Context, nodeName string) error {
	if _, ok := pointedNodes.Load(nodeName); ok {
		return nil
	}
	node, err := m.cp.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return m.cp.pointAtReaderProxy(ctx, node)
}

// pointAtReaderProxy patches the node's kubelet endpoint port to the proxy's, unless it is.
func (cp *controlPlane) pointAtReaderProxy(ctx context.Context, node *corev1.Node) error {
	if cp.readerProxy == nil {
		return fmt.Errorf("no node reader proxy")
	}
	port := int32(cp.readerProxy.port)
	if node.Status.DaemonEndpoints.KubeletEndpoint.Port == port {
		return nil
	}
	patch := fmt.Sprintf(`{"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, port)
	_, err := cp.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("point node %s at the node reader proxy: %w", node.Name, err)
	}
	return nil
}

// pointedNodes are the nodes PointNodesAtReaderProxy pointed at the proxy, for the test's
// duration: the mapper does not get them again for each pod (an API request a pod that the
// busybox reader's pods do not cost).
var pointedNodes sync.Map

// PointNodesAtReaderProxy sends the exec requests of every node the selector picks through the
// node reader proxy, before any debug pod of the node reader runs there: a benchmark that
// compares the two readers then has every exec, of either reader, take the same path.
func PointNodesAtReaderProxy(t testing.TB, selector string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	list, err := cp.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(16)
	for i := range list.Items {
		g.Go(func() error { return cp.pointAtReaderProxy(ctx, &list.Items[i]) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		pointedNodes.Store(n.Name, true)
	}
	t.Cleanup(func() {
		for _, n := range list.Items {
			pointedNodes.Delete(n.Name)
		}
	})
	t.Logf("%d nodes (%s) send their execs through the node reader proxy", len(list.Items), selector)
}

// logWriter sends the proxy's log lines to the harness's log.
type logWriter struct{}

func (logWriter) Write(b []byte) (int, error) {
	logf2("%s", strings.TrimSpace(string(b)))
	return len(b), nil
}
