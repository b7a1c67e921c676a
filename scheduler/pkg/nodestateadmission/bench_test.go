package nodestateadmission

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/admit"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodestate"
)

// BenchmarkFilter is the plugin's cost per node per pod: Filter on a prepared state (node-a:
// examples/admit-node's real checkpoints, restricted) with 0, 4 and 16 pods reserved there and
// not reported yet, beside what the plugin pays once per fingerprint (decode, then prepare),
// in one run so the ratio shows:
//
//	cd scheduler && go test ./pkg/nodestateadmission -run '^$' -bench . -benchmem
func BenchmarkFilter(b *testing.B) {
	cm := configMap(b, nodeState(b, "node-a", true, "restricted", time.Now()))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"}}}
	info := framework.NewNodeInfo()
	info.SetNode(node)
	pod := guaranteed("asked", "2", "1Gi")

	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nodestate.PublishedStateOf(cm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+prepare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := nodestate.PublishedStateOf(cm)
			if err != nil {
				b.Fatal(err)
			}
			if p := nodestate.PreparePublished(s, node, nil); p.Err != nil {
				b.Fatal(p.Err)
			}
		}
	})
	// The replay alone, as Filter runs it (pods reserved, then the pod), on the start the node
	// keeps (clone: AdmitAmong) beside the kubelet started again for each call (fresh:
	// admit.Predict, what Filter did before the start was kept).
	s, err := nodestate.PublishedStateOf(cm)
	if err != nil {
		b.Fatal(err)
	}
	prepared := nodestate.PreparePublished(s, node, nil)
	for _, n := range []int{0, 4} {
		var pods []*corev1.Pod
		for i := range n {
			pods = append(pods, guaranteed(fmt.Sprintf("reserved-%d", i), "2", "512Mi"))
		}
		pods = append(pods, pod)
		for _, path := range []string{"fresh", "clone"} {
			b.Run(fmt.Sprintf("replay/%s/reserved=%d", path, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if path == "fresh" {
						in := prepared.Input()
						in.Pods, in.ActivePods = pods, map[string]bool{}
						_, err = admit.Predict(in)
					} else {
						_, err = prepared.AdmitAmong(map[string]bool{}, pods)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, n := range []int{0, 4, 16} {
		b.Run(fmt.Sprintf("filter/reserved=%d", n), func(b *testing.B) {
			p := newPlugin(Args{MaxAge: metav1.Duration{Duration: time.Hour}, Fallback: FallbackReject})
			p.states.set(cm)
			// 8 pods of 2 exclusive CPUs fill 16 of the 28 free; the rest share the pool.
			for i := range n {
				cpu := "2"
				if i >= 8 {
					cpu = "500m"
				}
				r := guaranteed(fmt.Sprintf("reserved-%d", i), cpu, "512Mi")
				r.UID = types.UID(fmt.Sprintf("uid-reserved-%d", i))
				p.reserved.reserve(r, "node-a")
			}
			if st := p.Filter(context.Background(), nil, pod, info); !st.IsSuccess() {
				b.Fatalf("Filter: %v", st)
			}
			b.ReportAllocs()
			for b.Loop() {
				p.Filter(context.Background(), nil, pod, info)
			}
		})
	}
}

// BenchmarkRetainedPerNode is the heap one node's state holds in the plugin once decoded and
// prepared (what 10,000 nodes cost the scheduler's memory), reported as retained-B/node.
func BenchmarkRetainedPerNode(b *testing.B) {
	const nodes = 100
	cms := make([]*corev1.ConfigMap, nodes)
	for i := range cms {
		cms[i] = configMap(b, nodeState(b, fmt.Sprintf("node-%d", i), true, "restricted", time.Now()))
	}
	for b.Loop() {
		p := newPlugin(Args{MaxAge: metav1.Duration{Duration: time.Hour}, Fallback: FallbackReject})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, cm := range cms {
			p.states.set(cm)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cm.Name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"}}}
			p.states.get(cm.Name).prepare(node)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "retained-B/node")
		runtime.KeepAlive(p)
	}
}

// BenchmarkMayAdmit is what a republish costs per pod the plugin failed (mayAdmit: the pod on
// the node's new state emptied of every pod), beside one Filter of that pod on the state: a
// pod kept back saves a scheduling cycle of a Filter on every node.
//
//	cd scheduler && go test ./pkg/nodestateadmission -run '^$' -bench 'MayAdmit' -benchmem
func BenchmarkMayAdmit(b *testing.B) {
	p := newPlugin(Args{MaxAge: metav1.Duration{Duration: time.Hour}})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"}}}
	p.nodeOf = func(string) (*corev1.Node, error) { return node, nil }
	_, now := p.states.set(configMap(b, nodeState(b, "node-a", true, "restricted", time.Now())))
	info := framework.NewNodeInfo()
	info.SetNode(node)
	for _, pod := range []*corev1.Pod{guaranteed("fits", "2", "1Gi"), guaranteed("huge", "40", "1Gi")} {
		b.Run("mayAdmit/"+pod.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				kept := len(p.mayAdmit("node-a", now, map[string]*corev1.Pod{pod.Name: pod})) == 0
				if kept != (pod.Name == "huge") {
					b.Fatalf("%s kept %v", pod.Name, kept)
				}
				p.rejected.take()
			}
		})
		b.Run("filter/"+pod.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.filter(context.Background(), framework.NewCycleState(), pod, info)
			}
		})
	}
}
