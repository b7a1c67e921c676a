package nodestate

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// A live read with NodeFiles: the debug pod mounts the CDI dirs read-only, its one exec prints
// the sockets and CDI sections (here: the real scripts run on the recorded node), the node's
// extended resources come from its status and the prepared claims from the API. Written as a
// bundle (the sections raw, node.json with the resources) and read back offline, the node's
// facts are the same, but for the claims, which offline reads skip and name.
func TestNodeFilesLiveAndBundle(t *testing.T) {
	node := recordedNode(t)
	root := filepath.Join(node, "kubelet")
	section := func(script string) []byte {
		out, err := exec.Command("sh", "-c", script).Output()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	hereDirs := []nodefs.CDIDir{{Node: "/etc/cdi", Here: filepath.Join(node, "host/etc/cdi")}, {Node: "/var/run/cdi", Here: filepath.Join(node, "host/var/run/cdi")}}
	cmd := exec.Command("sh", "-c", nodefs.SocketsScript)
	cmd.Dir = root
	sockets, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	stderr := string(sockets) + string(section(nodefs.CDIScript(hereDirs)))
	dra, err := os.ReadFile(filepath.Join(root, "dra_manager_state"))
	if err != nil {
		t.Fatal(err)
	}

	client := claimsClient(&resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu-and-nic", UID: "1c2d3e4f-5061-4728-93a4-b5c6d7e8f90a"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}})
	if err := client.Tracker().Add(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: corev1.NodeStatus{
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), "cpu": resource.MustParse("8")},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")},
		},
	}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod = a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
	var command string
	execFn := func(_ context.Context, _, _, _ string, cmd []string, stdout, stderrW io.Writer) error {
		command = cmd[2]
		_, _ = io.WriteString(stderrW, stderr+fetch.CollectEnd)
		tw := tar.NewWriter(stdout)
		if err := tw.WriteHeader(&tar.Header{Name: "./dra_manager_state", Mode: 0o600, Size: int64(len(dra)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(dra); err != nil {
			return err
		}
		return tw.Close()
	}
	res, err := runAll(t, Config{Nodes: []string{"a"}, Client: client, RESTConfig: &rest.Config{}, Exec: execFn, NodeFiles: true})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v %v", res, err)
	}
	live := res[0]
	if !strings.Contains(command, nodefs.SocketsHeader) || !strings.Contains(command, "/host/var/run/cdi/*.yaml") {
		t.Errorf("command %q", command)
	}
	var mounts []string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.ReadOnly {
			mounts = append(mounts, m.MountPath)
		}
	}
	if want := []string{"/kubelet", "/host/etc/cdi", "/host/var/run/cdi"}; !reflect.DeepEqual(mounts, want) {
		t.Errorf("read-only mounts %q, want %q", mounts, want)
	}
	facts := live.NodeFacts()
	want := &doctor.NodeFacts{
		Capacity: map[string]int64{"nvidia.com/gpu": 4}, Allocatable: map[string]int64{"nvidia.com/gpu": 3},
		Sockets: []string{"gpu.example.com.sock", "kubelet.sock"},
		CDIDevices: map[string]string{"gpu.example.com/gpu=gpu-0": "/var/run/cdi/gpu.example.com-gpu.yaml",
			"gpu.example.com/gpu=gpu-1": "/var/run/cdi/gpu.example.com-gpu.yaml", "net.example.com/nic=vf-3": "/etc/cdi/net.example.com-nic.json"},
		Claims: map[string]doctor.ClaimStatus{"ml/gpu-and-nic": {UID: "1c2d3e4f-5061-4728-93a4-b5c6d7e8f90a", Allocated: true}},
	}
	if !reflect.DeepEqual(facts, want) {
		t.Fatalf("live facts\n%+v\nwant\n%+v", facts, want)
	}

	// The bundle collect writes, read back.
	dir := t.TempDir()
	if err := WriteDumps(dir, live.Snapshot); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(NodeInfo{Schema: NodeInfoSchema, Node: "a", KubeletVersion: "v1.37.1", Devices: live.Snapshot.Devices})
	if err := os.WriteFile(filepath.Join(dir, NodeInfoFile), info, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dra_manager_state"), dra, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = runAll(t, Config{FromDir: dir, NodeFiles: true})
	if err != nil || len(res) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	offline := res[0].NodeFacts()
	want.Claims, want.ClaimsSkipped = nil, offlineClaims
	if !reflect.DeepEqual(offline, want) {
		t.Errorf("bundle facts\n%+v\nwant\n%+v", offline, want)
	}
}
