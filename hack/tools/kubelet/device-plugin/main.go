// device-plugin is a tiny device plugin for make e2e-node: it speaks the kubelet's device
// plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) over its own socket in the
// kubelet's device-plugins dir, registers a resource of N healthy fake devices, answers
// Allocate with an environment variable per device, and on SIGTERM stops serving and removes
// its socket, as a real plugin's pod does when it is deleted.
//
//	device-plugin -resource example.com/widget -devices 2 -socket widget.sock [-dir /var/lib/kubelet/device-plugins]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
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
	flag.Parse()

	p := &plugin{stop: make(chan struct{})}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{ID: fmt.Sprintf("widget-%d", i), Health: pluginapi.Healthy})
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
