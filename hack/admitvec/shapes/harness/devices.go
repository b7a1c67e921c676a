// The device manager and real device plugins (-devices): the release's devicemanager, made
// after the topology manager and registered as its FIRST hint provider (as
// container_manager_linux.go does), started after the CPU and memory managers; then one real
// gRPC device plugin per resource registers over the kubelet's registration socket and serves
// its devices through ListAndWatch. The sockets live in /var/lib/kubelet/device-plugins, which
// run.sh mounts as a tmpfs in a private mount namespace (refused otherwise).
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/admitvec/common"
)

const tmpfsMagic = 0x01021994

// checkPrivatePluginDir refuses to run the device manager on the host's own plugin directory.
func checkPrivatePluginDir() error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(pluginapi.DevicePluginPath, &st); err != nil {
		return fmt.Errorf("device mode: %s: %v (run through run.sh: a tmpfs in a private mount namespace)", pluginapi.DevicePluginPath, err)
	}
	if st.Type != tmpfsMagic {
		return fmt.Errorf("device mode: %s is not a tmpfs: run through run.sh (a private mount namespace)", pluginapi.DevicePluginPath)
	}
	return nil
}

func (k *kubelet) newDeviceManager(mi *cadvisorMachine) error {
	if err := checkPrivatePluginDir(); err != nil {
		return err
	}
	dm, err := newDeviceManagerImpl(mi, k.tm)
	if err != nil {
		return err
	}
	k.dm = dm
	addHintProvider(k.tm, dm)
	return nil
}

// startDeviceManager is ContainerManager.Start's device manager step: the checkpoint, the
// registration server, with the runtime's container map and running set
// (buildContainerMapAndRunningSetFromRuntime) and the kubelet's sourcesReady.
func (k *kubelet) startDeviceManager(active *common.ActivePods, rt *common.Runtime, cm containermap.ContainerMap) error {
	running := sets.New[string]()
	for id, ok := range rt.Running {
		if ok {
			running.Insert(id)
		}
	}
	return startDevices(k.dm, devicemanager.ActivePodsFunc(active.List), rt.Sources, cm, running)
}

// DropRegistered rewrites the device checkpoint through the release's checkpoint package and
// checkpoint manager (the kubelet's writeCheckpoint), leaving these resources out of its
// registered devices: what the kubelet writes once GetCapacity dropped a plugin gone past
// its grace period (the pods' entries stay).
func (k *kubelet) DropRegistered(path string, resources []string) error {
	cm, err := checkpointmanager.NewCheckpointManager(filepath.Dir(path))
	if err != nil {
		return err
	}
	cp := checkpoint.New(make([]checkpoint.PodDevicesEntry, 0), make(map[string][]string))
	if err := cm.GetCheckpoint(filepath.Base(path), cp); err != nil {
		return err
	}
	entries, registered := deviceCheckpointData(cp)
	for _, r := range resources {
		delete(registered, r)
	}
	return cm.CreateCheckpoint(filepath.Base(path), checkpoint.New(entries, registered))
}

// plugin is one resource's device plugin: its devices, no preferred allocation, and an
// Allocate answering the devices as one environment variable.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource string
	devices  []*pluginapi.Device
	socket   string
	server   *grpc.Server
	stop     chan struct{}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-p.stop
	return nil
}

var notAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

func (p *plugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		ids := append([]string(nil), requestedDeviceIDs(c)...)
		sort.Strings(ids)
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"DEVICES_" + strings.ToUpper(notAlnum.ReplaceAllString(p.resource, "_")): strings.Join(ids, ",")}})
	}
	return out, nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func dialUnix(path string) (*grpc.ClientConn, error) {
	//nolint:staticcheck // grpc.Dial is in every release's grpc; NewClient is not
	return grpc.Dial(path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

// StartPlugins serves and registers one plugin per resource, in resource-name order, then waits
// until the device manager holds every plugin's devices.
func (k *kubelet) StartPlugins(devices map[string][]common.Device) error {
	names := make([]string, 0, len(devices))
	for r := range devices {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		p := &plugin{resource: r, socket: filepath.Join(pluginapi.DevicePluginPath, fmt.Sprintf("plugin-%d.sock", len(k.plugins))), stop: make(chan struct{})}
		for _, d := range devices[r] {
			dev := &pluginapi.Device{ID: d.ID, Health: d.Health}
			if d.Topology != nil {
				dev.Topology = &pluginapi.TopologyInfo{}
				for _, n := range d.Topology.Nodes {
					dev.Topology.Nodes = append(dev.Topology.Nodes, &pluginapi.NUMANode{ID: n.ID})
				}
			}
			p.devices = append(p.devices, dev)
		}
		l, err := net.Listen("unix", p.socket)
		if err != nil {
			return err
		}
		p.server = grpc.NewServer()
		pluginapi.RegisterDevicePluginServer(p.server, p)
		go p.server.Serve(l)
		conn, err := dialUnix(pluginapi.KubeletSocket)
		if err != nil {
			return err
		}
		_, err = pluginapi.NewRegistrationClient(conn).Register(context.Background(), &pluginapi.RegisterRequest{
			Version: pluginapi.Version, Endpoint: filepath.Base(p.socket), ResourceName: r, Options: &pluginapi.DevicePluginOptions{}})
		conn.Close()
		if err != nil {
			return fmt.Errorf("register %s: %v", r, err)
		}
		k.plugins = append(k.plugins, p)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := 0
		capacity, _ := k.DeviceCapacity()
		for _, r := range names {
			if capacity[r] == len(devices[r]) {
				got++
			}
		}
		if got == len(names) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the device manager did not receive every plugin's devices within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StopPlugins stops the plugins of these resources (the kubelet sees them disconnect).
func (k *kubelet) StopPlugins(resources []string) {
	for _, p := range k.plugins {
		for _, r := range resources {
			if p.resource == r {
				close(p.stop)
				p.server.Stop()
				os.Remove(p.socket)
			}
		}
	}
}

func (k *kubelet) DeviceCapacity() (capacity, allocatable map[string]int) {
	c, a, _ := deviceCapacity(k.dm)
	capacity, allocatable = map[string]int{}, map[string]int{}
	for r, q := range c {
		capacity[string(r)] = int(q.Value())
	}
	for r, q := range a {
		allocatable[string(r)] = int(q.Value())
	}
	return capacity, allocatable
}

// ContainerDevices is GetDevices (the PodResources API's view): resource -> sorted IDs.
func (k *kubelet) ContainerDevices(uid, name string) map[string][]string {
	out := map[string][]string{}
	for r, devs := range k.dm.GetDevices(uid, name) {
		for id := range devs {
			out[r] = append(out[r], id)
		}
		sort.Strings(out[r])
	}
	return out
}
