//go:build e2e

package e2e

// Which way of naming the pods in the checkpoints costs the API server less: one
// field-selected list per node (spec.nodeName, what the plugin does after reading each node),
// or one cluster-wide list in pages of 500 before the fan-out? Measured at 100 and 10,000 pods
// per node (NODESTATE_BENCH_PODINDEX=1; `make bench-podindex`) as the API server's CPU time,
// the requests and the bytes, for reading every node once. The pods sit on NotReady nodes
// kwok does not manage, so they cost the control plane nothing while they exist.

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestBenchPodIndex(t *testing.T) {
	if os.Getenv("NODESTATE_BENCH_PODINDEX") == "" {
		t.Skip("set NODESTATE_BENCH_PODINDEX=1 (make bench-podindex)")
	}
	const rounds = 5
	for _, c := range []struct{ nodes, perNode int }{{20, 100}, {2, 10000}} {
		t.Run(fmt.Sprintf("%dx%d", c.nodes, c.perNode), func(t *testing.T) {
			names := make([]string, c.nodes)
			for i := range names {
				names[i] = fmt.Sprintf("podindex-%d-%02d", c.perNode, i)
			}
			CreateNodes(t, names, func(string) NodeOptions { return NodeOptions{NotReady: true} })
			ns := NewNamespace(t, nil)
			ctx := ctxFor(t, 30*time.Minute)
			start := time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 32)
			errs := make(chan error, 1)
			for _, node := range names {
				for j := range c.perNode {
					sem <- struct{}{}
					wg.Add(1)
					go func() {
						defer func() { <-sem; wg.Done() }()
						_, err := cp.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
							ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", node, j), Labels: map[string]string{"app": "filler"}},
							Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
								Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
						}, metav1.CreateOptions{})
						if err != nil {
							select {
							case errs <- err:
							default:
							}
						}
					}()
				}
			}
			wg.Wait()
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			t.Logf("%d pods created in %s", c.nodes*c.perNode, time.Since(start).Round(time.Millisecond))
			// In one request, before the harness deletes the nodes (and their pods one by one).
			t.Cleanup(func() {
				err := cp.client.CoreV1().Pods(ns).DeleteCollection(context.Background(),
					metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: "app=filler"})
				if err != nil {
					t.Errorf("delete the filler pods: %v", err)
				}
			})
			total := c.nodes * c.perNode

			perNode := func(ctx context.Context) (int, int) {
				reqs, pods := 0, 0
				for _, node := range names {
					l, err := cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
					if err != nil {
						t.Fatal(err)
					}
					reqs++
					pods += len(l.Items)
				}
				return reqs, pods
			}
			clusterWide := func(ctx context.Context) (int, int) {
				reqs, pods := 0, 0
				opts := metav1.ListOptions{Limit: 500}
				for {
					l, err := cp.client.CoreV1().Pods("").List(ctx, opts)
					if err != nil {
						t.Fatal(err)
					}
					reqs++
					for _, p := range l.Items {
						if p.Labels["app"] == "filler" {
							pods++
						}
					}
					if l.Continue == "" {
						return reqs, pods
					}
					opts.Continue = l.Continue
				}
			}
			for _, s := range []struct {
				name string
				f    func(context.Context) (int, int)
			}{{"per-node", perNode}, {"cluster-wide", clusterWide}, {"per-node", perNode}, {"cluster-wide", clusterWide}} {
				cpu0, t0 := controlPlaneCPU(t, "kube-apiserver"), time.Now()
				var reqs, pods int
				for range rounds {
					reqs, pods = s.f(ctx)
				}
				cpu, wall := (controlPlaneCPU(t, "kube-apiserver")-cpu0)/rounds, time.Since(t0)/rounds
				if pods < total {
					t.Fatalf("%s: %d pods, want %d", s.name, pods, total)
				}
				line := fmt.Sprintf("PODINDEX nodes=%d pods_per_node=%d strategy=%s requests=%d apiserver_cpu=%dms wall=%dms",
					c.nodes, c.perNode, s.name, reqs, cpu.Milliseconds(), wall.Milliseconds())
				fmt.Println(line)
				t.Log(line)
			}
		})
	}
}
