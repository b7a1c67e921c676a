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

// deleteTimeout bounds the deletion of a debug pod. Deletion runs on a fresh context so that it
// still happens after Ctrl-C or a timeout has cancelled the caller's.
const deleteTimeout = 10 * time.Second

// Fetcher reads files from nodes through debug pods. Set Client, Config (or Exec), Options
// and Paths; a Fetcher is safe for concurrent use once set.
type Fetcher struct {
	Client  kubernetes.Interface
	Config  *rest.Config // for exec; unused when Exec is set
	Options Options
	Paths   []string // relative to Options.KubeletRootDir, e.g. "cpu_manager_state"
	// Sysfs also runs this dump in the same exec, into Snapshot.Sysfs (nil: files only).
	Sysfs *StderrDump

	// Exec replaces the remote exec, for tests. Nil means RemoteExec(Client, Config).
	Exec ExecFunc
}

// A StderrDump is a script the debug pod runs before the files' tar, in the same exec (one exec
// is one API request and one runtime exec on the node). It prints on stderr between Header and
// End, at most Max bytes. nodestate passes package machine's sysfs dump: fetch knows no machine.
type StderrDump struct {
	Script, Header, End string
	Max                 int
}

// Snapshot is the checkpoint files read from one place: a live node (Fetch) or files copied
// off one (package local). It is the one snapshot type from the read to the report.
type Snapshot struct {
	Node               string              // the node read live; "" for copied files
	Source             string              // the directory, archive or file copied files came from
	KubeletVersion     string              // status.nodeInfo.kubeletVersion: picks the format rules
	Allocatable        corev1.ResourceList // the live node's status.allocatable
	KubeletVersionFrom string              // for copies, where KubeletVersion was recorded (collect's node.json)
	Files              map[string][]byte   // requested path -> content
	Missing            []string            // requested paths that are not regular files on the node
	Oversized          []string            // requested paths skipped for exceeding the per-file cap
	TempFiles          []string            // leftover ".<digits>" files of interrupted kubelet writes
	Pods               *PodIndex           // the node's pods, to name pod UIDs and container IDs
	Sysfs              []byte              // the Sysfs dump, if asked for
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
// to run, execs one tar, parses it, indexes the node's pods, and deletes the pod on every way
// out (success, error, timeout, ctx cancelled). Every error is an *Error for nodeName.
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
		obj, err := f.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
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
		}
	}()

	pods := f.Client.CoreV1().Pods(opts.Namespace)
	want := GenerateDebugPod(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, opts)
	var waiter *podWaiter
	if pw != nil {
		waiter = pw.add(want.Name)
		defer pw.remove(want.Name)
	}
	created, err := pods.Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		// A create cut short (cancel, timeout, lost connection) may still have created the
		// pod: delete it by name. AlreadyExists would mean someone else's pod: leave it.
		if !apierrors.IsAlreadyExists(err) && !isAPIRejection(err) {
			_ = deletePod(ctx, pods, want.Name)
		}
		return nil, err
	}
	defer func() {
		if derr := deletePod(ctx, pods, created.Name); derr != nil {
			derr = ExplainError(derr, opts.Namespace)
			err = withNode(err, nodeName, opts.Namespace)
			var fe *Error
			switch {
			case errors.As(err, &fe):
				fe.Cleanup = derr
			case err == nil:
				nf.Warnings = append(nf.Warnings, "debug pod "+created.Namespace+"/"+created.Name+
					" could not be deleted: "+derr.Error()+"; run `kubectl nodestate cleanup`")
			}
		}
	}()

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
	var missed bool
	if pw != nil {
		err = pw.wait(ctx, waiter, created, opts.PodRunningTimeout, failed)
		missed = waiter.missed
	} else {
		err = waitRunning(ctx, pods, created, opts.Image, opts.PodRunningTimeout, failed)
	}
	stopEvents()
	if err != nil {
		return nil, err
	}
	got, err := f.collect(ctx, created, opts)
	if err != nil {
		return nil, err
	}
	nf = &Snapshot{
		Node:           nodeName,
		KubeletVersion: node.KubeletVersion,
		Allocatable:    node.Allocatable,
		Files:          got.files,
		Missing:        got.missing,
		Warnings:       got.warnings,
		Sysfs:          got.sysfs,
	}
	if missed {
		nf.Warnings = append(nf.Warnings, fmt.Sprintf("the pod watch did not report debug pod %s running; found it running after %s",
			created.Name, opts.PodRunningTimeout))
	}
	debug = created
	// After the read, so every pod named in the files that still exists is in the index; at
	// the same time as the debug pod's deletion, which it does not wait for.
	indexed = make(chan struct{})
	go func() {
		defer close(indexed)
		index, indexErr = IndexNodePods(ctx, f.Client, nodeName)
	}()
	return nf, nil
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
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
