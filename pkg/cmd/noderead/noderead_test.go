package noderead

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodelocal"
)

// kubelet is a PodResources server with one GPU.
type kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
}

func (kubelet) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	return &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu",
		DeviceIds: []string{"GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9"}, Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: 0}}}}}}, nil
}

func (kubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{}, nil
}

// node is a kubelet root dir as the debug pod mounts it, with what the collect script skips:
// a directory, a FIFO (which must not block the read), a file behind a symlinked directory
// that leads out of the root, a plugin socket, and the PodResources socket served.
func node(t *testing.T) (root, outside string) {
	t.Helper()
	root, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	outside = t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu_manager_state", `{"policyName":"static","defaultCpuSet":"0-3","checksum":1}`)
	write("device-plugins/kubelet_internal_checkpoint", `{"Data":{},"Checksum":2}`)
	write("dra_manager_state", "")
	os.MkdirAll(filepath.Join(root, "memory_manager_state"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(root, "pod_fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("outside the kubelet root"), 0o600)
	os.Symlink(outside, filepath.Join(root, "escape"))
	for _, s := range []string{"device-plugins/gpu.sock", nodelocal.PodResourcesSocket} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, s)), 0o755)
		l, err := net.Listen("unix", filepath.Join(root, s))
		if err != nil {
			t.Fatal(err)
		}
		if s == nodelocal.PodResourcesSocket {
			srv := grpc.NewServer()
			podresourcesv1.RegisterPodResourcesListerServer(srv, kubelet{})
			go srv.Serve(l)
			t.Cleanup(srv.Stop)
		} else {
			t.Cleanup(func() { l.Close() })
		}
	}
	return root, outside
}

var paths = []string{"cpu_manager_state", "device-plugins/kubelet_internal_checkpoint", "dra_manager_state",
	"memory_manager_state", "pod_fifo", "escape/secret", "absent"}

// fetcher reads node n1 of a fake cluster whose pods run at once, through exec.
func fetcher(reader string, dumps []fetch.StderrDump, exec fetch.ExecFunc) *fetch.Fetcher {
	c := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux"}}})
	c.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
	return &fetch.Fetcher{Client: c, Exec: exec, Paths: paths, Dumps: dumps,
		Options: fetch.Options{Reader: reader, Image: "example.com/kubectl-nodestate:test", ExecTimeout: 20 * time.Second}}
}

// binaryExec runs the exec's command as the plugin's binary would: the root command's
// node-read, in root (the pod's working directory, given as a flag: a test cannot chdir).
func binaryExec(t *testing.T, root string, got *[]string) fetch.ExecFunc {
	return func(ctx context.Context, _, _, _ string, command []string, stdout, stderr io.Writer) error {
		*got = command
		if len(command) < 2 || command[0] != fetch.ReaderPath || command[1] != fetch.NodeReadVerb {
			return errors.New("not the node reader: " + strings.Join(command, " "))
		}
		cmd := NewCmdNodeRead(genericiooptions.IOStreams{Out: stdout, ErrOut: stderr})
		cmd.SetArgs(append([]string{"--kubelet-root-dir=" + root}, command[2:]...))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		return cmd.ExecuteContext(ctx)
	}
}

// shellExec runs the collect script with sh in root, as busybox runs it in the pod.
func shellExec(root string) fetch.ExecFunc {
	return func(ctx context.Context, _, _, _ string, command []string, stdout, stderr io.Writer) error {
		c := exec.CommandContext(ctx, command[0], command[1:]...)
		c.Dir, c.Stdout, c.Stderr = root, stdout, stderr
		return c.Run()
	}
}

// The node reader's answer goes through the client's very read (fetch: the tar reader, the
// sections split off stderr, the end marker) and gives the snapshot the collect script gives
// for the same node, plus the PodResources section the script cannot print. What leads out of
// the kubelet root is not read, and the FIFO does not block the read.
func TestNodeReadIsTheScripts(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar here for the script")
	}
	root, _ := node(t)
	cdi := t.TempDir()
	os.WriteFile(filepath.Join(cdi, "gpu.yaml"), []byte("cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices:\n- name: gpu0\n"), 0o644)
	dumps := []fetch.StderrDump{
		{Header: nodefs.SocketsHeader, End: nodefs.End, Script: nodefs.SocketsScript, ReaderSection: nodelocal.SectionSockets, Max: nodefs.MaxSocketsBytes},
		{Header: nodefs.CDIHeader, End: nodefs.End, Script: nodefs.CDIScript([]nodefs.CDIDir{{Node: cdi, Here: cdi}}),
			ReaderSection: nodelocal.SectionArg(nodelocal.SectionCDI, cdi), Max: nodefs.MaxCDIBytes},
		{Header: machine.PodResourcesHeader, End: machine.PodResourcesEnd, ReaderSection: nodelocal.SectionPodResources, Max: machine.MaxPodResourcesBytes},
	}

	var command []string
	start := time.Now()
	got, err := fetcher(fetch.ReaderBinary, dumps, binaryExec(t, root, &command)).Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("binary reader's fetch in %s: %q", time.Since(start), command)
	want, err := fetcher(fetch.ReaderShell, dumps, shellExec(root)).Fetch(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}

	// The one difference, on purpose: the script follows a symlinked directory out of the
	// kubelet root (into the container's own filesystem, or another mount); the reader does not.
	if string(want.Files["escape/secret"]) != "outside the kubelet root" {
		t.Errorf("the script did not read through the symlink: %q", want.Files)
	}
	delete(want.Files, "escape/secret")
	want.Missing = append(want.Missing[:len(want.Missing)-1], "escape/secret", "absent")
	if !reflect.DeepEqual(got.Files, want.Files) || !slices.Equal(got.Missing, want.Missing) {
		t.Errorf("files %q missing %q; the script's: files %q missing %q", got.Files, got.Missing, want.Files, want.Missing)
	}
	if len(got.Files) != 3 {
		t.Errorf("read %d files, want the 3 regular ones", len(got.Files))
	}
	for _, h := range []string{nodefs.SocketsHeader, nodefs.CDIHeader} {
		if !bytes.Equal(got.Dumps[h], want.Dumps[h]) {
			t.Errorf("%s:\ngot  %q\nwant %q", h, got.Dumps[h], want.Dumps[h])
		}
	}
	if _, ok := want.Dumps[machine.PodResourcesHeader]; ok {
		t.Error("the shell printed a PodResources section")
	}
	pr, err := machine.ParsePodResources(got.Dumps[machine.PodResourcesHeader])
	if err != nil || pr.Error != "" || len(pr.Allocatable) != 1 || pr.Allocatable[0].IDs[0] != "GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9" {
		t.Errorf("PodResources %+v, %v", pr, err)
	}
	if len(got.Warnings) != 1 || !strings.HasPrefix(got.Warnings[0], "kubectl-nodestate: escape/secret: ") || !strings.Contains(got.Warnings[0], "path escapes") {
		t.Errorf("warnings %q: want the path that leads out named", got.Warnings)
	}
}

// A requested file that is a symlink is refused by the client as the script's tar is (tar
// archives the link); a read that never ends its stream is refused as cut.
func TestNodeReadRefusedAsTheScripts(t *testing.T) {
	root, _ := node(t)
	os.Symlink("cpu_manager_state", filepath.Join(root, "absent"))
	var command []string
	_, err := fetcher(fetch.ReaderBinary, nil, binaryExec(t, root, &command)).Fetch(context.Background(), "n1")
	if fetch.ReasonOf(err) != fetch.ReasonBadArchive || !strings.Contains(err.Error(), "is a link") {
		t.Errorf("a symlink: %v", err)
	}
	if _, err := exec.LookPath("tar"); err == nil {
		_, serr := fetcher(fetch.ReaderShell, nil, shellExec(root)).Fetch(context.Background(), "n1")
		if fetch.ReasonOf(serr) != fetch.ReasonBadArchive {
			t.Errorf("the script's answer for a symlink: %v", serr)
		}
	}

	cut := func(ctx context.Context, ns, pod, c string, command []string, stdout, stderr io.Writer) error {
		var errBuf bytes.Buffer
		err := binaryExec(t, root, &command)(ctx, ns, pod, c, command, stdout, &errBuf)
		io.WriteString(stderr, strings.TrimSuffix(errBuf.String(), fetch.CollectEnd))
		return err
	}
	os.Remove(filepath.Join(root, "absent"))
	if _, err := fetcher(fetch.ReaderBinary, nil, cut).Fetch(context.Background(), "n1"); err == nil || !strings.Contains(err.Error(), "ended early") {
		t.Errorf("without the end marker: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--section=bogus"}, `unknown section "bogus"`},
		{[]string{"--section=cdi"}, "needs its dirs"},
		{[]string{"--section=cgroups=a"}, "is not absolute"},
		{[]string{"--section=sysfs=/x"}, "takes no dirs"},
		{[]string{"--", "/etc/shadow"}, "not a clean path relative"},
		{[]string{"--", "../x"}, "not a clean path relative"},
		{[]string{"--sleep=5", "--", "x"}, "--sleep reads nothing"},
	} {
		var out, errOut bytes.Buffer
		cmd := NewCmdNodeRead(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() > 0 || errOut.Len() > 0 {
			t.Errorf("%q: %v (wrote %d+%d bytes); want %q before anything is written", tc.args, err, out.Len(), errOut.Len(), tc.want)
		}
	}
}

// The pod's command waits, and ends at once when cancelled (SIGTERM on the pod's deletion).
func TestSleepEndsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewCmdNodeRead(genericiooptions.IOStreams{Out: io.Discard, ErrOut: io.Discard})
	cmd.SetArgs(fetch.NodeReadPodCommand(3600)[2:])
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("returned before cancelled: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still sleeping after cancel")
	}
}
