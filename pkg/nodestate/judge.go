package nodestate

import (
	"fmt"
	"sort"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/render"
)

// Judge decodes every file of s, in the kubelet's file order, as reader would (nil: the node's
// own kubelet version when s has one, else each format's last writer), then adds a row for
// each file over the size cap and each leftover temp file. kindOf names a file's kind.
func Judge(s *fetch.Snapshot, kindOf func(path string) decode.Kind, reader *decode.Kubelet, rootDir string) []render.FileRow {
	var versionNote string
	if reader == nil && s.KubeletVersion != "" {
		if k, err := decode.ParseKubelet(s.KubeletVersion, nil); err == nil {
			reader = &k
		} else {
			versionNote = fmt.Sprintf("the node reports kubelet version %q, which names no release: judged by the file's own format instead (see --kubelet-version)", s.KubeletVersion)
		}
	}
	opts := decode.Options{Kubelet: reader, RootDir: rootDir}
	var rows []render.FileRow
	for _, p := range sortedPaths(s.Files) {
		rep := decode.Decode(kindOf(p), s.Files[p], opts)
		rep.File = p
		if versionNote != "" {
			rep.Notes = append(rep.Notes, versionNote)
		}
		rows = append(rows, render.FileRow{Node: s.Node, Report: rep})
	}
	for _, p := range s.Oversized {
		kind, _ := decode.ParseKind(p)
		rows = append(rows, render.OversizedRow(s.Node, p, kind))
	}
	for _, p := range s.TempFiles {
		rows = append(rows, render.TempFileRow(s.Node, p))
	}
	return rows
}

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

func (p podNames) DebugPod(uid string) bool { return p.ix.DebugPod(uid) }

var (
	_ render.PodNames  = podNames{}
	_ render.DebugPods = podNames{}
)
