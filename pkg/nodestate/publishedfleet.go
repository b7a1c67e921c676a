package nodestate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// FromPublished: the state the node published (node-publish).
const FromPublished Source = "published"

// PublishedRead answers a live read from the states the nodes published, without a debug pod:
// one LIST of the published ConfigMaps (in pages), each node's state judged and replayed as a
// read node's is.
type PublishedRead struct {
	// MaxAge is how old a state may be (DefaultMaxPublishedAge if 0): an older one is a dead
	// publisher's, and its node is not judged.
	MaxAge time.Duration
	// Now is the clock's reading that ages are measured from (time.Now() if zero).
	Now time.Time
}

// publishedPageSize bounds one page of the ConfigMap list: at most this many states are held
// before they are judged.
const publishedPageSize = 500

// ErrNoPublishedState is a node's error when it published no state.
var ErrNoPublishedState = errors.New("no published state: node-publish does not run on it (deploy/publish)")

// newPublished sets up r to answer from the published states: the nodes listed or named, as a
// live read's, and nothing for debug pods.
func (r *Runner) newPublished(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Client == nil {
		return errors.New("published states need a Client")
	}
	r.memo = newParseMemo()
	if cfg.Admit != nil && admit.AsksExtendedResource(cfg.Admit.Pods) {
		r.draExtended, r.noDRAExtended = draExtendedResources(ctx, cfg.Client)
	}
	r.nodes, r.infos = cfg.Nodes, fetch.Named(cfg.Nodes)
	// A named node's status says what a read's would (its device plugins' resources, its
	// allocatable): one GET each, as a debug pod's read makes; a node the API server does not
	// have is answered by its published state alone, if any.
	// Its pods too, one LIST each as a read lists them: they name the files' pods, and they are
	// the kubelet's active pods (a checkpoint owner not among them is freed at its next
	// admission). Not for --all-nodes: every pod of the fleet is a LIST this read spares.
	for i, name := range cfg.Nodes {
		node, err := cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			r.infos[i] = cfg.nodeInfos()(node)
		case !apierrors.IsNotFound(err):
			return fetch.ExplainError(err, PublishedNamespace)
		}
		if cfg.PodNames {
			ix, err := fetch.IndexNodePods(ctx, cfg.Client, name)
			if err != nil {
				return fetch.ExplainError(err, PublishedNamespace)
			}
			if r.nodePods == nil {
				r.nodePods = map[string]*fetch.PodIndex{}
			}
			r.nodePods[name] = ix
		}
	}
	if cfg.AllNodes {
		infos, err := fetch.ListNodes(ctx, cfg.Client, cfg.Selector, cfg.nodeInfos())
		if err != nil {
			return fetch.ExplainError(err, PublishedNamespace)
		}
		if len(infos) == 0 {
			return fmt.Errorf("no nodes match %q", cfg.Selector)
		}
		r.infos = infos
		r.nodes = make([]string, len(infos))
		for i, n := range infos {
			r.nodes[i] = n.Name
		}
	}
	return nil
}

// publishedResults lists the published ConfigMaps and yields each node's result, judged on as
// many CPUs as there are, then the nodes that published none.
func (r *Runner) publishedResults(ctx context.Context, yield func(*NodeResult, error) bool) {
	pr := *r.cfg.Published
	if pr.MaxAge <= 0 {
		pr.MaxAge = DefaultMaxPublishedAge
	}
	if pr.Now.IsZero() {
		pr.Now = time.Now()
	}
	wanted := make(map[string]*fetch.NodeInfo, len(r.infos))
	for i := range r.infos {
		wanted[r.infos[i].Name] = &r.infos[i]
	}
	results := make(chan *NodeResult)
	listErr := make(chan error, 1)
	listCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The pages are listed one ahead of the nodes judged: while the workers judge a page the
	// API server serves the next, so no worker waits on a page (each one's wait had left the
	// CPUs idle for a twentieth of a 10,000-node read).
	pages := make(chan *corev1.ConfigMapList, 1)
	go func() {
		defer close(pages)
		opts := metav1.ListOptions{LabelSelector: PublishedLabel + "=" + PublishedLabelValue, Limit: publishedPageSize}
		for {
			list, err := r.cfg.Client.CoreV1().ConfigMaps(PublishedNamespace).List(listCtx, opts)
			if err != nil {
				listErr <- fetch.ExplainError(err, PublishedNamespace)
				return
			}
			select {
			case pages <- list:
			case <-listCtx.Done():
				return
			}
			if opts.Continue = list.Continue; opts.Continue == "" {
				return
			}
		}
	}()
	send := func(res *NodeResult) {
		select {
		case results <- res:
		case <-listCtx.Done():
		}
	}
	go func() {
		defer close(results)
		var g, podLists errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		podLists.SetLimit(r.concurrency())
		for list := range pages {
			for i := range list.Items {
				cm := &list.Items[i]
				info, ok := wanted[cm.Name]
				if !ok {
					continue
				}
				delete(wanted, cm.Name)
				g.Go(func() error {
					res, s := r.publishedNode(cm, info, pr)
					if r.ownersDecide(res) {
						// Its pods' LIST waits on the API server, not on a CPU: off the workers.
						podLists.Go(func() error {
							send(r.withNodePods(listCtx, res, s))
							return nil
						})
						return nil
					}
					send(res)
					return nil
				})
			}
			if listCtx.Err() != nil {
				break
			}
		}
		_ = g.Wait()
		_ = podLists.Wait()
		if len(listErr) > 0 {
			return
		}
		for name := range wanted {
			if send(publishedFailed(name, "no published state", ErrNoPublishedState)); listCtx.Err() != nil {
				return
			}
		}
	}()
	for res := range results {
		if !yield(res, nil) {
			stop()
			for range results {
			}
			return
		}
	}
	if ctx.Err() != nil {
		yield(nil, ErrInterrupted)
		return
	}
	select {
	case err := <-listErr:
		yield(nil, err)
	default:
	}
}

// publishedNode is one node's published state judged, and its engines run: as a read node's,
// its provenance the state's read time; a state that cannot be read, or is older than the
// read's MaxAge, is the node's error (not judged, and no state returned).
func (r *Runner) publishedNode(cm *corev1.ConfigMap, info *fetch.NodeInfo, pr PublishedRead) (*NodeResult, *PublishedState) {
	fail := func(short string, err error) (*NodeResult, *PublishedState) {
		return publishedFailed(cm.Name, short, err), nil
	}
	s, err := PublishedStateOf(cm)
	if err != nil {
		return fail("published state unreadable", err)
	}
	age := pr.Now.Sub(s.ReadAt)
	if age > pr.MaxAge {
		return fail("published state stale", fmt.Errorf("published state is %s old, over --max-age %s: its publisher stopped (node-publish, deploy/publish)",
			duration.HumanDuration(age), duration.HumanDuration(pr.MaxAge)))
	}
	nr := r.forPublished(s)
	res := nr.publishedResult(s, info)
	res.Source = &Provenance{From: FromPublished, At: metav1.NewTime(s.ReadAt.Truncate(time.Second)), AgeSeconds: int64(max(age, 0) / time.Second)}
	return nr.runEngines(res), s
}

// ownersDecide reports whether a node judged without its pods (--all-nodes) hangs on them: the
// resource managers answer a pod otherwise once no checkpoint owner runs. The kubelet frees a
// gone or finished pod's entries at its next admission (its device checkpoint keeps a deleted
// pod's devices until then, its memory manager a pod's memory), so only the pods the API server
// has tell which answer is the kubelet's. A pod refused with every owner running may be admitted
// once they are gone; a pod after another that both replays admit may be refused (the first,
// with more room, lands on a lower NUMA node and takes what the second needs there, a device
// only that node has). One pod admitted with every owner running is admitted with fewer, and a
// refusal that stands with every owner gone stands with some: those answers need no LIST. So
// are several pods' when one owner at most could go (the two replays are then every case), or
// when every pod before a pod is refused with none running (refused whoever runs, it takes
// nothing). Past that, owners gone in part can decide a later pod's answer where neither end
// does (the first pod lands on NUMA node 0 only when one of two owners is gone, and fills it),
// so that node is listed too.
func (r *Runner) ownersDecide(res *NodeResult) bool {
	a := res.Admit
	if a == nil || a.Err != nil || !r.cfg.PodNames || res.Snapshot == nil || res.Snapshot.Pods != nil {
		return false
	}
	mayChange := func(i int, adm admit.Admission) bool {
		switch {
		case adm.NotReached || adm.Verdict == admit.VerdictNotJudged:
			return false
		case !adm.Admitted:
			return adm.Handler == admit.HandlerResourceManagers
		}
		return i > 0
	}
	var changing []int
	for i, adm := range a.Admissions {
		if mayChange(i, adm) {
			changing = append(changing, i)
		}
	}
	if len(changing) == 0 {
		return false
	}
	admitted, err := r.memo.admittedNoneRunning(a.replayed.key, a.replayed.keyed, a.replayed.in)
	if err != nil {
		return false
	}
	if slices.ContainsFunc(changing, func(i int) bool { return admitted[i] != a.Admissions[i].Admitted }) {
		return true
	}
	return admit.CheckpointOwners(a.replayed.in) > 1 && slices.ContainsFunc(changing, func(i int) bool { return slices.Contains(admitted[:i], true) })
}

// withNodePods is a node ownersDecide picked, its engines run again with its pods, one LIST as
// a named node's (the kubelet's active pods, the node-resource predicate, the holders' names),
// on the files as judged; when they cannot be listed the answer stays, and says on what it rests.
func (r *Runner) withNodePods(ctx context.Context, res *NodeResult, s *PublishedState) *NodeResult {
	ix, err := fetch.IndexNodePods(ctx, r.cfg.Client, res.Node)
	if err != nil {
		res.Admit.note("an answer here hangs on which pods its checkpoints' owners still run, and its pods could not be listed (%v): every owner counted running; name the node once they can be", err)
		return res
	}
	res.Snapshot.Pods, res.Names = ix, podNames{ix}
	res.Admit, res.Doctor = nil, nil
	return r.forPublished(s).runEngines(res)
}

// publishedFailed is a node whose published state is not judged, and why (its one row).
func publishedFailed(node, short string, err error) *NodeResult {
	return &NodeResult{Node: node, Where: "node " + node, Err: err, Rows: []FileRow{NodeFailedRow(node, false, short, err.Error())}}
}
