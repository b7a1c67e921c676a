// device-plugin is a tiny device plugin for make e2e-node: it speaks the kubelet's device
// plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) over its own socket in the
// kubelet's device-plugins dir, registers a resource of N healthy fake devices, answers
// Allocate with an environment variable per device, and on SIGTERM stops serving and removes
// its socket, as a real plugin's pod does when it is deleted. -ids names the devices and their
// NUMA nodes (the device plugin API's TopologyInfo) in the shapes real plugins send: ID (no
// Topology: the NVIDIA and GKE plugins for numa_node -1, SR-IOV's excludeTopology pools), ID@N
// (one node; ID@-1 is the AMD plugin's explicit {ID: -1}) and ID@ (a Topology with zero nodes,
// as Intel's plugins can send). -pod-resources lists, through the kubelet's PodResources API
// (List), the devices each container was given, as JSON, and exits; -allocatable with it lists
// GetAllocatableResources instead: each device's NUMA nodes as the kubelet reports them.
// -unhealthy sends the devices it names as Unhealthy (a GPU that fell off the bus).
//
//	device-plugin -resource example.com/widget -devices 2 -socket widget.sock [-dir /var/lib/kubelet/device-plugins]
//	device-plugin -resource example.com/accel -ids accel-0@0,accel-1@0,accel-2,accel-3@-1,accel-4@ -socket accel.sock
//	device-plugin -pod-resources /var/lib/kubelet/pod-resources/kubelet.sock [-allocatable]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
	stop    chan struct{}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once and keeps the stream open until the plugin stops: the
// kubelet takes a closed stream for a plugin that left.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-p.stop:
	case <-s.Context().Done():
	}
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"WIDGETS": strings.Join(c.DevicesIds, ",")}})
	}
	return resp, nil
}

func main() {
	resource := flag.String("resource", "example.com/widget", "the extended resource to register")
	count := flag.Int("devices", 2, "how many healthy devices")
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device-plugins dir")
	socket := flag.String("socket", "widget.sock", "this plugin's socket name in -dir")
	ids := flag.String("ids", "", "the devices, comma-separated, each ID (no topology), ID@NUMA (its NUMA node, -1 too) or ID@ (a topology of zero nodes); overrides -devices")
	podResources := flag.String("pod-resources", "", "list the containers' devices through this PodResources socket, as JSON, and exit")
	allocatable := flag.Bool("allocatable", false, "with -pod-resources: list GetAllocatableResources (resource -> ID -> NUMA nodes, null for none) instead")
	unhealthy := flag.String("unhealthy", "", "device IDs, comma-separated, sent as Unhealthy")
	flag.Parse()

	if *podResources != "" {
		list := listPodResources
		if *allocatable {
			list = listAllocatable
		}
		if err := printPodResources(*podResources, list); err != nil {
			log.Fatal(err)
		}
		return
	}
	p := &plugin{stop: make(chan struct{})}
	for i := 0; i < *count && *ids == ""; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("widget-%d", i), Health: pluginapi.Healthy})
	}
	if *ids != "" {
		devices, err := parseIDs(*ids)
		if err != nil {
			log.Fatal(err)
		}
		p.devices, *count = devices, len(devices)
	}
	for _, id := range strings.Split(*unhealthy, ",") {
		found := false
		for _, d := range p.devices {
			if d.ID == id {
				d.Health, found = pluginapi.Unhealthy, true
			}
		}
		if id != "" && !found {
			log.Fatalf("-unhealthy: no device %q", id)
		}
	}
	path := filepath.Join(*dir, *socket)
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()

	conn, err := grpc.NewClient("unix://"+filepath.Join(*dir, filepath.Base(pluginapi.KubeletSocket)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: *socket, ResourceName: *resource})
	cancel()
	conn.Close()
	if err != nil {
		srv.Stop()
		_ = os.Remove(path)
		log.Fatalf("register with the kubelet: %v", err)
	}
	log.Printf("registered %s (%d devices) at %s", *resource, *count, path)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	close(p.stop)
	srv.Stop()
	_ = os.Remove(path)
	log.Printf("stopped; removed %s", path)
}

// parseIDs reads -ids: ID, ID@NUMA or ID@, comma-separated.
func parseIDs(list string) ([]*pluginapi.Device, error) {
	var out []*pluginapi.Device
	for _, item := range strings.Split(list, ",") {
		id, numa, hasNUMA := strings.Cut(item, "@")
		d := &pluginapi.Device{ID: id, Health: pluginapi.Healthy}
		switch {
		case id == "":
			return nil, fmt.Errorf("-ids %q: an empty device ID", item)
		case hasNUMA && numa == "":
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{}}
		case hasNUMA:
			n, err := strconv.ParseInt(numa, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("-ids %q: NUMA node %q: %v", item, numa, err)
			}
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: n}}}
		}
		out = append(out, d)
	}
	return out, nil
}

// printPodResources asks the kubelet's PodResources socket with ask (10 seconds at most) and
// prints its answer as JSON.
func printPodResources(socket string, ask func(context.Context, podresourcesapi.PodResourcesListerClient) (any, error)) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ask(ctx, podresourcesapi.NewPodResourcesListerClient(conn))
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// listAllocatable is {"resource": {"id": [NUMA nodes] or null}} of every device
// GetAllocatableResources lists: the kubelet lists a device once per NUMA node its plugin sent
// (the nodes are gathered here), with no topology when the plugin sent none, and not at all
// when its Topology had zero nodes.
func listAllocatable(ctx context.Context, client podresourcesapi.PodResourcesListerClient) (any, error) {
	resp, err := client.GetAllocatableResources(ctx, &podresourcesapi.AllocatableResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("PodResources GetAllocatableResources: %w", err)
	}
	out := map[string]map[string][]int64{}
	for _, d := range resp.Devices {
		if out[d.ResourceName] == nil {
			out[d.ResourceName] = map[string][]int64{}
		}
		for _, id := range d.DeviceIds {
			nodes := out[d.ResourceName][id]
			for _, n := range d.GetTopology().GetNodes() {
				nodes = append(nodes, n.GetID())
			}
			out[d.ResourceName][id] = nodes
		}
	}
	return out, nil
}

// listPodResources is {"namespace/pod/container": {"resource": [ids]}} of every container
// holding devices, as the kubelet's PodResources List says.
func listPodResources(ctx context.Context, client podresourcesapi.PodResourcesListerClient) (any, error) {
	resp, err := client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("PodResources List: %w", err)
	}
	out := map[string]map[string][]string{}
	for _, p := range resp.PodResources {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				key := p.Namespace + "/" + p.Name + "/" + c.Name
				if out[key] == nil {
					out[key] = map[string][]string{}
				}
				out[key][d.ResourceName] = append(out[key][d.ResourceName], d.DeviceIds...)
			}
		}
	}
	return out, nil
}
