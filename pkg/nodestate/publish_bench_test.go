package nodestate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// publishRoot is a kubelet root dir of examples/kubelet-root's files (every checkpoint kind)
// and admit-node's kubelet config, with this machine's sysfs and procfs.
func publishRoot(b *testing.B) LocalConfig {
	b.Helper()
	root := b.TempDir()
	src := filepath.Join(repo, "examples/kubelet-root")
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(repo, "examples/admit-node/kubelet-config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, KubeletConfigFile), config, 0o600); err != nil {
		b.Fatal(err)
	}
	return LocalConfig{Paths: nodelocal.Paths{RootDir: root, SysRoot: "/sys", ProcRoot: "/proc"}, KubeletVersion: "v1.37.1"}
}

// BenchmarkPublishUnchanged is what the publisher does on a file event that changed nothing it
// publishes: read the node, fingerprint it, write nothing.
func BenchmarkPublishUnchanged(b *testing.B) {
	lc := publishRoot(b)
	p := &Publisher{Client: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}), Node: "n", Local: lc}
	if _, err := p.Publish(b.Context(), true); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out, err := p.Publish(b.Context(), false)
		if err != nil || out.Wrote {
			b.Fatalf("wrote %v: %v", out.Wrote, err)
		}
	}
}

// BenchmarkPublishWrite is a publish that writes: read, fingerprint, encode (gzip), and apply
// the ConfigMap (to a fake API server: the request's own cost is the API server's).
func BenchmarkPublishWrite(b *testing.B) {
	lc := publishRoot(b)
	p := &Publisher{Client: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}), Node: "n", Local: lc}
	var bytes int
	for b.Loop() {
		out, err := p.Publish(b.Context(), true)
		if err != nil || !out.Wrote {
			b.Fatalf("wrote %v: %v", out.Wrote, err)
		}
		bytes = out.Bytes
	}
	b.ReportMetric(float64(bytes), "published-bytes")
}

// BenchmarkPublishedSize reports the size a node publishes (gzip, what the ConfigMap holds, and
// expanded) for the repository's example nodes, each with the same machine (admit-node's) and
// config; and what decoding and preparing it costs a consumer.
func BenchmarkPublishedSize(b *testing.B) {
	for _, example := range []string{"kubelet-root", "admit-node", "broken-node", "doctor-node"} {
		b.Run(example, func(b *testing.B) {
			s := admitNodeState(b, "n")
			snap, err := local.Read(filepath.Join(repo, "examples", example), decode.Paths(), local.DefaultLimits)
			if err != nil {
				b.Fatal(err)
			}
			s.Files, s.Missing = snap.Files, snap.Missing
			data, err := EncodePublished(s)
			if err != nil {
				b.Fatal(err)
			}
			expanded := len(mustUngzip(b, data))
			for b.Loop() {
				got, err := DecodePublished(data)
				if err != nil {
					b.Fatal(err)
				}
				PreparePublished(got, nil, nil)
			}
			b.ReportMetric(float64(len(data)), "gzip-bytes")
			b.ReportMetric(float64(expanded), "json-bytes")
		})
	}
}

// BenchmarkPublishedFleetNode is what admit --from-published does per node: decode its
// ConfigMap's state, judge it, replay one pod (examples/admit-node), and for a pod refused,
// replay it again with no checkpoint owner running (ownersDecide: whether its pods are worth a
// LIST; wide+owners beside wide). db is admitted; wide (18 CPUs) refused, and refused with no
// owner running either; db,db+owners is two such pods, the second replayed with no owner
// running too (a later pod's admission may not hold with fewer owners).
func BenchmarkPublishedFleetNode(b *testing.B) {
	s := admitNodeState(b, "n")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "n"}, BinaryData: map[string][]byte{}}
	data, err := EncodePublished(s)
	if err != nil {
		b.Fatal(err)
	}
	cm.BinaryData[PublishedDataKey] = data
	info := &fetch.NodeInfo{Name: "n"}
	pr := PublishedRead{MaxAge: time.Hour, Now: s.ReadAt}
	for _, pod := range []struct {
		name, cpus       string
		admitted, owners bool
		pods             int
	}{{"db", "6", true, false, 1}, {"wide", "18", false, false, 1}, {"wide+owners", "18", false, true, 1}, {"db,db+owners", "6", true, true, 2}} {
		var pods []*corev1.Pod
		for i := range pod.pods {
			p := guaranteedPod(fmt.Sprintf("%s-%d", pod.name, i), "", pod.cpus, "4Gi")
			p.Status = corev1.PodStatus{}
			pods = append(pods, p)
		}
		r := &Runner{cfg: Config{Published: &PublishedRead{}, PodNames: true, Engines: Engines{Admit: &AdmitConfig{Pods: pods}}}, memo: newParseMemo()}
		// shared-start: the node's start is one the fleet's memo holds (a node publishing what
		// another did); own-start: the memo keeps no start, each node's is its own (a node whose
		// files no other node has).
		for _, keep := range []bool{true, false} {
			name := pod.name + "/shared-start"
			if !keep {
				name = pod.name + "/own-start"
			}
			b.Run(name, func(b *testing.B) {
				r.memo = newParseMemo()
				if !keep {
					r.memo.starts.max = -1 // room for none
					r.memo.noneRunning.max = -1
				}
				b.ReportAllocs()
				for b.Loop() {
					res, _ := r.publishedNode(cm, info, pr)
					if res.Err != nil || res.Admit == nil || res.Admit.Err != nil || res.Admit.Admissions[0].Admitted != pod.admitted || (pod.owners && r.ownersDecide(res)) {
						b.Fatalf("%v %+v", res.Err, res.Admit)
					}
				}
			})
		}
	}
}

// BenchmarkPublishedAdmit is one admission replayed on a prepared published node
// (examples/admit-node, pod db after n pods of 2 CPUs), the kubelet started again for it
// (fresh: admit.Predict) beside the copy of the start the node keeps (clone: AdmitAmong), in
// one run so the ratio shows:
//
//	go test ./pkg/nodestate -run '^$' -bench PublishedAdmit -benchmem
func BenchmarkPublishedAdmit(b *testing.B) {
	p := PreparePublished(admitNodeState(b, "n"), nil, nil)
	if p.Err != nil {
		b.Fatal(p.Err)
	}
	for _, n := range []int{0, 4} {
		pods := []*corev1.Pod{}
		for i := range n {
			pods = append(pods, guaranteedPod(fmt.Sprintf("before-%d", i), "", "2", "1Gi"))
		}
		db := guaranteedPod("db", "", "6", "4Gi")
		pods = append(pods, db)
		for _, path := range []string{"fresh", "clone"} {
			b.Run(fmt.Sprintf("%s/pods=%d", path, len(pods)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var res admit.Result
					var err error
					if path == "fresh" {
						in := p.input
						in.Pods = pods
						res, err = admit.Predict(in)
					} else {
						res, err = p.AdmitAmong(nil, pods)
					}
					if err != nil || len(res.Admissions) != len(pods) {
						b.Fatalf("%v: %d admissions", err, len(res.Admissions))
					}
				}
			})
		}
	}
}
