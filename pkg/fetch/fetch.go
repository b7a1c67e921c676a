package fetch

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// deleteTimeout bounds the deletion of a debug pod, its retries included (an API server that
// restarts or pauses for 20 s must not leave the pod behind), and each other short request about
// a node (its pod list, a re-read of the node or the pod). Deletion runs on a fresh context so
// that it still happens after Ctrl-C or a timeout has cancelled the caller's.
var deleteTimeout = 30 * time.Second

// nodeCheckTimeout bounds the re-read of a node whose read failed, to name why.
const nodeCheckTimeout = 5 * time.Second

// Fetcher reads files from nodes through debug pods. Set Client, Config (or Exec), Options
// and Paths; a Fetcher is safe for concurrent use once set.
type Fetcher struct {
	Client  kubernetes.Interface
	Config  *rest.Config // for exec; unused when Exec is set
	Options Options
	Paths   []string // relative to Options.KubeletRootDir, e.g. "cpu_manager_state"
	// Dumps are sections printed from the node in the same exec (the machine's sysfs, ...),
	// into Snapshot.Dumps.
	Dumps []StderrDump
	// ShellScript is ReaderShell's script: ShellReaderScript of every section any read may ask
	// for, which the exec policy admits (ReadAllowlist); "" is ShellReaderScript(Dumps).
	ShellScript string

	// IndexPods also lists the node's pods into Snapshot.Pods (one LIST a node), for what
	// names the files' pod UIDs and container IDs or weighs the pods the node runs; a read
	// that does neither (verify) spares the API server that request.
	IndexPods bool

	// Exec replaces the remote exec, for tests. Nil means RemoteExec(Client, Config).
	Exec ExecFunc
}

// Snapshot is the checkpoint files read from one place: a live node (Fetch) or files copied
// off one (package local). It is the one snapshot type from the read to the report.
type Snapshot struct {
	Node               string              // the node read live; "" for copied files
	Source             string              // the directory, archive or file copied files came from
	KubeletVersion     string              // status.nodeInfo.kubeletVersion: picks the format rules
	Allocatable        corev1.ResourceList // the live node's status.allocatable
	NodeObject         *corev1.Node        // the live node's name, labels, taints and features (NodeInfo.Object)
	KubeletVersionFrom string              // for copies, where KubeletVersion was recorded (collect's node.json)
	Devices            *DeviceStatus       // the node's extended resources, as its status says; nil: unknown
	Files              map[string][]byte   // requested path -> content
	Missing            []string            // requested paths that are not regular files on the node
	Oversized          []string            // requested paths skipped for exceeding the per-file cap
	TempFiles          []string            // leftover ".<digits>" files of interrupted kubelet writes
	Pods               *PodIndex           // the node's pods, to name pod UIDs and container IDs (Fetcher.IndexPods; else nil)
	Dumps              map[string][]byte   // the sections Fetcher.Dumps asked for, by header
	Warnings           []string            // non-fatal: tar's stderr, a failed pod index or deletion
}

// Validate checks the options and paths, for the command layer's Validate step; Fetch checks
// them again.
func (f *Fetcher) Validate() error {
	if err := f.Options.Validate(); err != nil {
		return err
	}
	if err := ValidatePaths(f.Paths); err != nil {
		return err
	}
	if f.Client == nil || (f.Config == nil && f.Exec == nil) {
		return invalid("fetch: Client and Config are required")
	}
	return nil
}

func (f *Fetcher) exec() ExecFunc {
	if f.Exec != nil {
		return f.Exec
	}
	return RemoteExec(f.Client, f.Config)
}

// Fetch reads f.Paths from nodeName: it reads the node, creates the debug pod, waits for it
// to run, execs one tar, parses it, indexes the node's pods (IndexPods), and deletes the pod
// on every way out (success, error, timeout, ctx cancelled). Every error is an *Error for
// nodeName.
func (f *Fetcher) Fetch(ctx context.Context, nodeName string) (nf *Snapshot, err error) {
	return f.fetch(ctx, NodeInfo{Name: nodeName}, nil)
}

// fetch is Fetch of a node already read (node.listed) or only named, waiting for the debug
// pod on the fan-out's shared watch pw, or on a watch of its own when pw is nil.
func (f *Fetcher) fetch(ctx context.Context, node NodeInfo, pw *podWatch) (nf *Snapshot, err error) {
	opts := f.Options.WithDefaults()
	nodeName := node.Name
	defer func() { err = withNode(err, nodeName, opts.Namespace) }()
	if err := f.Validate(); err != nil {
		return nil, err
	}

	if !node.listed {
		var obj *corev1.Node
		gctx, cancel := context.WithTimeout(ctx, opts.PodRunningTimeout)
		err := retryTransient(gctx, 0, func(ctx context.Context) (err error) {
			obj, err = f.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			return err
		})
		cancel()
		if err != nil {
			return nil, err
		}
		node = NodeInfoOf(obj)
	}
	if node.refused != nil {
		return nil, node.refused
	}
	// The pod index is read while the debug pod is deleted (see below); wait for it last.
	var indexed chan struct{}
	var index *PodIndex
	var indexErr error
	var debug *corev1.Pod
	defer func() {
		if indexed == nil {
			return
		}
		<-indexed
		switch {
		case err != nil:
		case indexErr != nil && ctx.Err() != nil:
			nf, err = nil, ctx.Err()
		case indexErr != nil:
			// A failure here loses names, not data: warn and go on.
			nf.Warnings = append(nf.Warnings, "pods not indexed, IDs stay unnamed: "+indexErr.Error())
			nf.Pods = NewPodIndex(nil)
			nf.Pods.Unlisted = true
		default:
			nf.Pods = index
		}
		// Known even if the list, which runs during the pod's deletion, missed it: the files
		// just read list the debug pod itself.
		if nf != nil && err == nil && debug != nil && debug.UID != "" {
			if _, ok := nf.Pods.Pods[string(debug.UID)]; !ok && indexErr == nil {
				nf.Pods.add(debug)
			}
			nf.Pods.Debug[string(debug.UID)] = true
			nf.Pods.DebugNamespace = opts.Namespace
		}
	}()

	pods := f.Client.CoreV1().Pods(opts.Namespace)
	// Every debug pod created is deleted on the way out, whatever happened (two at most: a pod
	// deleted under us is replaced once).
	var created []*corev1.Pod
	defer func() {
		for _, p := range created {
			derr := deletePod(ctx, pods, p.Name)
			if derr == nil {
				continue
			}
			derr = fmt.Errorf("%s/%s: %w; run `%s`", p.Namespace, p.Name, ExplainError(derr, opts.Namespace), CleanupCommand(p.Namespace))
			err = withNode(err, nodeName, opts.Namespace)
			var fe *Error
			switch {
			case errors.As(err, &fe):
				fe.Cleanup = derr
			case err == nil:
				nf.Warnings = append(nf.Warnings, "debug pod could not be deleted: "+derr.Error())
			}
		}
	}()

	var got *collected
	var missed, replaced bool
	for {
		var pod *corev1.Pod
		pod, got, missed, err = f.readOnce(ctx, nodeName, pods, pw, opts)
		if pod != nil {
			created = append(created, pod)
		}
		if err == nil || replaced || pod == nil || ctx.Err() != nil || !f.podGone(ctx, pods, pod, err) {
			break
		}
		// Someone deleted or evicted the pod under us: replace it once, if the node can still
		// run one.
		if nerr := f.nodeUsable(ctx, nodeName); nerr != nil {
			err = nerr
			break
		}
		replaced = true
	}
	if err != nil {
		switch ReasonOf(err) {
		case ReasonTimeout, ReasonExec, ReasonAPI, ReasonPodDeleted, ReasonPodFailed, "":
			// A pod that never ran, an exec that failed or never ended: if the node went away
			// meanwhile, that is the reason to give.
			if ctx.Err() == nil {
				if nerr := f.nodeUsable(ctx, nodeName); nerr != nil {
					err = nerr
				}
			}
		}
		return nil, err
	}
	debug = created[len(created)-1]
	nf = &Snapshot{
		Node:           nodeName,
		KubeletVersion: node.KubeletVersion,
		Devices:        node.Devices,
		Allocatable:    node.Allocatable,
		NodeObject:     node.Object,
		Files:          got.files,
		Missing:        got.missing,
		Warnings:       got.warnings,
		Dumps:          got.dumps,
	}
	if missed {
		nf.Warnings = append(nf.Warnings, fmt.Sprintf("the pod watch did not report debug pod %s running; found it running after %s",
			debug.Name, opts.PodRunningTimeout))
	}
	if replaced {
		nf.Warnings = append(nf.Warnings, fmt.Sprintf("debug pod %s was deleted by someone else while it was read; read again through %s",
			created[0].Name, debug.Name))
	}
	if !f.IndexPods {
		return nf, nil
	}
	// After the read, so every pod named in the files that still exists is in the index; at
	// the same time as the debug pod's deletion, which it does not wait for.
	indexed = make(chan struct{})
	go func() {
		defer close(indexed)
		ictx, cancel := context.WithTimeout(ctx, deleteTimeout)
		defer cancel()
		indexErr = retryTransient(ictx, 0, func(ctx context.Context) (err error) {
			index, err = IndexNodePods(ctx, f.Client, nodeName)
			return err
		})
	}()
	return nf, nil
}

// readOnce creates one debug pod, waits for it to run and reads the files through it. It
// returns the pod it created (nil if none), for the caller to delete.
func (f *Fetcher) readOnce(ctx context.Context, nodeName string, pods corev1client.PodInterface, pw *podWatch, opts Options) (
	created *corev1.Pod, got *collected, missed bool, err error) {
	want := GenerateDebugPod(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, opts)
	var waiter *podWaiter
	if pw != nil {
		waiter = pw.add(want.Name)
		defer pw.remove(want.Name)
	}
	if created, err = createPod(ctx, pods, want, opts.PodRunningTimeout); err != nil {
		return created, nil, false, err
	}

	// The kubelet's Warning events (a failed mount, sandbox or admission) end the wait early:
	// from the fan-out's shared events watch, else from a watch of this pod's events.
	var failed <-chan *Error
	stopEvents := func() {}
	switch {
	case pw != nil && pw.events == eventsShared:
		failed = waiter.failed
	case pw != nil && pw.events == eventsNone:
	default:
		var evCtx context.Context
		evCtx, stopEvents = context.WithCancel(ctx)
		ch := make(chan *Error)
		go watchPodEvents(evCtx, f.Client.CoreV1().Events(opts.Namespace), created, opts, ch)
		failed = ch
	}
	if pw != nil {
		err = pw.wait(ctx, waiter, created, opts.PodRunningTimeout, failed)
		missed = waiter.missed
	} else {
		err = waitRunning(ctx, pods, created, opts.Image, opts.PodRunningTimeout, failed)
	}
	stopEvents()
	if err != nil {
		return created, nil, false, err
	}
	got, err = f.collect(ctx, created, opts)
	return created, got, missed, err
}

// createPod creates the debug pod, retrying transient failures for up to timeout. The request
// itself is not cut short by ctx (Ctrl-C): a create the server may still apply after we stopped
// waiting would leave a pod that no delete-by-name could see in time; its answer is awaited,
// and the pod then deleted by the caller. If a retry finds the name taken, the pod of that name
// with our node annotation is the one an earlier attempt stored (the name carries a random
// suffix). On failure the name is deleted, unless the server refused the pod.
func createPod(ctx context.Context, pods corev1client.PodInterface, want *corev1.Pod, timeout time.Duration) (*corev1.Pod, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	uncut, cancelUncut := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancelUncut()
	var created *corev1.Pod
	attempts := 0
	err := retryTransient(cctx, 0, func(context.Context) (err error) {
		attempts++
		created, err = pods.Create(uncut, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && attempts > 1 {
			got, gerr := pods.Get(uncut, want.Name, metav1.GetOptions{})
			if gerr == nil && got.Annotations[AnnotationNode] == want.Annotations[AnnotationNode] && got.Labels[LabelManagedBy] == ManagedBy {
				created, err = got, nil
			}
		}
		return err
	})
	if err == nil && ctx.Err() != nil {
		return created, ctx.Err() // stored as we were canceled: the caller deletes it
	}
	if err != nil {
		// AlreadyExists on the first try would mean someone else's pod: leave it.
		if !apierrors.IsAlreadyExists(err) && !isAPIRejection(err) {
			_ = deletePod(ctx, pods, want.Name)
		}
		return nil, err
	}
	return created, nil
}

// podGone reports whether pod was deleted, evicted or replaced under a read that failed with
// err: then reading again through a new pod may succeed.
func (f *Fetcher) podGone(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, err error) bool {
	switch ReasonOf(err) {
	case ReasonPodDeleted:
		return true
	case ReasonExec, ReasonBadArchive, ReasonAPI, ReasonPodFailed, "":
	default:
		return false
	}
	gctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	var cur *corev1.Pod
	gerr := retryTransient(gctx, 0, func(ctx context.Context) (err error) {
		cur, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(gerr):
		return true
	case gerr != nil:
		return false
	}
	return cur.UID != pod.UID || cur.DeletionTimestamp != nil ||
		(ReasonOf(err) != ReasonPodFailed && (cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded))
}

// nodeUsable reads the node again: nil if it still exists and is Ready, else the one-line
// reason the node cannot be read now (deleted, NotReady).
func (f *Fetcher) nodeUsable(ctx context.Context, name string) error {
	// Advisory: a server that does not answer soon only costs the better reason.
	gctx, cancel := context.WithTimeout(ctx, nodeCheckTimeout)
	defer cancel()
	var node *corev1.Node
	err := retryTransient(gctx, 0, func(ctx context.Context) (err error) {
		node, err = f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return &Error{Node: name, Reason: ReasonNodeNotFound, Short: "node deleted",
			Message: "the node was deleted while it was being read", Err: err}
	case err != nil:
		return nil // unknown: keep the error at hand
	}
	if nerr := checkNode(node); nerr != nil {
		return nerr
	}
	return nil
}

// CleanupCommand is the command that deletes the debug pods left in namespace.
func CleanupCommand(namespace string) string {
	return "kubectl nodestate cleanup -n " + namespace
}

// isAPIRejection reports an answer from the API server that means the object was not stored
// (as opposed to no answer at all, or a server-side timeout that may have stored it).
func isAPIRejection(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) && !apierrors.IsInternalError(err)
}

// deletePod deletes now (grace 0: nothing in the pod needs to shut down) on a context that
// survives the caller's cancellation. NotFound counts as done, so it is idempotent.
func deletePod(ctx context.Context, pods corev1client.PodInterface, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	return retryTransient(ctx, 0, func(ctx context.Context) error {
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
