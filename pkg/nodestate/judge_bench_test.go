package nodestate

import (
	"path/filepath"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
)

// BenchmarkJudgeExampleNode judges examples/kubelet-root's files as a fan-out verb judges each
// node's (the release chosen from their formats, then each file decoded once): it is the most
// of what verify adds to its floor's CPU a node (make bench-fanout).
func BenchmarkJudgeExampleNode(b *testing.B) {
	s, err := local.Read(filepath.Join(repo, "examples/kubelet-root"), decode.Paths(), local.DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	if len(s.Files) < 5 {
		b.Fatalf("read %d files of examples/kubelet-root", len(s.Files))
	}
	kindOf := func(p string) decode.Kind { k, _ := decode.ParseKind(p); return k }
	b.ReportAllocs()
	for b.Loop() {
		if rows, _ := judgeFiles(s, kindOf, nil, nil, "/var/lib/kubelet"); len(rows) != len(s.Files) {
			b.Fatalf("%d rows for %d files", len(rows), len(s.Files))
		}
	}
}
