// Package nodestate is the library under the commands: it reads checkpoint files (from live
// nodes through package fetch, or from copies through package local), decodes and judges each
// with package decode, and hands back one typed result per node as soon as that node is done.
// It runs from a plain Config and knows no flags, streams or exit codes; the commands in
// pkg/cmd (and doctor) are thin shells around it, as stern's commands are around its library.
package nodestate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/cgroup"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// Config says what to read and how to judge it. Set one source: FromDir or FromFile (files
// copied off a node), or live nodes (Nodes, or AllNodes with an optional Selector) with Client
// and RESTConfig.
type Config struct {
	// FromDir is a directory laid out like the kubelet root dir, or a tar/tar.gz of one.
	FromDir string
	// FromFile is one checkpoint file; Kind names its kind, else its base name does.
	FromFile string
	Kind     decode.Kind

	// Nodes are the live nodes to read; AllNodes reads every node matching Selector instead.
	Nodes    []string
	AllNodes bool
	Selector string
	// Listed are live nodes already listed (ListFleet): read these, without a LIST or a GET
	// per node again; Nodes, AllNodes and Selector are then unused.
	Listed []fetch.NodeInfo
	// Client and RESTConfig reach the cluster (live only).
	Client     kubernetes.Interface
	RESTConfig *rest.Config
	// DebugPod configures the debug pods (namespace, image, timeouts).
	DebugPod DebugPod
	// Concurrency bounds the nodes read at once (fetch.DefaultConcurrency if < 1).
	Concurrency int
	// Exec replaces the remote exec into the debug pods, for tests (as fetch.Fetcher.Exec).
	Exec fetch.ExecFunc

	// KubeletRootDir is the kubelet's --root-dir on the node (decode.DefaultRootDir if "").
	KubeletRootDir string
	// Machine also reads each live node's machine from sysfs, in the same exec as the files
	// (NodeResult.Machine).
	Machine bool
	// KubeletConfig also reads each live node's kubelet config: configz through the API
	// server when the user may already GET nodes/proxy, else config.yaml from the kubelet
	// root dir (NodeResult.KubeletConfig).
	KubeletConfig bool
	// NodeFiles also reads each node's device plugin sockets and CDI specs (NodeResult's
	// NodeFiles): live, in the same exec, with the CDI dirs mounted read-only; offline, from a
	// bundle's files.
	NodeFiles bool
	// Cgroups also reads what each node's cgroups show its containers run on (NodeResult's
	// Cgroups): live, in the same exec, with the host's cgroup filesystem mounted read-only;
	// offline, from a bundle's file when it has one.
	Cgroups bool
	// PodNames also lists each live node's pods, one LIST a node: to name the pod UIDs and
	// container IDs its files hold (NodeResult.Names), and, for doctor and admit, the pods it
	// runs. verify, which names no pod, spares the API server that request.
	PodNames bool
	// Configz replaces the GET of configz through the API server, for tests.
	Configz ConfigzFunc

	// Kubelet judges every file as this kubelet would; nil judges a node's files by the version
	// collect recorded with copies (node.json), else a live node's own version, else the newest
	// release that writes the files together (see JudgeFiles).
	Kubelet *decode.Kubelet
	// KubeletWhy says, for the header line, why Kubelet judges ("the kubelet version asked for"
	// when empty).
	KubeletWhy string

	// Published answers live nodes from the states they published (node-publish) instead of
	// reading them through debug pods; only Client is needed then.
	Published *PublishedRead

	// Engines are the engines run beyond decode.
	Engines
}

// Engines configures the engines beyond decode: each runs in the node's worker, on the judged
// files, when its config is set, and answers in the NodeResult field of its name.
type Engines struct {
	Doctor *DoctorConfig
	Admit  *AdmitConfig
}

// nodeInfos keeps what reading the listed nodes needs of them: their allocatable only to admit
// pods.
func (c *Config) nodeInfos() func(*corev1.Node) fetch.NodeInfo {
	return fetch.NodeInfos(c.Admit != nil)
}

// Offline reports whether the files come from copies on disk.
func (c *Config) Offline() bool { return c.FromDir != "" || c.FromFile != "" }

// NodeResult is one node (or one copied directory or file), read and judged.
type NodeResult struct {
	// Node is the live node's name; "" for copies.
	Node string
	// Where names the origin in messages: "node NAME", or the copied path.
	Where string
	// Snapshot is what was read; nil when Err is set.
	Snapshot *fetch.Snapshot
	// Rows are the judged files in the kubelet's file order, then oversized and temp files; a
	// node that could not be read has the one row saying why.
	Rows []FileRow
	// Judged is the one kubelet that judged the files, why, and the files apart from the others
	// (findings); zero when Err is set.
	Judged Judgement
	// Names resolves the pod UIDs and container IDs of the files (nil offline).
	Names PodNames
	// Err is why the node could not be read at all (a *fetch.Error for live nodes).
	Err error
	// Source is where a published node's state came from and how old it is (nil for a read).
	Source *Provenance

	// Machine is the node's machine from sysfs (Config.Machine), or why not in MachineErr.
	Machine    *machine.Machine
	MachineErr error
	// KubeletConfig is the kubelet's config as read (Config.KubeletConfig): configz's JSON or
	// config.yaml, as KubeletConfigFrom says; nil if neither could be read.
	KubeletConfig     []byte
	KubeletConfigFrom string
	// KubeletConfigNote says why configz was not used, or why there is no config at all.
	KubeletConfigNote string
	// NodeFiles are the sockets and CDI specs (Config.NodeFiles).
	NodeFiles
	// Cgroups is what the node's cgroups show (Config.Cgroups, or a bundle's), or why not in
	// CgroupsErr.
	Cgroups    *cgroup.Node
	CgroupsErr error
	// RecordedPods are the pods a collect bundle recorded from the API server (NodeInfo.Pods;
	// nil for a live node, other copies and older bundles).
	RecordedPods *RecordedPods

	// Doctor is the start prediction (Config.Doctor); nil when not asked or Err is set.
	Doctor *DoctorResult
	// Admit is the admission of Config.Admit's pods; nil when not asked or Err is set.
	Admit *AdmitResult

	// engine is the kubelet config the engines replay with, chosen before the files are decoded.
	engine engineConfig
}

// Warnings are the non-fatal problems of the read, and what judged a kubelet build no vector
// was made by (decode.Kubelet.Unchecked: a release-day node's, until the plugin names it).
func (n *NodeResult) Warnings() []string {
	if n.Snapshot == nil {
		return nil
	}
	if k := n.Judged.Kubelet; k != nil && n.Judged.Basis != BasisFiles {
		if s := k.Unchecked(); s != "" {
			return append(slices.Clip(n.Snapshot.Warnings), s)
		}
	}
	return n.Snapshot.Warnings
}

// Skipped reports a node that was not read by design (a Windows node): not a failure.
func (n *NodeResult) Skipped() bool {
	return n.Err != nil && fetch.ReasonOf(n.Err) == fetch.ReasonUnsupportedOS
}

// ErrInterrupted is Run's error when ctx was cancelled (Ctrl-C): every node started was still
// reported, and every debug pod created was deleted before Run returned.
var ErrInterrupted = errors.New("interrupted; every debug pod created was deleted")

// Runner runs a Config. New resolves the node list; Run reads.
type Runner struct {
	cfg   Config
	nodes []string
	// infos are the nodes to read; listed ones carry what reading needs, so a node is not
	// read again one by one (a GET per node) after --all-nodes listed it.
	infos   []fetch.NodeInfo
	fetcher *fetch.Fetcher
	// configz reads a node's configz, nil when the user may not (noConfigz says why).
	configz   ConfigzFunc
	noConfigz string
	// getClaim gets a ResourceClaim, nil when the server serves none (noClaims says so).
	claimsOnce sync.Once
	getClaim   claimGetter
	noClaims   string
	// draExtended are the extended resources DeviceClasses name, for admit (live); nil when not
	// listed (noDRAExtended says why).
	draExtended   map[string]string
	noDRAExtended string
	// memo keeps the parses published nodes share (nil: none kept).
	memo *parseMemo
	// nodePods are the pods of the nodes named for a published read, by node: as a debug pod's
	// read lists them (names, the node-resource predicate, the kubelet's active pods).
	nodePods map[string]*fetch.PodIndex
}

// New checks the config and, for live nodes, lists them when AllNodes is set.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.KubeletRootDir == "" {
		cfg.KubeletRootDir = decode.DefaultRootDir
	}
	// Live nodes bring their own machine and config, unless the ones to be are given.
	if d := cfg.Doctor; d != nil {
		cfg.Machine = cfg.Machine || d.Machine == nil
		cfg.KubeletConfig = cfg.KubeletConfig || d.KubeletConfig == nil
		// The files against the node: device plugin sockets, CDI specs, ResourceClaims, cgroups,
		// and the pods that hold them.
		cfg.NodeFiles = true
		cfg.Cgroups = true
		cfg.PodNames = true
	}
	if a := cfg.Admit; a != nil {
		cfg.Machine = cfg.Machine || a.Machine == nil
		cfg.KubeletConfig = cfg.KubeletConfig || a.KubeletConfig == nil
		// The node's other pods: the kubelet's node-resource predicate weighs them, and they
		// name the holders of devices.
		cfg.PodNames = true
	}
	r := &Runner{cfg: cfg}
	switch {
	case cfg.FromDir != "" && cfg.FromFile != "":
		return nil, errors.New("read a directory or a file, not both")
	case cfg.Offline():
		return r, nil
	case cfg.Published != nil:
		return r, r.newPublished(ctx)
	case cfg.Client == nil || cfg.RESTConfig == nil:
		return nil, errors.New("live nodes need a Client and a RESTConfig")
	}
	opts := cfg.DebugPod.fetchOptions()
	opts.KubeletRootDir = cfg.KubeletRootDir
	if cfg.NodeFiles {
		opts.HostDirs = append(opts.HostDirs, cdiHostDirs()...)
	}
	if cfg.Cgroups {
		opts.HostDirs = append(opts.HostDirs, cgroupHostDir)
	}
	r.fetcher = &fetch.Fetcher{Client: cfg.Client, Config: cfg.RESTConfig, Paths: decode.Paths(), ShellScript: DebugPodReads().ShellScript,
		Options: opts, Exec: cfg.Exec, IndexPods: cfg.PodNames}
	if err := r.fetcher.Validate(); err != nil {
		return nil, err
	}
	if r.configz = cfg.Configz; r.configz == nil {
		r.configz = APIConfigz(cfg.Client)
	}
	r.withExtras(ctx, r.fetcher)
	if cfg.Admit != nil && admit.AsksExtendedResource(cfg.Admit.Pods) {
		r.draExtended, r.noDRAExtended = draExtendedResources(ctx, cfg.Client)
	}
	r.nodes, r.infos = cfg.Nodes, fetch.Named(cfg.Nodes)
	switch {
	case cfg.Listed != nil:
		r.infos = cfg.Listed
	case cfg.AllNodes:
		infos, err := fetch.ListNodes(ctx, cfg.Client, cfg.Selector, cfg.nodeInfos())
		if err != nil {
			return nil, fetch.ExplainError(err, opts.WithDefaults().Namespace)
		}
		if len(infos) == 0 {
			return nil, fmt.Errorf("no nodes match %q", cfg.Selector)
		}
		r.infos = infos
	}
	if cfg.Listed != nil || cfg.AllNodes {
		r.nodes = make([]string, len(r.infos))
		for i, n := range r.infos {
			r.nodes[i] = n.Name
		}
	}
	return r, nil
}

// ExecCommand is the command each live node's debug pod runs: one exec that reads the files
// and what the engines need of the node (nil offline).
func (r *Runner) ExecCommand() []string {
	if r.fetcher == nil {
		return nil
	}
	return r.fetcher.Command()
}

// DebugPodOptions shape each live node's debug pod (its image, namespace, deadlines and the
// node directories the engines mount); the zero Options offline. With ExecCommand, it lets a
// benchmark's floor create the very pod and run the very exec a read does.
func (r *Runner) DebugPodOptions() fetch.Options {
	if r.fetcher == nil {
		return fetch.Options{}
	}
	return r.fetcher.Options
}

// Nodes is the live node list being read (nil offline).
func (r *Runner) Nodes() []string { return r.nodes }

// Results reads every source and yields each one's result as soon as it is judged: live nodes
// in the order they complete, at most Concurrency at a time, each read top to bottom in its own
// worker (readNode). Copies that cannot be read at all end the sequence with an error; a live
// node that cannot be read is a result with Err. Stopping the range starts no further node;
// nodes already started finish and clean up before the range returns. After ctx is cancelled
// the sequence ends with ErrInterrupted.
func (r *Runner) Results(ctx context.Context) iter.Seq2[*NodeResult, error] {
	return func(yield func(*NodeResult, error) bool) {
		if r.cfg.Offline() {
			res, err := r.readCopies()
			yield(res, err)
			return
		}
		if r.cfg.Published != nil {
			r.publishedResults(ctx, yield)
			return
		}
		var stopped atomic.Bool
		results := make(chan *NodeResult)
		go func() {
			defer close(results)
			fo := r.fetcher.Fanout(ctx)
			defer fo.Close()
			var g errgroup.Group
			g.SetLimit(r.concurrency())
			for _, node := range r.infos {
				if stopped.Load() {
					break
				}
				g.Go(func() error {
					if !stopped.Load() {
						results <- r.readNode(ctx, fo, node)
					}
					return nil
				})
			}
			_ = g.Wait()
		}()
		for res := range results {
			if !stopped.Load() && !yield(res, nil) {
				stopped.Store(true)
			}
		}
		if !stopped.Load() && ctx.Err() != nil {
			yield(nil, ErrInterrupted)
		}
	}
}

func (r *Runner) concurrency() int {
	if r.cfg.Concurrency < 1 {
		return fetch.DefaultConcurrency
	}
	return r.cfg.Concurrency
}

// readNode reads one live node, top to bottom: collect its files (and, in the same exec, its
// machine, sockets and cgroups), then judge and decode them, then run the engines.
func (r *Runner) readNode(ctx context.Context, fo *fetch.Fanout, node fetch.NodeInfo) *NodeResult {
	snap, err := fo.Fetch(ctx, node)
	res := &NodeResult{Node: node.Name, Where: "node " + node.Name, Snapshot: snap, Err: err}
	if err != nil {
		res.Snapshot = nil
		res.Rows = []FileRow{NodeFailedRow(node.Name, res.Skipped(), failureReason(err), err.Error())}
		return res
	}
	return r.processNode(ctx, res)
}

// processNode is what a node's worker does once its files are read: the extras parsed, the
// files judged, then each engine run.
func (r *Runner) processNode(ctx context.Context, res *NodeResult) *NodeResult {
	snap := res.Snapshot
	// Extras first: they take config.yaml out of the checkpoint files.
	r.addExtras(ctx, res)
	if r.cfg.NodeFiles {
		res.NodeFiles = readNodeFiles(snap)
	}
	if r.cfg.Cgroups {
		res.Cgroups, res.CgroupsErr = readCgroups(snap.Dumps[cgroup.Header], snap.Pods)
	}
	r.judge(res)
	if r.cfg.NodeFiles {
		// The API's ResourceClaims of the claims the decoded files prepared.
		r.addClaims(ctx, res)
	}
	return r.runEngines(res)
}

// readCopies reads FromDir or FromFile, as readNode reads a live node.
func (r *Runner) readCopies() (*NodeResult, error) {
	snap, recorded, err := r.loadOffline()
	if err != nil {
		return nil, err
	}
	res := &NodeResult{Node: snap.Node, Where: snap.Source, Snapshot: snap, RecordedPods: recorded}
	if snap.Node != "" {
		res.Where = "node " + snap.Node
	}
	r.offlineExtras(res)
	r.judge(res)
	return r.runEngines(res), nil
}

// failureReason is the few words a failed node's row has room for.
func failureReason(err error) string {
	var fe *fetch.Error
	if errors.As(err, &fe) && fe.Short != "" {
		return fe.Short
	}
	return string(fetch.ReasonOf(err))
}

// loadOffline reads FromDir or FromFile, and the pods a collect bundle recorded (nil if none).
func (r *Runner) loadOffline() (*fetch.Snapshot, *RecordedPods, error) {
	if r.cfg.FromDir != "" {
		snap, err := local.Read(r.cfg.FromDir, append(decode.Paths(), bundleFiles()...), local.DefaultLimits)
		if err != nil {
			return nil, nil, err
		}
		var recorded *RecordedPods
		takeBundleDumps(snap)
		// A collect bundle records the node's kubelet version: it judges the copies.
		if b, ok := snap.Files[NodeInfoFile]; ok {
			delete(snap.Files, NodeInfoFile)
			info, err := ParseNodeInfo(b)
			if err != nil {
				snap.Warnings = append(snap.Warnings, fmt.Sprintf("%s is not what collect writes (%v): ignored", NodeInfoFile, err))
			} else if info.KubeletVersion != "" {
				snap.KubeletVersion = info.KubeletVersion
				snap.KubeletVersionFrom = fmt.Sprintf("node %s's version, recorded by collect in %s", info.Node, NodeInfoFile)
			}
			if err == nil && info.Devices != nil {
				snap.Devices = info.Devices
			}
			if err == nil {
				recorded = info.Pods
			}
		}
		return snap, recorded, nil
	}
	if _, ok := r.fileKind(); !ok {
		return nil, nil, fmt.Errorf("cannot tell which checkpoint %s is: give the file its name on the node (e.g. cpu_manager_state) or pass --kind", r.cfg.FromFile)
	}
	b, err := local.ReadFile(r.cfg.FromFile, local.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	return &fetch.Snapshot{Source: r.cfg.FromFile, Files: map[string][]byte{r.cfg.FromFile: b}}, nil, nil
}

// fileKind is the kind of FromFile: Kind, else the file's name on the node.
func (r *Runner) fileKind() (decode.Kind, bool) {
	if r.cfg.Kind != "" {
		return r.cfg.Kind, true
	}
	return decode.ParseKind(path.Base(r.cfg.FromFile))
}

// judge chooses the kubelet of a read node's files (the one the engines will replay, with its
// config's gates), then decodes each file once, by that kubelet.
func (r *Runner) judge(res *NodeResult) {
	s := res.Snapshot
	if s.Pods != nil {
		res.Names = podNames{s.Pods}
	}
	var gates map[string]bool
	if r.cfg.Doctor != nil || r.cfg.Admit != nil {
		res.engine = r.engineConfig(res)
		if res.engine.config != nil {
			gates = res.engine.config.FeatureGates
		}
	}
	res.Rows, res.Judged = judgeFiles(s, r.kindOf, r.cfg.Kubelet, gates, r.cfg.KubeletRootDir)
	if r.cfg.Kubelet != nil {
		res.Judged.Why = r.cfg.KubeletWhy
		if res.Judged.Why == "" {
			res.Judged.Why = "the kubelet version asked for"
		}
	}
}

// runEngines runs the engines configured beyond decode on a judged node.
func (r *Runner) runEngines(res *NodeResult) *NodeResult {
	if r.cfg.Doctor != nil && res.Err == nil {
		res.Doctor = r.diagnose(res)
	}
	if r.cfg.Admit != nil && res.Err == nil {
		res.Admit = r.admit(res)
	}
	return res
}
