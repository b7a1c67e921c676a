//go:build e2e

package e2e

// The control plane: PKI, etcd, kube-apiserver and kwok as child processes
// on 127.0.0.1, with their data and logs in one temp dir.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// Versions the harness expects from hack/tools/build.sh.
const kubeVersion = "v1.37.1"

// pluginNamespace is the plugin's default debug namespace, created from deploy/.
const pluginNamespace = fetch.DefaultNamespace

var (
	crdGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	execGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}
)

type controlPlane struct {
	dir        string // temp dir: pki/, etcd data, logs, kubeconfigs
	repoRoot   string
	toolsBin   string
	kubeconfig string
	server     string // https://127.0.0.1:port
	cfg        *rest.Config
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	ca         *certKey
	caPath     string

	mu    sync.Mutex
	procs []*proc

	// The kube-apiserver and its command line, for the fault suite's pause and restart.
	apiserver     *proc
	apiserverArgs []string
	// faultDir holds the exec fault injector (faultDir/bin/tar) and one mode file per node.
	faultDir string
	// readerProxy is in front of kwok for the nodes whose debug pods run the node reader
	// (readerproxy.go).
	readerProxy *readerProxy
}

// ---------------------------------------------------------------- processes

type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// Children are started from one goroutine locked to its OS thread for the
// life of the test binary: Pdeathsig fires when the *thread* that forked the
// child exits, so this keeps it tied to the process instead. If the test
// binary dies (panic, -timeout, kill -9) the kernel SIGKILLs every child.
var spawner = func() chan func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range ch {
			f()
		}
	}()
	return ch
}()

func (cp *controlPlane) start(name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(cp.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = cp.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+cp.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	spawner <- func() { errc <- cmd.Start() }
	if err := <-errc; err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
	logf2("started %s (pid %d), log %s", name, cmd.Process.Pid, logPath)
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// stopAll stops the children in reverse start order (kwok, apiserver, etcd).
func (cp *controlPlane) stopAll() {
	cp.mu.Lock()
	procs := cp.procs
	cp.procs = nil
	cp.mu.Unlock()
	cp.readerProxy.close()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
		logf2("stopped %s (pid %d)", procs[i].name, procs[i].cmd.Process.Pid)
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ok until it returns true, the process exits, or timeout.
func waitFor(p *proc, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v); last log lines:\n%s", p.name, p.waitErr, tail(p.logPath, 30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; last log lines:\n%s", p.name, timeout, tail(p.logPath, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ---------------------------------------------------------------- PKI

type certKey struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func newCA() (*certKey, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kubectl-nodestate-e2e-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certKey{cert: cert, key: key, keyPEM: keyPEM,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a leaf certificate. With ips/dns it is a serving cert,
// otherwise a client cert for user cn in groups orgs.
func (ca *certKey) issue(cn string, orgs []string, ips []net.IP, dns []string) (*certKey, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(ips)+len(dns) > 0 {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certKey{cert: cert, key: key, keyPEM: keyPEM,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func (ck *certKey) write(dir, name string) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err = os.WriteFile(certPath, ck.certPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, os.WriteFile(keyPath, ck.keyPEM, 0o600)
}

// writeKubeconfig writes a kubeconfig for a client cert issued by the CA.
func (cp *controlPlane) writeKubeconfig(path, user string, ck *certKey) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.server, CertificateAuthorityData: cp.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: ck.certPEM, ClientKeyData: ck.keyPEM}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

// ---------------------------------------------------------------- start

func logf2(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[e2e %s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// startControlPlane builds nothing: toolsBin must hold etcd, kube-apiserver,
// kwok and kubectl. It returns a running control plane or an error (after
// stopping whatever it started).
func startControlPlane(repoRoot, toolsBin string) (cp *controlPlane, err error) {
	begin := time.Now()
	dir, err := os.MkdirTemp("", "nodestate-e2e-")
	if err != nil {
		return nil, err
	}
	cp = &controlPlane{dir: dir, repoRoot: repoRoot, toolsBin: toolsBin}
	defer func() {
		if err != nil {
			cp.stopAll()
			err = fmt.Errorf("%w (data and logs kept in %s)", err, dir)
		}
	}()
	for _, b := range []string{"etcd", "kube-apiserver", "kwok", "kubectl"} {
		if _, err := os.Stat(filepath.Join(toolsBin, b)); err != nil {
			return cp, fmt.Errorf("tool binary missing (run hack/tools/build.sh): %w", err)
		}
	}
	ports, err := freePorts(4)
	if err != nil {
		return cp, err
	}
	etcdPort, etcdPeerPort, apiPort, kwokPort := ports[0], ports[1], ports[2], ports[3]
	cp.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	// PKI.
	pkiDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return cp, err
	}
	if cp.ca, err = newCA(); err != nil {
		return cp, err
	}
	caPath, _, err := cp.ca.write(pkiDir, "ca")
	if err != nil {
		return cp, err
	}
	cp.caPath = caPath
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	apiCert, err := cp.ca.issue("kube-apiserver", nil, append(loopback, net.ParseIP("10.96.0.1")),
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return cp, err
	}
	apiCrt, apiKey, err := apiCert.write(pkiDir, "apiserver")
	if err != nil {
		return cp, err
	}
	kubeletClient, err := cp.ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil)
	if err != nil {
		return cp, err
	}
	klCrt, klKey, err := kubeletClient.write(pkiDir, "apiserver-kubelet-client")
	if err != nil {
		return cp, err
	}
	kwokCert, err := cp.ca.issue("kwok", nil, loopback, []string{"localhost"})
	if err != nil {
		return cp, err
	}
	kwokCrt, kwokKey, err := kwokCert.write(pkiDir, "kwok")
	if err != nil {
		return cp, err
	}
	admin, err := cp.ca.issue("kubernetes-admin", []string{"system:masters"}, nil, nil)
	if err != nil {
		return cp, err
	}
	saKey, saKeyPEM, err := newKey()
	if err != nil {
		return cp, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return cp, err
	}
	saKeyPath, saPubPath := filepath.Join(pkiDir, "sa.key"), filepath.Join(pkiDir, "sa.pub")
	if err := os.WriteFile(saKeyPath, saKeyPEM, 0o600); err != nil {
		return cp, err
	}
	if err := os.WriteFile(saPubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}), 0o600); err != nil {
		return cp, err
	}
	cp.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := cp.writeKubeconfig(cp.kubeconfig, "kubernetes-admin", admin); err != nil {
		return cp, err
	}
	logf2("PKI ready in %s", time.Since(begin).Round(time.Millisecond))

	// etcd.
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	etcd, err := cp.start("etcd", filepath.Join(toolsBin, "etcd"),
		"--name=e2e",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync",
		// Single member: elect itself quickly.
		"--heartbeat-interval=20",
		"--election-timeout=200",
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	)
	if err != nil {
		return cp, err
	}
	if err := waitFor(etcd, 30*time.Second, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && bytes.Contains(b, []byte(`"health":"true"`))
	}); err != nil {
		return cp, err
	}
	logf2("etcd ready at %s in %s", etcdURL, time.Since(begin).Round(time.Millisecond))

	// kube-apiserver.
	cp.apiserverArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + pkiDir,
		"--tls-cert-file=" + apiCrt,
		"--tls-private-key-file=" + apiKey,
		"--client-ca-file=" + caPath,
		"--kubelet-client-certificate=" + klCrt,
		"--kubelet-client-key=" + klKey,
		"--kubelet-certificate-authority=" + caPath,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPubPath,
		"--service-account-signing-key-file=" + saKeyPath,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,PodSecurity",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	api, err := cp.start("kube-apiserver", filepath.Join(toolsBin, "kube-apiserver"), cp.apiserverArgs...)
	if err != nil {
		return cp, err
	}
	cp.apiserver = api
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.kubeconfig)
	if err != nil {
		return cp, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "nodestate-e2e-harness"
	// Count the harness's own requests (the exec mapper's included), so the benchmark can
	// take them out of the API server's counts.
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }
	cp.cfg = cfg
	if cp.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return cp, err
	}
	if cp.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return cp, err
	}
	if err := cp.waitAPIServerReady(api); err != nil {
		return cp, err
	}
	if err := cp.writeExecFaults(); err != nil {
		return cp, err
	}
	logf2("kube-apiserver ready at %s in %s", cp.server, time.Since(begin).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No kube-controller-manager runs: give the built-in namespaces the
	// ServiceAccount that pod admission requires.
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if err := ensureDefaultServiceAccount(ctx, cp.client, ns); err != nil {
			return cp, err
		}
	}
	// The plugin's own namespace, Role and ClusterRole, and the admission policies that admit
	// only the debug pod's shape there, installed as a user would (`kubectl apply -f deploy/`):
	// every test's debug pods in that namespace pass the policy, as on a cluster set up by the
	// README.
	if out, err := exec.CommandContext(ctx, filepath.Join(toolsBin, "kubectl"), "--kubeconfig", cp.kubeconfig,
		"apply", "-f", filepath.Join(repoRoot, "deploy")).CombinedOutput(); err != nil {
		return cp, fmt.Errorf("kubectl apply -f deploy/: %w: %s", err, out)
	}
	if err := ensureDefaultServiceAccount(ctx, cp.client, pluginNamespace); err != nil {
		return cp, err
	}
	// kwok's Exec and ClusterExec CRDs.
	if err := cp.applyCRDs(ctx, filepath.Join(repoRoot, "hack", "e2e", "kwok", "crd")); err != nil {
		return cp, err
	}
	logf2("CRDs established in %s", time.Since(begin).Round(time.Millisecond))
	// kube-apiserver sleeps 2 s in every custom-resource create made less
	// than 2 s after the CRD became Established (customresource_handler.go,
	// for HA). Pay that here, concurrently with kwok's start, not in a test.
	warmed := make(chan error, 1)
	go func() { warmed <- cp.warmUpExecs(ctx) }()

	// kwok.
	kwokConfig, err := cp.writeKwokConfig(kwokPort, kwokCrt, kwokKey)
	if err != nil {
		return cp, err
	}
	kwok, err := cp.start("kwok", filepath.Join(toolsBin, "kwok"),
		"--kubeconfig="+cp.kubeconfig,
		"--config="+kwokConfig,
	)
	if err != nil {
		return cp, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cp.ca.cert)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := waitFor(kwok, 30*time.Second, func() bool {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", kwokPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200
	}); err != nil {
		return cp, err
	}
	if err := <-warmed; err != nil {
		return cp, err
	}
	if cp.readerProxy, err = startReaderProxy(cp.ca.cert, kwokPort, kwokCrt, kwokKey); err != nil {
		return cp, err
	}
	logf2("kwok ready at 127.0.0.1:%d; control plane up in %s", kwokPort, time.Since(begin).Round(time.Millisecond))
	return cp, nil
}

// waitAPIServerReady waits until the kube-apiserver answers /readyz.
func (cp *controlPlane) waitAPIServerReady(api *proc) error {
	return waitFor(api, 120*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b, err := cp.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(b) == "ok"
	})
}

func ensureDefaultServiceAccount(ctx context.Context, c kubernetes.Interface, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/default: %w", ns, err)
	}
	return nil
}

// readYAMLDocs returns the non-empty YAML documents of the files in dir
// (or of one file), in name order.
func readYAMLDocs(path string) ([][]byte, error) {
	var files []string
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		m, _ := filepath.Glob(filepath.Join(path, "*.yaml"))
		sort.Strings(m)
		files = m
	} else {
		files = []string{path}
	}
	var docs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(m) > 0 {
				docs = append(docs, doc)
			}
		}
	}
	return docs, nil
}

func (cp *controlPlane) applyCRDs(ctx context.Context, dir string) error {
	docs, err := readYAMLDocs(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		if _, err := cp.dynamic.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	for _, name := range names {
		for {
			u, err := cp.dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get CRD %s: %w", name, err)
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
			if established {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// The CRD is served once discovery has it; an Exec list proves it.
	for {
		if _, err := cp.dynamic.Resource(execGVR).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("execs.kwok.x-k8s.io not served: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (cp *controlPlane) warmUpExecs(ctx context.Context) error {
	start := time.Now()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Exec",
		"metadata":   map[string]any{"name": "e2e-warm-up", "namespace": "default"},
		"spec":       map[string]any{"execs": []any{map[string]any{"local": map[string]any{"workDir": "/nonexistent"}}}},
	}}
	execs := cp.dynamic.Resource(execGVR).Namespace("default")
	if _, err := execs.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("warm-up Exec: %w", err)
	}
	if err := execs.Delete(ctx, "e2e-warm-up", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("warm-up Exec: %w", err)
	}
	logf2("first Exec create+delete took %s", time.Since(start).Round(time.Millisecond))
	return nil
}

// writeKwokConfig writes a full KwokConfiguration (kwok applies no defaults
// when given --config) followed by the node and pod stages.
func (cp *controlPlane) writeKwokConfig(port int, crt, key string) (string, error) {
	conf := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  enableCRDs:
  - Exec
  - ClusterExec
  cidr: 10.0.0.0/16
  nodeIP: 127.0.0.1
  nodePort: %[1]d
  serverAddress: 127.0.0.1:%[1]d
  tlsCertFile: %[2]q
  tlsPrivateKeyFile: %[3]q
  manageAllNodes: false
  manageNodesWithAnnotationSelector: kwok.x-k8s.io/node=fake
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: false
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 16
  nodeLeaseDurationSeconds: 0
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 4
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`, port, crt, key)
	docs, err := readYAMLDocs(filepath.Join(cp.repoRoot, "hack", "e2e", "kwok", "stages"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(conf)
	for _, d := range docs {
		b.WriteString("---\n")
		b.Write(bytes.TrimSpace(d))
		b.WriteString("\n")
	}
	path := filepath.Join(cp.dir, "kwok.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}
