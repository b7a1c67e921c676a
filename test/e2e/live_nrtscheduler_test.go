//go:build e2e

package e2e

// The baseline scheduler (issue 45; docs/scheduler-baseline.md): kube-scheduler with the
// upstream NodeResourceTopologyMatch plugin (hack/nrtscheduler), run against the harness's real
// kube-apiserver with the shipped profile (deploy/scheduler-nrt). It needs the binary, which takes
// minutes to build cold: `make e2e-nrt-scheduler` builds it (cached) and runs this test.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// nrtSchedulerEnv names the baseline scheduler's binary (hack/nrtscheduler/build.sh prints it).
const nrtSchedulerEnv = "NODESTATE_NRT_SCHEDULER"

// nrtSchedulerName is the profile's schedulerName in deploy/scheduler-nrt/scheduler-config.yaml.
const nrtSchedulerName = "nrt-match-scheduler"

var nrtGVR = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}

// nrtZone is one NUMA zone of a NodeResourceTopology: resource name -> quantity, the same for
// capacity, allocatable and available (nothing runs there yet).
type nrtZone map[string]string

// TestNRTSchedulerBaseline: two kwok nodes with the same node-level resources (16 CPUs, 64 GiB,
// 4 GPUs) and NRT objects saying single-numa-node, container scope. On nrt-fit NUMA 0 holds all
// four GPUs; on nrt-split each zone holds two. A guaranteed pod asking 4 CPUs and 4 GPUs fits
// only nrt-fit's NUMA 0 and binds there; one asking 10 CPUs fits either node as a whole but no
// zone of either (8 CPUs each) and stays Pending with the plugin's message.
func TestNRTSchedulerBaseline(t *testing.T) {
	bin := os.Getenv(nrtSchedulerEnv)
	if bin == "" {
		t.Skip("set " + nrtSchedulerEnv + " to the baseline scheduler (make e2e-nrt-scheduler builds it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cp.applyCRDs(ctx, filepath.Join(cp.repoRoot, "deploy", "scheduler-nrt", "noderesourcetopology-crd.yaml")); err != nil {
		t.Fatal(err)
	}

	nodes := map[string][]nrtZone{
		"nrt-fit": {
			{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
			{"cpu": "8", "memory": "32Gi"},
		},
		"nrt-split": {
			{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"},
			{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"},
		},
	}
	nodeResources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("4"),
	}
	for name, zones := range nodes {
		CreateNode(t, name, "", nil, "")
		// kwok updates the node too (its heartbeat): read, change and write again on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Status.Capacity, node.Status.Allocatable = nodeResources.DeepCopy(), nodeResources.DeepCopy()
			_, err = Client().CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The API server's TaintNodesByCondition admission taints a new node not-ready; the node
		// lifecycle controller lifts it once the node is Ready, and none runs here: lift it as it would.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == corev1.TaintNodeNotReady })
			_, err = Client().CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		createNRT(ctx, t, name, zones)
	}

	// The NRT objects exist before the scheduler starts: a node without one passes the filter,
	// so a scheduler that raced ahead of its informer could bind anywhere.
	sched := startNRTScheduler(t, bin)

	ns := NewNamespace(t, nil)
	onTheseNodes := map[string]string{TestLabel: TestID(t)} // other tests' nodes have no NRT: they would pass
	fits := guaranteedPod("gpu-fits-one-zone", onTheseNodes, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi"), "nvidia.com/gpu": resource.MustParse("4"),
	})
	fitsNoZone := guaranteedPod("cpu-fits-no-zone", onTheseNodes, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	})
	for _, pod := range []*corev1.Pod{fits, fitsNoZone} {
		if _, err := Client().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	bound := WaitPod(t, ns, fits.Name, 2*time.Minute, func(p *corev1.Pod) (bool, error) {
		if sched.exited() {
			return false, fmt.Errorf("the scheduler exited: %v", sched.waitErr)
		}
		return p.Spec.NodeName != "", nil
	})
	if bound.Spec.NodeName != "nrt-fit" {
		t.Errorf("%s bound to %s, want nrt-fit (the only node with 4 GPUs on one NUMA zone)", fits.Name, bound.Spec.NodeName)
	}

	// "2 cannot align container": both nodes fail in the plugin's Filter (upstream filter.go,
	// single-numa-node at container scope), neither in NodeResourcesFit.
	const want = "0/2 nodes are available: 2 cannot align container."
	pending := WaitPod(t, ns, fitsNoZone.Name, 2*time.Minute, func(p *corev1.Pod) (bool, error) {
		if sched.exited() {
			return false, fmt.Errorf("the scheduler exited: %v", sched.waitErr)
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("bound to %s, want Pending (it fits no NUMA zone of either node)", p.Spec.NodeName)
		}
		c := podCondition(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable, nil
	})
	if c := podCondition(pending, corev1.PodScheduled); !strings.HasPrefix(c.Message, want) {
		t.Errorf("%s: PodScheduled says %q, want it to start with %q", fitsNoZone.Name, c.Message, want)
	} else {
		t.Logf("%s: %s", fitsNoZone.Name, c.Message)
	}
}

// startNRTScheduler runs the baseline scheduler with the shipped profile, its kubeconfig the
// harness's admin one, on a free loopback port, stopped (its process group) when t ends.
func startNRTScheduler(t *testing.T, bin string) *proc {
	t.Helper()
	configPath := schedulerConfigHere(t, filepath.Join(cp.repoRoot, "deploy", "scheduler-nrt", "scheduler-config.yaml"))
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cp.start("nrt-scheduler", bin,
		"--config="+configPath,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+t.TempDir(),
		"--v=2", // the plugin's per-container verdicts
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("the scheduler's log (%s), last lines:\n%s", p.logPath, tail(p.logPath, 40))
		}
	})
	return p
}

// createNRT creates node's NodeResourceTopology: single-numa-node, container scope (the
// attributes the plugin reads), one zone per NUMA node.
func createNRT(ctx context.Context, t *testing.T, node string, zones []nrtZone) {
	t.Helper()
	var zoneList []any
	for i, zone := range zones {
		var resources []any
		for name, qty := range zone {
			resources = append(resources, map[string]any{"name": name, "capacity": qty, "allocatable": qty, "available": qty})
		}
		zoneList = append(zoneList, map[string]any{"name": fmt.Sprintf("node-%d", i), "type": "Node", "resources": resources})
	}
	nrt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.node.k8s.io/v1alpha2",
		"kind":       "NodeResourceTopology",
		"metadata":   map[string]any{"name": node},
		"attributes": []any{
			map[string]any{"name": "topologyManagerPolicy", "value": "single-numa-node"},
			map[string]any{"name": "topologyManagerScope", "value": "container"},
		},
		"zones": zoneList,
	}}
	// Right after the CRD is Established its resource may not be served yet: retry NotFound.
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cp.dynamic.Resource(nrtGVR).Create(ctx, nrt, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("create NodeResourceTopology %s: %v", node, err)
	}
	t.Cleanup(func() {
		_ = cp.dynamic.Resource(nrtGVR).Delete(context.Background(), node, metav1.DeleteOptions{})
	})
}

// guaranteedPod is a pod of one container whose limits equal its requests, for the baseline
// scheduler, restricted to nodeSelector.
func guaranteedPod(name string, nodeSelector map[string]string, resources corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SchedulerName: nrtSchedulerName,
			NodeSelector:  nodeSelector,
			Containers: []corev1.Container{{
				Name:      "app",
				Image:     "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources},
			}},
		},
	}
}

func podCondition(p *corev1.Pod, kind corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == kind {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// schedulerConfigHere is a shipped KubeSchedulerConfiguration made to run against the harness: its
// kubeconfig the admin one, no leader election; the path of the copy.
func schedulerConfigHere(t *testing.T, shipped string) string {
	t.Helper()
	raw, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := yaml.Unmarshal(raw, &config); err != nil {
		t.Fatal(err)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": Kubeconfig()}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(t.TempDir(), filepath.Base(shipped))
	if err := os.WriteFile(configPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return configPath
}
