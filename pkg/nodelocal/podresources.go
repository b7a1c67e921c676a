package nodelocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// PodResourcesSocket is the kubelet's PodResources API socket, relative to its root dir
// (pkg/kubelet/apis/podresources: podresources.Socket in the kubelet's own layout).
const PodResourcesSocket = "pod-resources/kubelet.sock"

// PodResourcesTimeout bounds the whole read, both calls: the kubelet answers from memory in
// milliseconds; one that does not within this is wedged, and the read goes on without it.
const PodResourcesTimeout = 5 * time.Second

// ReadPodResources asks the kubelet's PodResources API (v1) on socket for its allocatable
// devices (GetAllocatableResources), then which container holds which (List). It never fails
// the caller's read: what kept it from answering is in the result's Error.
//
// One connection, two calls, no retry: the calls are fail-fast (a socket nobody listens on is
// an error at once, not a wait for the kubelet to come back), gRPC's own retries are off, and
// the answer is capped at machine.MaxPodResourcesBytes, the dump's own cap.
func ReadPodResources(ctx context.Context, socket string, timeout time.Duration) *machine.PodResources {
	pr, err := readPodResources(ctx, socket, timeout)
	if err != nil {
		return &machine.PodResources{Error: err.Error()}
	}
	return pr
}

func readPodResources(ctx context.Context, socket string, timeout time.Duration) (*machine.PodResources, error) {
	fi, err := os.Stat(socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no PodResources socket (%s): the kubelet serves none, or it runs with another --root-dir", PodResourcesSocket)
	case err != nil:
		return nil, fmt.Errorf("PodResources socket: %w", err)
	case fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("%s is not a socket (%s)", PodResourcesSocket, fi.Mode().Type())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The dialer keeps its own error: gRPC folds it into an Unavailable status's text, and
	// "permission denied" or "connection refused" (a stale socket: the kubelet is down) is
	// the reason to give.
	var dialMu sync.Mutex
	var dialErr error
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
		dialMu.Lock()
		dialErr = err
		dialMu.Unlock()
		return c, err
	}
	conn, err := grpc.NewClient("passthrough:///"+PodResourcesSocket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(machine.MaxPodResourcesBytes)))
	if err != nil {
		return nil, fmt.Errorf("PodResources client: %w", err)
	}
	defer conn.Close()
	client := podresourcesv1.NewPodResourcesListerClient(conn)
	explain := func(call string, err error) error {
		dialMu.Lock()
		derr := dialErr
		dialMu.Unlock()
		return podResourcesError(call, err, derr, timeout)
	}

	alloc, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil, explain("GetAllocatableResources", err)
	}
	list, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, explain("List", err)
	}
	return podResourcesOf(alloc, list), nil
}

// podResourcesError names why call failed, for a person reading why a pod was not judged.
func podResourcesError(call string, err, dialErr error, timeout time.Duration) error {
	if dialErr != nil {
		switch {
		case errors.Is(dialErr, syscall.ECONNREFUSED):
			return fmt.Errorf("nothing listens on %s (a socket left by a kubelet that is not running)", PodResourcesSocket)
		case errors.Is(dialErr, fs.ErrPermission):
			return fmt.Errorf("%s: permission denied (a security module refusing the debug pod?)", PodResourcesSocket)
		}
		return fmt.Errorf("%s: %w", PodResourcesSocket, dialErr)
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unimplemented:
		// GetAllocatableResources came in 1.21 (GA in 1.28); a kubelet whose gate turns it off
		// answers Unknown with "disabled", named below.
		return fmt.Errorf("the kubelet does not implement PodResources %s: %s", call, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("PodResources %s: no answer within %s", call, timeout)
	case codes.ResourceExhausted:
		// gRPC's own receive cap, or the kubelet's rate limit: the message says which.
		return fmt.Errorf("PodResources %s: %s (the answer is capped at %d bytes)", call, st.Message(), machine.MaxPodResourcesBytes)
	}
	return fmt.Errorf("PodResources %s: %s: %s", call, st.Code(), st.Message())
}

// podResourcesOf converts the API's answers. Each ContainerDevices stays one group, as sent: the
// kubelet lists a device once per NUMA node its plugin reported (so a device on two nodes is in
// two groups), and leaves out a device whose Topology has zero nodes; a group's NUMA IDs are kept
// as sent, -1 (AMD's plugin's "no node") included.
func podResourcesOf(alloc *podresourcesv1.AllocatableResourcesResponse, list *podresourcesv1.ListPodResourcesResponse) *machine.PodResources {
	pr := &machine.PodResources{Allocatable: devicesOf(alloc.GetDevices()), Pods: []machine.PodResourcesPod{}}
	for _, p := range list.GetPodResources() {
		pod := machine.PodResourcesPod{Namespace: p.GetNamespace(), Name: p.GetName(), Containers: []machine.PodResourcesContainer{}}
		for _, c := range p.GetContainers() {
			pod.Containers = append(pod.Containers, machine.PodResourcesContainer{Name: c.GetName(), Devices: devicesOf(c.GetDevices())})
		}
		pr.Pods = append(pr.Pods, pod)
	}
	return pr
}

// devicesOf converts device groups; a group with no resource or no ID (which the kubelet never
// sends) is dropped rather than failing the read, as the parser would refuse it. NUMANodes is
// nil for a nil Topology and for one with zero nodes alike: the device manager's hints treat
// both as "no topology" (topology_hints.go: Topology != nil && len(Nodes) > 0).
func devicesOf(groups []*podresourcesv1.ContainerDevices) []machine.PodResourcesDevices {
	out := []machine.PodResourcesDevices{}
	for _, g := range groups {
		ids := make([]string, 0, len(g.GetDeviceIds()))
		for _, id := range g.GetDeviceIds() {
			if id != "" {
				ids = append(ids, id)
			}
		}
		if g.GetResourceName() == "" || len(ids) == 0 {
			continue
		}
		d := machine.PodResourcesDevices{Resource: g.GetResourceName(), IDs: ids}
		for _, n := range g.GetTopology().GetNodes() {
			d.NUMANodes = append(d.NUMANodes, n.GetID())
		}
		out = append(out, d)
	}
	return out
}

// PodResourcesSection prints machine.ParsePodResources's section for a read: one JSON line
// between the header and the end. A read whose document would pass the dump's cap (JSON
// spells an ID out longer than protobuf) prints that error instead, never a cut document.
func PodResourcesSection(pr *machine.PodResources) []byte {
	doc, err := json.Marshal(pr)
	if err == nil && len(doc)+len(machine.PodResourcesHeader)+len(machine.PodResourcesEnd)+3 > machine.MaxPodResourcesBytes {
		err = fmt.Errorf("the answer is %d bytes as JSON, over the dump's %d-byte cap", len(doc), machine.MaxPodResourcesBytes)
	}
	if err != nil {
		doc, _ = json.Marshal(&machine.PodResources{Error: err.Error()})
	}
	var b bytes.Buffer
	b.WriteString(machine.PodResourcesHeader + "\n")
	b.Write(doc)
	b.WriteString("\n" + machine.PodResourcesEnd + "\n")
	return b.Bytes()
}

// podResourcesSocketIn is the socket of the kubelet whose root dir is rootDir.
func podResourcesSocketIn(rootDir string) string {
	return filepath.Join(rootDir, filepath.FromSlash(PodResourcesSocket))
}
