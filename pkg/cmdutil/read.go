package cmdutil

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// Config turns the completed flags into the library's config; live reads get their clients
// from the kubeconfig flags, with the client rate raised to match the concurrency (client-go's
// default 5 QPS would make 1,000 nodes wait ~10 minutes).
func (o *ReadOptions) Config() (nodestate.Config, error) {
	src := &o.Source
	cfg := nodestate.Config{
		FromDir:        src.FromDir,
		FromFile:       src.FromFile,
		Kind:           nodestate.Kind(src.Kind),
		KubeletRootDir: src.KubeletRootDir,
		Kubelet:        src.Kubelet,
		KubeletWhy:     "--kubelet-version",
		NodeFiles:      o.ReadNodeFiles,
		Cgroups:        o.ReadCgroups,
		PodNames:       o.ReadPodNames,
		Engines:        o.Engines,
	}
	if src.Offline() {
		return cfg, nil
	}
	live := &o.Live
	config, err := live.ConfigFlags.ToRESTConfig()
	if err != nil {
		return cfg, err
	}
	config.QPS, config.Burst = nodestate.ClientRate(live.Concurrency)
	client, err := kubernetes.NewForConfig(protobuf(config))
	if err != nil {
		return cfg, err
	}
	ns := DebugNamespace(live.ConfigFlags)
	cfg.Nodes, cfg.AllNodes, cfg.Selector = o.Nodes, live.AllNodes, live.Selector
	cfg.Published = o.Published
	cfg.Client, cfg.RESTConfig, cfg.Concurrency = client, config, live.Concurrency
	cfg.Machine, cfg.KubeletConfig = o.ReadMachine, o.ReadKubeletConfig
	cfg.DebugPod = nodestate.DebugPod{Namespace: ns, Image: live.DebugImage(), ImagePullSecret: live.ImagePullSecret, Timeout: live.Timeout,
		Reader: live.Reader}
	return cfg, nil
}

// protobuf returns a copy of config that talks protobuf, falling back to JSON, as the
// Kubernetes controllers' clients do: every object the plugin sends and receives is a built-in
// type (nodes, pods, events), and protobuf costs the API server less to encode than JSON, for
// each pod in a node's pod list and each change on the shared watches (docs/performance.md).
func protobuf(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return config
}

// Read runs the library on the flags and returns each node's result as it completes, with a
// progress line on a terminal's stderr. What stops the read before any node is judged (no
// cluster, unreadable copies) ends the sequence with an ExitUnreadable error, and so does
// Ctrl-C (see Interrupted).
func (o *ReadOptions) Read(ctx context.Context, errOut io.Writer) iter.Seq2[*nodestate.NodeResult, error] {
	return func(yield func(*nodestate.NodeResult, error) bool) {
		cfg, err := o.Config()
		if err != nil {
			yield(nil, &ExitError{Code: ExitUnreadable, Message: err.Error()})
			return
		}
		o.ReadConfig(ctx, errOut, cfg)(yield)
	}
}

// ReadConfig is Read of a config made from the flags and then changed (verify --all-nodes
// reads only the nodes its monitor does not answer for).
func (o *ReadOptions) ReadConfig(ctx context.Context, errOut io.Writer, cfg nodestate.Config) iter.Seq2[*nodestate.NodeResult, error] {
	return func(yield func(*nodestate.NodeResult, error) bool) {
		r, err := nodestate.New(ctx, cfg)
		if err != nil {
			yield(nil, &ExitError{Code: ExitUnreadable, Message: err.Error()})
			return
		}
		o.Live.Resolved = r.Nodes()
		if len(r.Nodes()) > 1 {
			fleetGC()
		}
		progress := newProgress(errOut, len(r.Nodes()))
		defer progress.finish()
		for n, err := range r.Results(ctx) {
			switch {
			case err == nodestate.ErrInterrupted:
				err = errInterrupted
			case err != nil:
				err = &ExitError{Code: ExitUnreadable, Message: err.Error()}
			default:
				progress.done(n.Err != nil)
			}
			if !yield(n, err) {
				return
			}
		}
	}
}

// fleetGCPercent is the garbage collector's goal for a read of many nodes, unless GOGC says
// otherwise: such a read allocates about 1 MB a node while it keeps a few MiB live, so at
// the default goal (collect each time the heap doubles) the collector took an eighth of its
// CPU (bench-fanout's profiles); letting the heap triple halves that, for a few MiB of peak.
const fleetGCPercent = 200

func fleetGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(fleetGCPercent)
	}
}

var errInterrupted = &ExitError{Code: ExitUnreadable, Message: nodestate.ErrInterrupted.Error()}

// Interrupted reports the error of a fan-out stopped by Ctrl-C or SIGTERM.
func Interrupted(err error) bool { return err == errInterrupted }

// ReportNodeError says on stderr why a node was not read, and returns the exit code it means: a
// skipped node (Windows) is a note and no failure; a node never started because of Ctrl-C goes
// unsaid (the interruption is reported once).
func ReportNodeError(w io.Writer, n *nodestate.NodeResult) int {
	line, exit := nodeErrorLine(n)
	if line != "" {
		fmt.Fprintln(w, line)
	}
	return exit
}

// nodeErrorLine is what ReportNodeError says of a node not read ("" for nothing), and the exit
// code it means.
func nodeErrorLine(n *nodestate.NodeResult) (string, int) {
	switch {
	case n.Skipped():
		return fmt.Sprintf("note: %v", n.Err), ExitOK
	case n.Canceled():
		return "", ExitUnreadable
	}
	return fmt.Sprintf("error: %v", n.Err), ExitUnreadable
}

// progress prints "read 37/100 nodes (2 failed)" on stderr, only when stderr is a terminal.
type progress struct {
	w             io.Writer
	total         int
	count, failed atomic.Int64
}

func newProgress(w io.Writer, total int) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total < 2 {
		return &progress{}
	}
	return &progress{w: w, total: total}
}

func (p *progress) done(failed bool) {
	if p.w == nil {
		return
	}
	n := p.count.Add(1)
	if failed {
		p.failed.Add(1)
	}
	fmt.Fprintf(p.w, "\rread %d/%d nodes (%d failed)", n, p.total, p.failed.Load())
}

func (p *progress) finish() {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func completeNodes(ctx context.Context, flags *genericclioptions.ConfigFlags, prefix string) []string {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil
	}
	nodes, err := nodestate.NodeNames(ctx, client)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// NoteNode is what every fan-out command says of a node first: its warnings, then its error if
// it could not be read, as notes: said once across the nodes that share them, with their count
// and first names (-v=1: each as it comes). It returns the exit status the error calls for and
// whether the node was read.
func NoteNode(notes *Notes, n *nodestate.NodeResult) (exit int, read bool) {
	for _, w := range n.Warnings() {
		notes.Addf(n.Node, "warning: %s: %s", n.Where, w)
	}
	if n.Err != nil {
		line, exit := nodeErrorLine(n)
		if line != "" {
			notes.Addf(n.Node, "%s", line)
		}
		return exit, false
	}
	return ExitOK, true
}
