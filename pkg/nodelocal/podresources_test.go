package nodelocal

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// fakeKubelet is a PodResources v1 server as the kubelet serves it: nil answers are
// Unimplemented, block makes a call wait until the client gives up.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	alloc *podresourcesv1.AllocatableResourcesResponse
	list  *podresourcesv1.ListPodResourcesResponse
	block bool
	calls chan string
}

func (k *fakeKubelet) GetAllocatableResources(ctx context.Context, r *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	k.calls <- "GetAllocatableResources"
	if k.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if k.alloc == nil {
		return k.UnimplementedPodResourcesListerServer.GetAllocatableResources(ctx, r)
	}
	return k.alloc, nil
}

func (k *fakeKubelet) List(ctx context.Context, r *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.calls <- "List"
	if k.list == nil {
		return k.UnimplementedPodResourcesListerServer.List(ctx, r)
	}
	return k.list, nil
}

// serveKubelet serves k on the PodResources socket of a fresh kubelet root dir (a unix socket
// in a temp dir, as on the node) and returns the root dir.
func serveKubelet(t *testing.T, k *fakeKubelet) string {
	t.Helper()
	root := shortTempDir(t)
	sock := podResourcesSocketIn(root)
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if k.calls == nil {
		k.calls = make(chan string, 16)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return root
}

// shortTempDir is a temp dir whose socket paths fit in sun_path's 108 bytes, whatever the
// test's name.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func topo(ids ...int64) *podresourcesv1.TopologyInfo {
	t := &podresourcesv1.TopologyInfo{}
	for _, id := range ids {
		t.Nodes = append(t.Nodes, &podresourcesv1.NUMANode{ID: id})
	}
	return t
}

// The devices as real plugins register them, through the kubelet's grpc answer: UUIDs with a
// node and without a topology, a device the kubelet lists once per node, AMD's {ID: -1}, a
// zero-node Topology (read as none, as the device manager reads it), and who holds which.
func TestReadPodResources(t *testing.T) {
	k := &fakeKubelet{
		alloc: &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, Topology: topo(1)},
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001"}},
			{ResourceName: "example.com/wide", DeviceIds: []string{"w0"}, Topology: topo(0)},
			{ResourceName: "example.com/wide", DeviceIds: []string{"w0"}, Topology: topo(1)},
			{ResourceName: "amd.com/gpu", DeviceIds: []string{"amdgpu_xcp_0"}, Topology: topo(-1)},
			{ResourceName: "intel.com/sgx", DeviceIds: []string{"sgx0"}, Topology: topo()},
		}},
		list: &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
			{Namespace: "ml", Name: "train-0", Containers: []*podresourcesv1.ContainerResources{
				{Name: "main", CpuIds: []int64{2, 3}, Devices: []*podresourcesv1.ContainerDevices{
					{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, Topology: topo(1)}}},
				{Name: "sidecar"},
			}},
			{Namespace: "kube-system", Name: "no-devices"},
		}},
	}
	root := serveKubelet(t, k)
	start := time.Now()
	got := ReadPodResources(context.Background(), podResourcesSocketIn(root), PodResourcesTimeout)
	t.Logf("read in %s", time.Since(start))
	want := &machine.PodResources{
		Allocatable: []machine.PodResourcesDevices{
			{Resource: "nvidia.com/gpu", IDs: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, NUMANodes: []int64{1}},
			{Resource: "nvidia.com/gpu", IDs: []string{"GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001"}},
			{Resource: "example.com/wide", IDs: []string{"w0"}, NUMANodes: []int64{0}},
			{Resource: "example.com/wide", IDs: []string{"w0"}, NUMANodes: []int64{1}},
			{Resource: "amd.com/gpu", IDs: []string{"amdgpu_xcp_0"}, NUMANodes: []int64{-1}},
			{Resource: "intel.com/sgx", IDs: []string{"sgx0"}},
		},
		Pods: []machine.PodResourcesPod{
			{Namespace: "ml", Name: "train-0", Containers: []machine.PodResourcesContainer{
				{Name: "main", Devices: []machine.PodResourcesDevices{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, NUMANodes: []int64{1}}}},
				{Name: "sidecar", Devices: []machine.PodResourcesDevices{}},
			}},
			{Namespace: "kube-system", Name: "no-devices", Containers: []machine.PodResourcesContainer{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("read (-want +got):\n%s", diff)
	}
	// The section the node reader prints is what the client's parser reads back.
	back, err := machine.ParsePodResources(PodResourcesSection(got))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back, cmp.Comparer(func(a, b []machine.PodResourcesDevices) bool {
		return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b)
	})); diff != "" {
		t.Errorf("section parsed back (-want +got):\n%s", diff)
	}
}

// Every way the API cannot be read is an Error naming why, in bounded time, after at most one
// call of each kind: never a failed read, never a retry storm.
func TestReadPodResourcesCannot(t *testing.T) {
	big := &podresourcesv1.AllocatableResourcesResponse{}
	for i := range machine.MaxPodResourcesBytes / 64 {
		big.Devices = append(big.Devices, &podresourcesv1.ContainerDevices{ResourceName: "example.com/dev",
			DeviceIds: []string{strings.Repeat("x", 60) + string(rune('a'+i%26))}})
	}
	ok := &podresourcesv1.AllocatableResourcesResponse{}
	for _, tc := range []struct {
		name  string
		k     *fakeKubelet
		root  func(t *testing.T) string // instead of serving k
		want  string
		calls []string
	}{
		{name: "GetAllocatableResources unimplemented (before 1.21)", k: &fakeKubelet{list: &podresourcesv1.ListPodResourcesResponse{}},
			want: "does not implement PodResources GetAllocatableResources", calls: []string{"GetAllocatableResources"}},
		{name: "List unimplemented", k: &fakeKubelet{alloc: ok},
			want: "does not implement PodResources List", calls: []string{"GetAllocatableResources", "List"}},
		{name: "never answers", k: &fakeKubelet{block: true},
			want: "GetAllocatableResources: no answer within 300ms", calls: []string{"GetAllocatableResources"}},
		{name: "oversize answer", k: &fakeKubelet{alloc: big},
			want: "larger than max", calls: []string{"GetAllocatableResources"}},
		{name: "no socket", root: func(t *testing.T) string { return t.TempDir() },
			want: "no PodResources socket"},
		{name: "not a socket", root: func(t *testing.T) string {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "pod-resources"), 0o755)
			os.WriteFile(podResourcesSocketIn(root), nil, 0o600)
			return root
		}, want: "is not a socket"},
		{name: "stale socket (kubelet down)", root: func(t *testing.T) string {
			root := shortTempDir(t)
			os.MkdirAll(filepath.Join(root, "pod-resources"), 0o755)
			l, err := net.Listen("unix", podResourcesSocketIn(root))
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
			return root
		}, want: "nothing listens on pod-resources/kubelet.sock"},
		{name: "a listener that never speaks gRPC", root: func(t *testing.T) string {
			root := shortTempDir(t)
			os.MkdirAll(filepath.Join(root, "pod-resources"), 0o755)
			l, err := net.Listen("unix", podResourcesSocketIn(root))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
			return root
		}, want: "no answer within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root string
			if tc.root != nil {
				root = tc.root(t)
			} else {
				root = serveKubelet(t, tc.k)
			}
			start := time.Now()
			got := ReadPodResources(context.Background(), podResourcesSocketIn(root), 300*time.Millisecond)
			took := time.Since(start)
			if !strings.Contains(got.Error, tc.want) || got.Allocatable != nil || got.Pods != nil {
				t.Errorf("got %+v, want only an error with %q", got, tc.want)
			}
			if took > 2*time.Second {
				t.Errorf("took %s, past its 300ms timeout", took)
			}
			if tc.k != nil {
				close(tc.k.calls)
				var calls []string
				for c := range tc.k.calls {
					calls = append(calls, c)
				}
				if diff := cmp.Diff(tc.calls, calls); diff != "" {
					t.Errorf("calls (-want +got):\n%s", diff)
				}
			}
			// An error is a section too, and parses back as one.
			back, err := machine.ParsePodResources(PodResourcesSection(got))
			if err != nil || back.Error != got.Error {
				t.Errorf("section parsed back: %+v, %v", back, err)
			}
		})
	}
}

// A read the dump's cap cannot hold as JSON (under gRPC's cap as protobuf) prints an error,
// never a document the parser refuses.
func TestPodResourcesSectionOverCap(t *testing.T) {
	pr := &machine.PodResources{Pods: []machine.PodResourcesPod{}}
	for range machine.MaxPodResourcesBytes / 30 {
		pr.Allocatable = append(pr.Allocatable, machine.PodResourcesDevices{Resource: "r", IDs: []string{"0123456789"}})
	}
	got, err := machine.ParsePodResources(PodResourcesSection(pr))
	if err != nil || !strings.Contains(got.Error, "over the dump's") {
		t.Fatalf("got %+v, %v", got, err)
	}
}
