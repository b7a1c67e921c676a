package nodestate

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// A node publishes its state (node-publish) so that the kubelet's admission can be replayed
// elsewhere, exactly, without a debug pod: by the scheduler's filter before it binds, and by
// admit --from-published for a fleet. What it publishes is what a debug pod's read returns,
// as bytes (the checkpoints, the kubelet's config, the sections of sysfs, PCI, the NVIDIA
// driver and the PodResources API): every consumer decodes and judges them with the same
// engines as a live read, so a published node and a read node answer alike.

// PublishedFormat names PublishedState's encoding; a reader refuses any other.
const PublishedFormat = "nodestate.kubectl-nodestate.io/v1alpha1"

// Where a node's state is published: a ConfigMap named after the node, in PublishedNamespace,
// labelled PublishedLabel, owned by its Node (deleted with it), the state under
// PublishedDataKey, and its fingerprint and read time as annotations, so that a consumer that
// holds the fingerprint already needs not expand the data.
const (
	PublishedNamespace    = "nodestate-publish"
	PublishedLabel        = "nodestate.kubectl-nodestate.io/published-state"
	PublishedDataKey      = "state.json.gz"
	FingerprintAnnotation = "nodestate.kubectl-nodestate.io/fingerprint"
	ReadAtAnnotation      = "nodestate.kubectl-nodestate.io/read-at"
)

// PublishedStateOf is the state a published ConfigMap holds.
func PublishedStateOf(cm *corev1.ConfigMap) (*PublishedState, error) {
	b, ok := cm.BinaryData[PublishedDataKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s holds no %s", cm.Namespace, cm.Name, PublishedDataKey)
	}
	s, err := DecodePublished(b)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if s.Node != cm.Name {
		return nil, fmt.Errorf("ConfigMap %s/%s holds the state of node %q, not its own", cm.Namespace, cm.Name, s.Node)
	}
	return s, nil
}

// The caps on a published state: what the API object holds (gzip) and what it expands to. A
// node's checkpoints and sections are tens of KiB; the caps bound what a hostile or broken
// node can make every consumer hold.
const (
	MaxPublishedBytes    = 512 << 10
	MaxPublishedExpanded = 8 << 20
)

// PublishedState is one node's published state.
type PublishedState struct {
	Format string `json:"format"`
	Node   string `json:"node"`
	// ReadAt is when the node was read; the state is as old as that.
	ReadAt time.Time `json:"readAt"`
	// KubeletVersion is the node's kubelet's version, and where it was read.
	KubeletVersion     string `json:"kubeletVersion,omitempty"`
	KubeletVersionFrom string `json:"kubeletVersionFrom,omitempty"`
	// KubeletRootDir is the kubelet's --root-dir; Files are relative to it.
	KubeletRootDir string `json:"kubeletRootDir"`
	// KubeletConfig is the kubelet's config file as read (KubeletConfigFrom names it).
	KubeletConfig     []byte `json:"kubeletConfig,omitempty"`
	KubeletConfigFrom string `json:"kubeletConfigFrom,omitempty"`
	// Files are the kubelet's checkpoint files by path relative to the root dir; Missing,
	// Oversized and TempFiles are as fetch.Snapshot's.
	Files     map[string][]byte `json:"files"`
	Missing   []string          `json:"missing,omitempty"`
	Oversized []string          `json:"oversized,omitempty"`
	TempFiles []string          `json:"tempFiles,omitempty"`
	// Sections are the read's sections (sysfs, PCI, NVIDIA, PodResources) by header.
	Sections map[string][]byte `json:"sections,omitempty"`
	// Warnings are the read's non-fatal problems.
	Warnings []string `json:"warnings,omitempty"`
}

// Fingerprint identifies the state's content, ReadAt apart: a publisher writes only when it
// changed, and a consumer decodes a node's state once per fingerprint.
func (s *PublishedState) Fingerprint() string {
	c := *s
	c.ReadAt = time.Time{}
	b, _ := json.Marshal(&c) // maps marshal in key order: the same content, the same bytes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// EncodePublished is the state as the API object holds it: JSON, gzip; a state over
// MaxPublishedBytes is refused.
func EncodePublished(s *PublishedState) ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxPublishedExpanded {
		return nil, fmt.Errorf("published state of node %s: %d bytes of JSON, over the cap of %d", s.Node, len(raw), MaxPublishedExpanded)
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.Len() > MaxPublishedBytes {
		return nil, fmt.Errorf("published state of node %s: %d bytes compressed, over the cap of %d", s.Node, b.Len(), MaxPublishedBytes)
	}
	return b.Bytes(), nil
}

// DecodePublished reads what EncodePublished wrote, from any node: sizes capped before and
// while expanding, the format and every path checked.
func DecodePublished(b []byte) (*PublishedState, error) {
	if len(b) > MaxPublishedBytes {
		return nil, fmt.Errorf("published state: %d bytes, over the cap of %d", len(b), MaxPublishedBytes)
	}
	// A fleet read expands one state per node: the expander and the buffer are reused (a
	// gzip.Reader holds tens of KB of tables; allocating them per node fed the collector).
	buf := expandBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxBufferKept {
			expandBuffers.Put(buf)
		}
	}()
	buf.Reset()
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		err = zr.Reset(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("published state: not gzip: %w", err)
	}
	defer gzipReaders.Put(zr)
	if _, err := buf.ReadFrom(io.LimitReader(zr, MaxPublishedExpanded+1)); err != nil {
		return nil, fmt.Errorf("published state: %w", err)
	}
	raw := buf.Bytes()
	if len(raw) > MaxPublishedExpanded {
		return nil, fmt.Errorf("published state: expands past the cap of %d bytes", MaxPublishedExpanded)
	}
	// The decoder copies what it keeps (strings, and []byte from base64): the buffer is free to
	// be reused.
	var s PublishedState
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("published state: %w", err)
	}
	if dec.More() {
		return nil, errors.New("published state: data after the state")
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// maxBufferKept: a buffer that held a state larger than nodes publish is dropped, not kept.
const maxBufferKept = 256 << 10

var (
	gzipReaders   sync.Pool // *gzip.Reader
	expandBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// validate refuses a state no publisher of this version writes: another format, a file path
// that is not a plain path under the root dir, a file over the read's per-file cap, a section
// no reader prints.
func (s *PublishedState) validate() error {
	if s.Format != PublishedFormat {
		return fmt.Errorf("published state: format %q, want %q (publisher and reader of other versions)", s.Format, PublishedFormat)
	}
	if s.Node == "" {
		return errors.New("published state: no node name")
	}
	for name, data := range s.Files {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("published state of node %s: file path %q is not a plain path under the kubelet root dir", s.Node, name)
		}
		if int64(len(data)) > local.DefaultLimits.MaxFileBytes {
			return fmt.Errorf("published state of node %s: file %s: %d bytes, over the per-file cap of %d", s.Node, name, len(data), local.DefaultLimits.MaxFileBytes)
		}
	}
	for header := range s.Sections {
		if !slices.Contains(publishedSections, header) {
			return fmt.Errorf("published state of node %s: unknown section %q", s.Node, header)
		}
	}
	return nil
}

// publishedSections are the sections a node publishes: what admit reads of a node beside its
// files.
var publishedSections = []string{machine.SysfsHeader, machine.PCIHeader, machine.NVIDIAHeader, machine.PodResourcesHeader}

// snapshot is the state as a read's snapshot, with what the API's Node object says of its
// devices and allocatable (info nil: not known).
func (s *PublishedState) snapshot(info *fetch.NodeInfo) *fetch.Snapshot {
	snap := &fetch.Snapshot{Node: s.Node, Source: "published state", KubeletVersion: s.KubeletVersion, KubeletVersionFrom: s.KubeletVersionFrom,
		Files: maps.Clone(s.Files), Missing: s.Missing, Oversized: s.Oversized, TempFiles: s.TempFiles,
		Dumps: maps.Clone(s.Sections), Warnings: s.Warnings}
	if snap.Files == nil {
		snap.Files = map[string][]byte{}
	}
	if snap.Dumps == nil {
		snap.Dumps = map[string][]byte{}
	}
	if info != nil {
		snap.Devices, snap.Allocatable, snap.NodeObject = info.Devices, info.Allocatable, info.Object
		if snap.KubeletVersion == "" {
			snap.KubeletVersion = info.KubeletVersion
		}
	}
	return snap
}

// forPublished is r judging a published node: with the kubelet root dir the node published.
func (r *Runner) forPublished(s *PublishedState) *Runner {
	cfg := r.cfg
	if s.KubeletRootDir != "" {
		cfg.KubeletRootDir = s.KubeletRootDir
	}
	return &Runner{cfg: cfg, draExtended: r.draExtended, noDRAExtended: r.noDRAExtended, memo: r.memo, nodePods: r.nodePods}
}

// publishedResult is a published node as a read node is: its sections parsed and its files
// judged, as a copy's are (offlineExtras, judge); the engines are the caller's to run.
func (r *Runner) publishedResult(s *PublishedState, info *fetch.NodeInfo) *NodeResult {
	res := &NodeResult{Node: s.Node, Where: "node " + s.Node + " (published)", Snapshot: s.snapshot(info),
		KubeletConfig: s.KubeletConfig, KubeletConfigFrom: s.KubeletConfigFrom}
	if res.KubeletConfig == nil {
		res.KubeletConfigNote = "the node published no kubelet config"
	}
	res.Snapshot.Pods = r.nodePods[s.Node]
	// As offlineExtras, for the only sections a node publishes that it parses.
	if dump := res.Snapshot.Dumps[machine.SysfsHeader]; dump != nil {
		res.Machine, res.MachineErr = r.memo.machine(dump)
	}
	r.judge(res)
	return res
}

// PublishedNode is a node's published state decoded and judged once, ready to replay the
// admission of pods on it as often as asked (the scheduler's filter asks once per pod).
type PublishedNode struct {
	State *PublishedState
	// Fingerprint is State's.
	Fingerprint string
	// Result is the node as a read node is: its judged files and, when the replay can run,
	// nothing in Err.
	Result *NodeResult
	// Notes say what the replay took from the node and what it lacked.
	Notes []string
	// Err is why no admission can be replayed on the node (no kubelet version, machine or
	// config published).
	Err error

	input admit.Input
	// prepared is input's kubelet started once: each admission runs on a copy of it. alone is
	// the same on the node emptied of pods (AdmitAlone), started when first asked. Each holds
	// one started kubelet (the managers' state as the checkpoints restore it); with after, a
	// node holds at most three, dropped with it.
	prepared  *admit.Prepared
	aloneOnce sync.Once
	alone     *admit.Prepared
	aloneErr  error
	// after is the node as the pods AdmitAfter was last asked after left it, keyed afterKey:
	// one more started kubelet's state while the scheduler has pods reserved here that the node
	// has not reported, dropped once it has none.
	afterMu  sync.Mutex
	after    *admit.Prefix
	afterKey [sha256.Size]byte
}

// PreparePublished decodes and judges a node's published state for its own kubelet (kubelet nil)
// or the one given, with node the API's Node object (its devices and allocatable; nil: not
// known).
func PreparePublished(s *PublishedState, node *corev1.Node, kubelet *decode.Kubelet) *PublishedNode {
	r := (&Runner{cfg: Config{Kubelet: kubelet, Engines: Engines{Admit: &AdmitConfig{}}}}).forPublished(s)
	if r.cfg.KubeletRootDir == "" {
		r.cfg.KubeletRootDir = decode.DefaultRootDir
	}
	var info *fetch.NodeInfo
	if node != nil {
		i := fetch.NodeInfoOf(node)
		info = &i
	}
	res := r.publishedResult(s, info)
	p := &PublishedNode{State: s, Fingerprint: s.Fingerprint(), Result: res}
	note := func(format string, a ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, a...)) }
	mi := r.managerInputs(res, nil, nil, note)
	switch {
	case mi.kubelet == nil:
		p.Err = errors.New("no kubelet version published")
	case mi.machine == nil:
		p.Err = errors.New("no machine published (the sysfs section)")
	case mi.config == nil:
		p.Err = errors.New("no kubelet config published")
	}
	if p.Err != nil {
		return p
	}
	in, d := r.replayInput(res, mi, nil)
	if d != nil {
		for _, line := range deviceTopologyNotes(d) {
			note("%s", line)
		}
	}
	p.input = in
	prepared, err := admit.Prepare(in)
	if err != nil {
		p.Err = err
	}
	p.prepared = prepared
	return p
}

// Input is the replay's input for the node, without pods: what AdmitAmong replays on (a caller
// comparing with admit.Predict's own start gives it pods).
func (p *PublishedNode) Input() admit.Input { return p.input }

// Admit replays the kubelet admitting pods, in order, on the published node: the pods the node
// has not reported yet first (the scheduler's reserved ones), then the pod asked about. The
// node-resource predicate is the scheduler's own (NodeResourcesFit) and is not replayed here.
func (p *PublishedNode) Admit(pods []*corev1.Pod) (admit.Result, error) {
	return p.AdmitAmong(nil, pods)
}

// AdmitAfter is AdmitAmong(active, before + pod), the pods before replayed once for every pod
// asked after the same ones with the same active pods (the scheduler asks each pod after the
// pods it reserved on the node that the node has not reported: each was replayed again for
// every pod, ~0.1 ms apiece). With active not known (nil), admit.Prefix replays them for each.
func (p *PublishedNode) AdmitAfter(active map[string]bool, before []*corev1.Pod, pod *corev1.Pod) (admit.Result, error) {
	if p.Err != nil {
		return admit.Result{}, p.Err
	}
	p.afterMu.Lock()
	if len(before) == 0 {
		p.after = nil
		p.afterMu.Unlock()
		return p.prepared.Predict(active, []*corev1.Pod{pod})
	}
	key := afterKey(active, before)
	x := p.after
	if x == nil || p.afterKey != key {
		x = p.prepared.After(active, before)
		p.after, p.afterKey = x, key
	}
	p.afterMu.Unlock()
	return x.Predict(pod)
}

// afterKey identifies the active pods and the pods admitted before, each by UID and version (a
// resize changes a pod's requests in place).
func afterKey(active map[string]bool, before []*corev1.Pod) [sha256.Size]byte {
	h := sha256.New()
	for _, uid := range slices.Sorted(maps.Keys(active)) {
		if active[uid] {
			fmt.Fprintf(h, "%q\n", uid)
		}
	}
	h.Write([]byte("--\n"))
	for _, pod := range before {
		fmt.Fprintf(h, "%q %q %d\n", pod.UID, pod.ResourceVersion, pod.Generation)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// AdmitAmong is Admit on a node whose active pods are known (the scheduler's pods bound there,
// not Succeeded or Failed; nil: not known): a checkpoint owner not among them is gone, and the
// managers drop its entries at the first admission as the kubelet does (admit.Input.ActivePods).
// The device checkpoint keeps a deleted pod's devices until the kubelet's next allocation, so
// without them such a node refuses what the kubelet admits.
func (p *PublishedNode) AdmitAmong(active map[string]bool, pods []*corev1.Pod) (admit.Result, error) {
	if p.Err != nil {
		return admit.Result{}, p.Err
	}
	return p.prepared.Predict(active, pods)
}
