package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// LiveSession is what reading live nodes needs: clients and a configured fetcher.
type LiveSession struct {
	Client    kubernetes.Interface
	Fetcher   *fetch.Fetcher
	Namespace string
}

// NewLiveSession builds clients from the kubeconfig flags, with the client rate raised to match
// the concurrency (client-go's default 5 QPS would make 1,000 nodes wait ~10 minutes).
func (o *LiveOptions) NewLiveSession(rootDir string) (*LiveSession, error) {
	config, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = fetch.ClientRate(o.Concurrency)
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	f := &fetch.Fetcher{
		Client: client,
		Config: config,
		Paths:  decode.Paths(),
		Options: fetch.Options{
			Namespace:         ns,
			Image:             o.Image,
			ImagePullSecret:   o.ImagePullSecret,
			KubeletRootDir:    rootDir,
			PodRunningTimeout: o.Timeout,
			ExecTimeout:       o.Timeout,
		},
	}
	if err := f.Options.Validate(); err != nil {
		return nil, err
	}
	return &LiveSession{Client: client, Fetcher: f, Namespace: ns}, nil
}

// Nodes resolves the node list: the names given, or every node matching -l with --all-nodes.
// Listed nodes carry what reading them needs, so they are not read again one by one.
func (o *LiveOptions) Nodes(ctx context.Context, s *LiveSession, named []string) ([]fetch.NodeInfo, error) {
	if !o.AllNodes {
		return fetch.Named(named), nil
	}
	nodes, _, err := fetch.ListNodes(ctx, s.Client, o.Selector)
	if err != nil {
		return nil, fetch.ExplainError(err, s.Namespace)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no nodes match %q", o.Selector)
	}
	return nodes, nil
}

// eachLiveSnapshot reads live nodes, at most --concurrency at a time, handing each to fn as
// soon as it is read. A node that cannot be read becomes a snapshot with Err set.
func eachLiveSnapshot(ctx context.Context, src *SourceOptions, live *LiveOptions, named []string, errOut io.Writer, fn func(*Snapshot) error) error {
	session, err := live.NewLiveSession(src.KubeletRootDir)
	if err != nil {
		return &ExitError{Code: ExitUnreadable, Message: err.Error()}
	}
	nodes, err := live.Nodes(ctx, session, named)
	if err != nil {
		return &ExitError{Code: ExitUnreadable, Message: err.Error()}
	}
	live.Resolved = make([]string, len(nodes))
	for i, n := range nodes {
		live.Resolved[i] = n.Name
	}
	progress := newProgress(errOut, len(nodes))
	var fnErr error
	session.Fetcher.FetchNodes(ctx, nodes, live.Concurrency, func(r fetch.NodeResult) {
		progress.done(r.Err != nil)
		if fnErr != nil {
			return
		}
		fnErr = fn(SnapshotOf(r))
	})
	progress.finish()
	if fnErr != nil {
		return fnErr
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

var errInterrupted = &ExitError{Code: ExitUnreadable, Message: "interrupted; every debug pod created was deleted"}

// Interrupted reports the error of a fan-out stopped by Ctrl-C or SIGTERM.
func Interrupted(err error) bool { return err == errInterrupted }

// ReportNodeError says on stderr why a node was not read, and returns the exit code it means: a
// skipped node (Windows) is a note and no failure; a node never started because of Ctrl-C goes
// unsaid (the interruption is reported once).
func ReportNodeError(w io.Writer, err error) int {
	switch fetch.ReasonOf(err) {
	case fetch.ReasonUnsupportedOS:
		fmt.Fprintf(w, "note: %v\n", err)
		return ExitOK
	case fetch.ReasonCanceled:
		return ExitUnreadable
	}
	fmt.Fprintf(w, "error: %v\n", err)
	return ExitUnreadable
}

// SnapshotOf turns a fetch result into a snapshot.
func SnapshotOf(r fetch.NodeResult) *Snapshot {
	if r.Err != nil {
		return &Snapshot{Node: r.Node, Err: r.Err}
	}
	nf := r.Files
	return &Snapshot{Node: r.Node, KubeletVersion: nf.KubeletVersion, Files: nf.Files, Names: podNames{nf.Pods}, Warnings: nf.Warnings}
}

// FailureReason is the few words a failed node's row has room for.
func FailureReason(err error) string {
	var fe *fetch.Error
	if errors.As(err, &fe) && fe.Short != "" {
		return fe.Short
	}
	return string(fetch.ReasonOf(err))
}

// Skipped reports a node that is not read by design (a Windows node), not a failure.
func Skipped(err error) bool { return fetch.ReasonOf(err) == fetch.ReasonUnsupportedOS }

// podNames adapts the fetch pod index to render.PodNames.
type podNames struct{ ix *fetch.PodIndex }

func (p podNames) Pod(uid string) (string, string, bool) {
	r, ok := p.ix.Pod(uid)
	return r.Namespace, r.Name, ok
}

func (p podNames) Container(id string) (string, string, string, bool) {
	r, ok := p.ix.Container(id)
	return r.Namespace, r.Pod, r.Container, ok
}

var _ render.PodNames = podNames{}

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
	nodes, err := fetch.NodeNames(ctx, client, "")
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
