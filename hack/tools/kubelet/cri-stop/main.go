// Command cri-stop stops and removes every pod sandbox of a CRI runtime, as the kubelet would,
// so make e2e-node (hack/e2e-node/down.sh) leaves no pod running once containerd stops: a
// containerd stopped with pods still up leaves their shims and containers behind. Given a pod
// UID, it removes that pod's sandboxes only (a pod removed while the kubelet is stopped).
//
//	cri-stop unix:///path/to/containerd.sock [POD_UID]
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cri-stop unix:///path/to/runtime.sock [POD_UID]")
		os.Exit(2)
	}
	uid := ""
	if len(os.Args) == 3 {
		uid = os.Args[2]
	}
	if err := run(os.Args[1], uid); err != nil {
		fmt.Fprintln(os.Stderr, "cri-stop:", err)
		os.Exit(1)
	}
}

func run(endpoint, uid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	filter := &runtimeapi.PodSandboxFilter{}
	if uid != "" {
		filter.LabelSelector = map[string]string{"io.kubernetes.pod.uid": uid}
	}
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return err
	}
	if uid != "" && len(list.Items) == 0 {
		return fmt.Errorf("no pod sandbox of pod %s", uid)
	}
	var failed error
	for _, sb := range list.Items {
		name := sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()
		// StopPodSandbox stops the sandbox's containers first; RemovePodSandbox removes them.
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed = fmt.Errorf("stop %s: %w", name, err)
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed = fmt.Errorf("remove %s: %w", name, err)
			continue
		}
		fmt.Printf("stopped and removed pod sandbox %s (%.12s)\n", name, sb.Id)
	}
	return failed
}
