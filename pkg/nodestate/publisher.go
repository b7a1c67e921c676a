package nodestate

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// The publisher's timing: a node's files change in bursts (a pod's admission writes the CPU,
// memory and device checkpoints within milliseconds), so a change is published once the burst
// is over; and every PublishRefresh the state is read and written again whatever changed,
// so that its read-at says the publisher is alive (a consumer takes an older state for a dead
// publisher's: DefaultMaxPublishedAge is three refreshes).
const (
	DefaultPublishRefresh  = 5 * time.Minute
	DefaultPublishDebounce = 2 * time.Second
	DefaultMaxPublishedAge = 3 * DefaultPublishRefresh
	// PublishFieldManager owns the fields the publisher applies (server-side apply).
	PublishFieldManager = "kubectl-nodestate-publish"
	// PublishedLabelValue is PublishedLabel's value on every published object.
	PublishedLabelValue = "true"
	// publishRetryMax bounds the wait before a failed publish is tried again.
	publishRetryMax = time.Minute
	// publishBurstMax bounds, in debounces, how long a burst that never goes still (pods
	// admitted back to back) holds a change back: it is published at the latest this long
	// after the burst's first change.
	publishBurstMax = 5
)

// Publisher publishes the state of the node it runs on (node-publish): the ConfigMap that
// admit --from-published and the scheduler's filter read, and the node's NodeResourceTopology
// object where that API is served. It writes only when the state's fingerprint changed, and on
// each refresh.
type Publisher struct {
	Client kubernetes.Interface
	// Dynamic writes the NodeResourceTopology object; nil writes none.
	Dynamic dynamic.Interface
	// Node is the node this runs on; Local is where its files are.
	Node  string
	Local LocalConfig
	// Refresh and Debounce are DefaultPublishRefresh and DefaultPublishDebounce when 0.
	Refresh, Debounce time.Duration
	// Logf says what was published and what failed (nil: nothing is said).
	Logf func(format string, args ...any)
	// Read reads the node's state (nil: ReadPublished of Node and Local).
	Read func(ctx context.Context) (*PublishedState, error)

	owner      *metav1ac.OwnerReferenceApplyConfiguration
	node       *corev1.Node
	written    string // the fingerprint of the ConfigMap last written
	nrtWritten string
	nrtServed  *bool
	writes     atomic.Int64
}

// Published is one publish's outcome.
type Published struct {
	Fingerprint string
	// Wrote: the ConfigMap was written (Bytes its data); NRT: the NodeResourceTopology was.
	Wrote, NRT bool
	Bytes      int
}

// Writes is how many API writes the publisher made.
func (p *Publisher) Writes() int64 { return p.writes.Load() }

func (p *Publisher) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// Publish reads the node and writes its state when its fingerprint is not the one last
// written, or always when refresh is set (the read time is then new).
func (p *Publisher) Publish(ctx context.Context, refresh bool) (Published, error) {
	read := p.Read
	if read == nil {
		read = func(ctx context.Context) (*PublishedState, error) { return ReadPublished(ctx, p.Node, p.Local) }
	}
	s, err := read(ctx)
	if err != nil {
		return Published{}, err
	}
	out := Published{Fingerprint: s.Fingerprint()}
	if out.Fingerprint == p.written && !refresh {
		return out, nil
	}
	if err := p.ownerNode(ctx); err != nil {
		return out, err
	}
	data, err := EncodePublished(s)
	if err != nil {
		return out, err
	}
	cm := corev1ac.ConfigMap(p.Node, PublishedNamespace).
		WithLabels(map[string]string{PublishedLabel: PublishedLabelValue}).
		WithAnnotations(map[string]string{FingerprintAnnotation: out.Fingerprint, ReadAtAnnotation: s.ReadAt.UTC().Format(time.RFC3339)}).
		WithOwnerReferences(p.owner).
		WithBinaryData(map[string][]byte{PublishedDataKey: data})
	p.writes.Add(1)
	if _, err := p.Client.CoreV1().ConfigMaps(PublishedNamespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: PublishFieldManager, Force: true}); err != nil {
		return out, fmt.Errorf("ConfigMap %s/%s: %w", PublishedNamespace, p.Node, err)
	}
	p.written, out.Wrote, out.Bytes = out.Fingerprint, true, len(data)
	if out.NRT, err = p.publishNRT(ctx, s, out.Fingerprint); err != nil {
		return out, err
	}
	return out, nil
}

// ownerNode gets the node once: its UID owns the published objects, so they go with it.
func (p *Publisher) ownerNode(ctx context.Context) error {
	if p.owner != nil {
		return nil
	}
	node, err := p.Client.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", p.Node, err)
	}
	p.node = node
	p.owner = metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Node").WithName(node.Name).WithUID(node.UID)
	return nil
}

// publishNRT writes the NodeResourceTopology object when its content may have changed (the
// state's fingerprint did), where the API is served: asked once, and said once when it is not.
func (p *Publisher) publishNRT(ctx context.Context, s *PublishedState, fingerprint string) (bool, error) {
	if p.Dynamic == nil || fingerprint == p.nrtWritten {
		return false, nil
	}
	if p.nrtServed == nil {
		served, err := nrtServed(p.Client)
		if err != nil {
			return false, err
		}
		p.nrtServed = &served
		if !served {
			p.logf("%s is not served (no NodeResourceTopology CRD): publishing the ConfigMap only", NRTResource.GroupVersion())
		}
	}
	if !*p.nrtServed {
		return false, nil
	}
	obj, err := PreparePublished(s, p.node, nil).NodeResourceTopology()
	if err != nil {
		// The ConfigMap says why to whoever replays it; the NRT has no field for it.
		p.logf("NodeResourceTopology not written: %v", err)
		p.nrtWritten = fingerprint
		return false, nil
	}
	obj.SetLabels(map[string]string{PublishedLabel: PublishedLabelValue})
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: p.node.Name, UID: p.node.UID}})
	p.writes.Add(1)
	if _, err := p.Dynamic.Resource(NRTResource).Apply(ctx, s.Node, obj, metav1.ApplyOptions{FieldManager: PublishFieldManager, Force: true}); err != nil {
		return false, fmt.Errorf("NodeResourceTopology %s: %w", s.Node, err)
	}
	p.nrtWritten = fingerprint
	return true, nil
}

// nrtServed asks discovery whether the NodeResourceTopology resource is served.
func nrtServed(client kubernetes.Interface) (bool, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(NRTResource.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovery of %s: %w", NRTResource.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == NRTResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// Run publishes at once, then on every change of the checkpoint files or the device plugins'
// dir (inotify, debounced) and on every refresh, until ctx ends. A failed publish is said and
// tried again, sooner than the next refresh.
func (p *Publisher) Run(ctx context.Context) error {
	refresh, debounce := p.Refresh, p.Debounce
	if refresh <= 0 {
		refresh = DefaultPublishRefresh
	}
	if debounce <= 0 {
		debounce = DefaultPublishDebounce
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	root := p.Local.RootDir
	for _, d := range PublishedWatchPaths() {
		if err := w.Add(filepath.Join(root, d)); err != nil {
			// A dir the kubelet has not made yet (no device plugin ever): the refresh sees it.
			p.logf("not watching %s: %v", filepath.Join(root, d), err)
		}
	}
	relevant := func(name string) bool {
		rel, err := filepath.Rel(root, name)
		return err == nil && PublishedWatched(filepath.ToSlash(rel))
	}

	timer := time.NewTimer(0) // the first publish, at once
	defer timer.Stop()
	ticker := time.NewTicker(refresh)
	defer ticker.Stop()
	force, retry := true, time.Duration(0)
	var burst time.Time // the first change not yet published (zero: none)
	publish := func() {
		burst = time.Time{}
		out, err := p.Publish(ctx, force)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			retry = min(max(2*retry, debounce), publishRetryMax)
			p.logf("publish failed (again in %s): %v", retry, err)
			timer.Reset(retry)
			return
		case out.Wrote:
			p.logf("published %s: %d bytes%s", out.Fingerprint, out.Bytes, map[bool]string{true: ", and its NodeResourceTopology"}[out.NRT])
		}
		force, retry = false, 0
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !relevant(ev.Name) || retry != 0 {
				continue
			}
			now := time.Now()
			if burst.IsZero() {
				burst = now
			}
			timer.Reset(min(debounce, burst.Add(publishBurstMax*debounce).Sub(now)))
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			p.logf("watch: %v (the refresh still publishes)", err)
		case <-timer.C:
			publish()
		case <-ticker.C:
			force = true
			publish()
		}
	}
}

// PublishedWatched reports whether an event on name (relative to the kubelet root dir) may
// change what a node publishes.
func PublishedWatched(name string) bool {
	return slices.Contains(decode.Paths(), name) || path.Dir(name) == "device-plugins"
}
