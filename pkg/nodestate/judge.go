package nodestate

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/text"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// Basis is where the one kubelet judging a node's files comes from.
type Basis string

// The bases, in the order they are tried.
const (
	BasisConfig   Basis = "config"   // Config.Kubelet (--kubelet-version)
	BasisRecorded Basis = "recorded" // the version collect recorded beside copied files
	BasisNode     Basis = "node"     // the live node's status.nodeInfo.kubeletVersion
	BasisFiles    Basis = "files"    // the newest release that writes the files (decode.ChooseWritingRelease)
)

// Judgement is the one kubelet that judged a node's files, why, and the files it does not write
// beside the others.
type Judgement struct {
	// Kubelet is nil when nothing names one: no version known and no file of a known format.
	Kubelet *decode.Kubelet
	Basis   Basis
	// Why is a clause for a header line: "node worker-9's version, recorded by collect in ...".
	Why string
	// Apart are the files no kubelet writing the node's other files writes in their format:
	// left by another kubelet and never rewritten since (a finding).
	Apart []Apart
}

// Sentence is the header line: "Judged by kubelet v1.37.1: <why>." ("" when none judged).
func (j Judgement) Sentence() string {
	if j.Kubelet == nil {
		return ""
	}
	return fmt.Sprintf("Judged by kubelet %s: %s.", j.Kubelet, j.Why)
}

// Apart is a file apart from the node's others.
type Apart struct {
	File, Format string
	// WrittenBy says which kubelets write the file in its format ("1.11-1.19").
	WrittenBy string
	// Others are the node's files the newest release writing the most of them writes.
	Others []string
}

// Sentence says the finding in one sentence.
func (a Apart) Sentence() string {
	return fmt.Sprintf("%s (%s) is written only by kubelet %s, never by the kubelet that wrote %s: another kubelet left it, and none has rewritten it since.",
		a.File, a.Format, a.WrittenBy, text.JoinAnd(a.Others))
}

// Files collect writes beside a node's checkpoint files. NodeInfoFile is the bundle's one node
// record: reading the copies later judges them by its kubelet version, and doctor takes
// machine.json and the kubelet config from beside it.
const (
	NodeInfoFile   = "node.json"
	NodeInfoSchema = "kubectl-nodestate/node/v1"
	MachineFile    = "machine.json"
	ConfigzFile    = "kubelet-config.json"
	ConfigYAMLFile = "kubelet-config.yaml"
)

// NodeInfo is NodeInfoFile: what the files alone do not say about the node.
type NodeInfo struct {
	Schema         string `json:"schema"`
	Node           string `json:"node"`
	KubeletVersion string `json:"kubeletVersion,omitempty"`
	// KubeletConfig is the file holding the kubelet config and where it came from, or why
	// there is none.
	KubeletConfig     string `json:"kubeletConfig,omitempty"`
	KubeletConfigFrom string `json:"kubeletConfigFrom,omitempty"`
	KubeletConfigNote string `json:"kubeletConfigNote,omitempty"`
	// Machine is machine.json, or MachineError why it could not be read.
	Machine      string `json:"machine,omitempty"`
	MachineError string `json:"machineError,omitempty"`
	// Devices are the node's extended resources as its status said when collected.
	Devices *fetch.DeviceStatus `json:"devices,omitempty"`
	// Pods are the node's pods as the API server listed them when collected, with their
	// containers' states: the kubelet-restart outlook's input. Nil: not recorded (a bundle of
	// an older collect, or of the collect script, which has no API server), and that outlook
	// is not given.
	Pods *RecordedPods `json:"pods,omitempty"`
}

// ParseNodeInfo reads NodeInfoFile. The schema must be collect's: "node.json" is a common name
// (kubectl get node -o json > node.json), and another file's version must not judge the node.
func ParseNodeInfo(b []byte) (NodeInfo, error) {
	var info NodeInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return NodeInfo{}, err
	}
	if info.Schema != NodeInfoSchema {
		return NodeInfo{}, fmt.Errorf("schema %q, want %q", info.Schema, NodeInfoSchema)
	}
	return info, nil
}

// JudgeFiles decodes every file of s, in the kubelet's file order, all by one kubelet (a node runs
// one): reader when given, else the version s carries (the one collect recorded for copies, the
// node's own live), else the newest release that writes the files together
// (decode.ChooseWritingRelease). It then adds a row for each file over the size cap and each leftover
// temp file. Whoever judges, files no release writes beside the others are marked apart (row
// and Judgement). kindOf names a file's kind. Judgement.Why is left empty for a given reader:
// the caller knows why it gave one.
func JudgeFiles(s *fetch.Snapshot, kindOf func(path string) decode.Kind, reader *decode.Kubelet, rootDir string) ([]FileRow, Judgement) {
	return judgeFiles(s, kindOf, reader, nil, rootDir)
}

// judgeFiles is JudgeFiles for a kubelet whose config file turns on configGates (the command
// line's gates win): the release is chosen first, with those gates, from the files' formats
// alone, and then each file is decoded once, by that kubelet. A release only guessed from the
// formats takes no config's gates: nothing says the config is that kubelet's.
func judgeFiles(s *fetch.Snapshot, kindOf func(path string) decode.Kind, reader *decode.Kubelet, configGates map[string]bool, rootDir string) ([]FileRow, Judgement) {
	// Judge: the one kubelet, before any file is decoded.
	j := Judgement{Kubelet: reader, Basis: BasisConfig}
	var versionNote string
	if reader == nil && s.KubeletVersion != "" {
		if k, err := decode.ParseKubelet(s.KubeletVersion, nil); err == nil {
			j.Kubelet, j.Basis, j.Why = &k, BasisNode, "the node's own kubelet version"
			if s.KubeletVersionFrom != "" {
				j.Basis, j.Why = BasisRecorded, s.KubeletVersionFrom
			}
		} else {
			versionNote = fmt.Sprintf("the node reports kubelet version %q, which names no release: judged by the newest release that writes the files instead (see --kubelet-version)", s.KubeletVersion)
		}
	}
	paths := sortedPaths(s.Files)
	formats := make([]decode.FileFormat, len(paths))
	parsed := make([]*decode.Parsed, len(paths))
	for i, p := range paths {
		kind := kindOf(p)
		parsed[i] = decode.Parse(kind, s.Files[p])
		formats[i] = decode.FileFormat{File: p, Kind: kind, Format: parsed[i].Format()}
	}
	choice, chosen := decode.ChooseWritingRelease(formats)
	if j.Kubelet == nil && chosen {
		j.Kubelet, j.Basis, j.Why = &choice.Kubelet, BasisFiles, choice.Why()
	}
	if j.Kubelet != nil && j.Basis != BasisFiles && len(configGates) > 0 {
		k := j.Kubelet.WithConfigGates(configGates)
		j.Kubelet = &k
	}
	apart := map[string]bool{}
	if chosen {
		var others []string
		for _, f := range choice.Writes {
			others = append(others, f.File)
		}
		for _, f := range choice.Apart {
			j.Apart = append(j.Apart, Apart{File: f.File, Format: f.Format, WrittenBy: decode.WrittenBy(f.Kind, f.Format), Others: others})
			apart[f.File] = true
		}
	}

	// Decode: each file once, by that kubelet.
	opts := decode.Options{Kubelet: j.Kubelet, RootDir: rootDir}
	rows := make([]FileRow, 0, len(paths)+len(s.Oversized)+len(s.TempFiles))
	for i, p := range paths {
		rep := decodeFile(parsed[i], opts)
		rep.File, rep.Apart = p, apart[p]
		if versionNote != "" {
			rep.Notes = append(rep.Notes, versionNote)
		}
		rows = append(rows, FileRow{Node: s.Node, Report: rep})
	}
	for _, p := range s.Oversized {
		kind, _ := decode.ParseKind(p)
		rows = append(rows, OversizedRow(s.Node, p, kind))
	}
	for _, p := range s.TempFiles {
		rows = append(rows, TempFileRow(s.Node, p))
	}
	return rows, j
}

// decodeFile is Parsed.Decode; a test counts the decodes through it.
var decodeFile = (*decode.Parsed).Decode

// sortedPaths orders files as decode.Files lists them, then any other path (--from-file).
func sortedPaths(files map[string][]byte) []string {
	rank := map[string]int{}
	for i, f := range decode.Files {
		rank[f.Path] = i
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		ri, iok := rank[paths[i]]
		rj, jok := rank[paths[j]]
		if iok != jok {
			return iok
		}
		if ri != rj {
			return ri < rj
		}
		return paths[i] < paths[j]
	})
	return paths
}

// podNames adapts the fetch pod index to PodNames.
type podNames struct{ ix *fetch.PodIndex }

func (p podNames) Pod(uid string) (string, string, bool) {
	r, ok := p.ix.Pod(uid)
	return r.Namespace, r.Name, ok
}

func (p podNames) Container(id string) (string, string, string, bool) {
	r, ok := p.ix.Container(id)
	return r.Namespace, r.Pod, r.Container, ok
}

func (p podNames) DebugPod(uid string) bool { return p.ix.DebugPod(uid) }

func (p podNames) DebugPodNamed(namespace, name string) bool {
	return p.ix.DebugPodNamed(namespace, name)
}

var (
	_ PodNames      = podNames{}
	_ DebugPods     = podNames{}
	_ DebugPodNames = podNames{}
)
