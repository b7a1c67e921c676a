// dra-driver is a tiny DRA driver for make e2e-node: a kubelet plugin (through
// k8s.io/dynamic-resource-allocation/kubeletplugin) that prepares each allocated device of its
// driver by writing a CDI spec file for it into -cdi-dir and handing the kubelet the CDI
// device ID, and unprepares by removing the file. It publishes no ResourceSlices: the test
// allocates claims itself (the e2e node runs no scheduler).
//
//	dra-driver -driver NAME -node NODE -kubeconfig FILE -registry DIR -data DIR [-cdi-dir /var/run/cdi]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

type driver struct {
	name, cdiDir string
}

// cdiKind is the CDI kind of the driver's devices: "<driver>/widget".
func (d *driver) cdiKind() string { return d.name + "/widget" }

func (d *driver) specFile(claim types.UID) string {
	return filepath.Join(d.cdiDir, d.name+"-"+string(claim)+".json")
}

func (d *driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		var res kubeletplugin.PrepareResult
		type cdiDevice struct {
			Name           string         `json:"name"`
			ContainerEdits map[string]any `json:"containerEdits"`
		}
		spec := struct {
			Version string      `json:"cdiVersion"`
			Kind    string      `json:"kind"`
			Devices []cdiDevice `json:"devices"`
		}{Version: "0.6.0", Kind: d.cdiKind()}
		if c.Status.Allocation != nil {
			for _, r := range c.Status.Allocation.Devices.Results {
				if r.Driver != d.name {
					continue
				}
				// Unique per claim, as the kubeletplugin docs ask: no stale cache hit.
				name := string(c.UID) + "-" + r.Device
				spec.Devices = append(spec.Devices, cdiDevice{Name: name, ContainerEdits: map[string]any{"env": []string{"WIDGET=" + r.Device}}})
				res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
					CDIDeviceIDs: []string{d.cdiKind() + "=" + name}})
			}
		}
		b, _ := json.Marshal(spec)
		if err := os.WriteFile(d.specFile(c.UID), b, 0o644); err != nil {
			res = kubeletplugin.PrepareResult{Err: err}
		}
		out[c.UID] = res
	}
	return out, nil
}

func (d *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		if err := os.Remove(d.specFile(c.UID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			out[c.UID] = err
		} else {
			out[c.UID] = nil
		}
	}
	return out, nil
}

func (d *driver) HandleError(_ context.Context, err error, msg string) {
	log.Printf("%s: %v", msg, err)
}

func (d *driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func main() {
	name := flag.String("driver", "dra.nodestate-e2e.example.com", "the DRA driver name")
	node := flag.String("node", "", "the node name")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	registry := flag.String("registry", kubeletplugin.KubeletRegistryDir, "the kubelet's plugins_registry dir")
	data := flag.String("data", "", "this plugin's data dir (its socket)")
	cdiDir := flag.String("cdi-dir", "/var/run/cdi", "where to write CDI specs")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	for _, dir := range []string{*data, *cdiDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	helper, err := kubeletplugin.Start(ctx, &driver{name: *name, cdiDir: *cdiDir},
		kubeletplugin.DriverName(*name), kubeletplugin.NodeName(*node), kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(*registry), kubeletplugin.PluginDataDirectoryPath(*data),
		kubeletplugin.HealthService(false))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("DRA driver %s serving on node %s", *name, *node)
	<-ctx.Done()
	helper.Stop()
	log.Printf("stopped")
}
