// Command floor is the lower bound `make bench-scale` compares the plugin with: the least a
// client-go program must do to read the same files from every node the same way. It lists the
// nodes once, watches the debug pods on ONE shared watch, and per node creates the plugin's
// very pod, waits for Running, runs one exec of the plugin's tar and deletes the pod; it reads
// the tar's bytes and decodes nothing. The client rate limiter is off: the floor is what the
// API server costs, nothing else.
//
//	floor --kubeconfig K -n NS -l SELECTOR --concurrency 20 [--command JSON] [--pod-options JSON] [--list-pods] [--get-claims NS/NAME,...]
//
// --command is the exec's command as a JSON array (default: the tar of the checkpoint files,
// verify's exec): a verb that reads more of the node in the same exec (doctor's and admit's
// sysfs, cgroups and sockets) is compared with a floor that runs its very command, so that the
// node's share of the work, which kwok runs on the control plane's host, is in both.
// --pod-options is its debug pod's fetch.Options as JSON (nodestate's Runner.DebugPodOptions):
// doctor's pod mounts the cgroup and CDI dirs too, and a larger pod costs the API server, etcd
// and kwok more on each write and watch event, so the floor creates the verb's very pod.
// --list-pods also lists each node's pods after its exec, while its pod is deleted, as the
// plugin does for the verbs that weigh or name them (doctor, admit): the same API work, none
// of the plugin's. --get-claims also gets those ResourceClaims for each node, as doctor gets
// the claims a node's DRA checkpoint prepared (from the watch cache, resourceVersion 0).
//
// It prints one line: `floor nodes=N wall=S requests=R bytes=B failed=F` (requests counted
// on the client, to check how the benchmark attributes the API server's own counts).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	ns := flag.String("n", "default", "namespace of the debug pods")
	selector := flag.String("l", "", "node label selector")
	concurrency := flag.Int("concurrency", 20, "nodes at once")
	command := flag.String("command", "", "the exec's command, a JSON array (default: verify's)")
	podOptions := flag.String("pod-options", "", "the debug pod's fetch.Options as JSON (its host dirs, image, deadlines; default: verify's); -n sets its namespace")
	listPods := flag.Bool("list-pods", false, "also list each node's pods, as doctor and admit do")
	getClaims := flag.String("get-claims", "", "also get these ResourceClaims (NS/NAME, comma-separated) for each node, as doctor does")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here, to compare with the plugin's --profile cpu")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	cmd := fetch.CollectCommand(decode.Paths())
	if *command != "" {
		if err := json.Unmarshal([]byte(*command), &cmd); err != nil || len(cmd) == 0 {
			fmt.Fprintf(os.Stderr, "floor: --command: not a JSON array of strings: %v\n", err)
			os.Exit(2)
		}
	}
	var opts fetch.Options
	if *podOptions != "" {
		if err := json.Unmarshal([]byte(*podOptions), &opts); err != nil {
			fmt.Fprintf(os.Stderr, "floor: --pod-options: %v\n", err)
			os.Exit(2)
		}
	}
	opts.Namespace = *ns
	var claims []string
	if *getClaims != "" {
		claims = strings.Split(*getClaims, ",")
	}
	if err := run(*kubeconfig, opts, *selector, *concurrency, cmd, *listPods, claims); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// counter counts the HTTP requests the client sends, through every transport it wraps.
type counter struct {
	n  *atomic.Int64
	rt http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// waiters hands each pod's Running (or its end) from the shared watch to its worker.
type waiters struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (w *waiters) add(name string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.m[name] = ch
	return ch
}

func (w *waiters) running(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.m[name]; ok {
		close(ch)
		delete(w.m, name)
	}
}

func run(kubeconfig string, opts fetch.Options, selector string, concurrency int, cmd []string, listPods bool, claims []string) error {
	start := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1 // no client-side limiter
	cfg.UserAgent = "nodestate-floor"
	var requests atomic.Int64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &counter{n: &requests, rt: rt} }
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	// The node list's resourceVersion is etcd's: the pod watch can start there.
	w, err := client.CoreV1().Pods(opts.Namespace).Watch(ctx, metav1.ListOptions{
		LabelSelector: fetch.ManagedSelector, ResourceVersion: nodes.ResourceVersion,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	ws := &waiters{m: map[string]chan struct{}{}}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) && p.Status.Phase == corev1.PodRunning {
				ws.running(p.Name)
			}
		}
	}()

	var bytes atomic.Int64
	var failed atomic.Int64
	g := new(errgroup.Group)
	g.SetLimit(concurrency)
	for i := range nodes.Items {
		node := &nodes.Items[i]
		g.Go(func() error {
			if err := readNode(ctx, client, cfg, ws, node, opts, cmd, listPods, claims, &bytes); err != nil {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "floor: node %s: %v\n", node.Name, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	fmt.Printf("floor nodes=%d wall=%.2fs requests=%d bytes=%d failed=%d\n",
		len(nodes.Items), time.Since(start).Seconds(), requests.Load(), bytes.Load(), failed.Load())
	if failed.Load() > 0 {
		return errors.New("some nodes failed")
	}
	return nil
}

func readNode(ctx context.Context, client kubernetes.Interface, cfg *rest.Config, ws *waiters, node *corev1.Node, opts fetch.Options, cmd []string, listPods bool, claims []string, total *atomic.Int64) (err error) {
	pods := client.CoreV1().Pods(opts.Namespace)
	pod := fetch.GenerateDebugPod(node, opts)
	ready := ws.add(pod.Name)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The node's pods are listed (and its claims got) while its debug pod is deleted, as the
	// plugin reads them (fetch.IndexNodePods: from the watch cache, by spec.nodeName): deferred
	// first, waited for last.
	var reads errgroup.Group
	defer func() { err = errors.Join(err, reads.Wait()) }()
	defer func() {
		_ = pods.Delete(context.WithoutCancel(ctx), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		return errors.New("not Running after 2m")
	}
	u := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: fetch.ContainerName, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return err
	}
	cw := &countWriter{}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: cw, Stderr: io.Discard}); err != nil {
		return err
	}
	total.Add(cw.n)
	if listPods {
		reads.Go(func() error {
			_, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String(), ResourceVersion: "0",
			})
			return err
		})
	}
	for _, claim := range claims {
		ns, name, _ := strings.Cut(claim, "/")
		reads.Go(func() error {
			_, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	return nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
