package nodestate

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch/local"
)

// scriptShells are the POSIX shells the collect script must run in: dash, and busybox sh with
// nothing but busybox applets on PATH (a minimal node, a rescue system).
func scriptShells(t *testing.T) map[string]func(script string) *exec.Cmd {
	t.Helper()
	found := map[string]func(string) *exec.Cmd{}
	if dash, err := exec.LookPath("dash"); err == nil {
		found["dash"] = func(s string) *exec.Cmd { return exec.Command(dash, "-c", s) }
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		bin := t.TempDir()
		for _, applet := range []string{"sh", "tar", "gzip", "grep", "mktemp", "hostname", "sed", "tr", "wc", "cat", "mv", "rm", "mkdir", "uname"} {
			if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
				t.Fatal(err)
			}
		}
		found["busybox"] = func(s string) *exec.Cmd {
			cmd := exec.Command(filepath.Join(bin, "sh"), "-c", s)
			cmd.Env = append(cmd.Env, "PATH="+bin)
			return cmd
		}
	}
	if len(found) == 0 {
		t.Skip("neither dash nor busybox here")
	}
	return found
}

// recordedNode copies testdata/noderoot and adds the device plugin sockets (kubelet.sock and
// a plugin's), which git cannot keep.
func recordedNode(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/noderoot")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "kubelet-version.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kubelet.sock", "gpu.example.com.sock"} {
		l, err := net.Listen("unix", filepath.Join(dir, "kubelet", "device-plugins", s))
		if err != nil {
			t.Skipf("no unix sockets here: %v", err)
		}
		t.Cleanup(func() { l.Close() })
	}
	return dir
}

// The collect script on a recorded node, in each POSIX shell: one tar.gz on stdout, which the
// offline reader takes as it takes collect's bundle: the checkpoint files judged by the
// kubelet version the script asked the binary for, the kubelet config, the machine from the
// sysfs dump, the sockets and the CDI specs; and nothing left behind in TMPDIR.
func TestCollectScript(t *testing.T) {
	node := recordedNode(t)
	script := CollectScript("/nowhere", "test")
	for name, sh := range scriptShells(t) {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := sh(script)
			cmd.Env = append(cmd.Env, "KUBELET_ROOT_DIR="+filepath.Join(node, "kubelet"), "HOST_ROOT="+filepath.Join(node, "host"),
				"KUBELET="+filepath.Join(node, "kubelet-version.sh"), "NODE_NAME=worker-1", "TMPDIR="+tmp)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			if b := stdout.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatalf("stdout is not gzip: %.20q", b)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left in TMPDIR: %v", left)
			}
			bundle := filepath.Join(t.TempDir(), "worker-1.tar.gz")
			if err := os.WriteFile(bundle, stdout.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := runAll(t, Config{FromDir: bundle, NodeFiles: true})
			if err != nil || len(res) != 1 {
				t.Fatalf("%v %v", res, err)
			}
			n := res[0]
			var files []string
			for _, r := range n.Rows {
				files = append(files, r.File())
			}
			want := []string{"cpu_manager_state", "memory_manager_state", "device-plugins/kubelet_internal_checkpoint", "dra_manager_state", "dra_health_state"}
			if !reflect.DeepEqual(files, want) {
				t.Errorf("files %q, want %q", files, want)
			}
			if n.Judged.Basis != BasisRecorded || n.Judged.Kubelet.String() != "v1.37.1" || !strings.Contains(n.Judged.Why, "worker-1") {
				t.Errorf("judged %+v", n.Judged)
			}
			if _, err := os.Stat("/sys/devices/system/cpu/online"); err == nil && (n.Machine == nil || n.MachineErr != nil) {
				t.Errorf("machine %v %v", n.Machine, n.MachineErr)
			}
			if n.Sockets == nil || !reflect.DeepEqual(n.Sockets.Names, []string{"gpu.example.com.sock", "kubelet.sock"}) {
				t.Errorf("sockets %+v %v", n.Sockets, n.SocketsErr)
			}
			if n.CDI == nil || len(n.CDI.Devices) != 3 || n.CDI.Devices["net.example.com/nic=vf-3"] != "/etc/cdi/net.example.com-nic.json" {
				t.Errorf("CDI %+v %v", n.CDI, n.CDIErr)
			}
			// The kubelet config, as collect names it, byte for byte.
			snap, err := local.Read(bundle, []string{ConfigYAMLFile, KubeletConfigFile}, local.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			orig, _ := os.ReadFile(filepath.Join(node, "kubelet", KubeletConfigFile))
			if !bytes.Equal(snap.Files[ConfigYAMLFile], orig) || snap.Files[KubeletConfigFile] != nil {
				t.Errorf("kubelet config in the bundle: %q", snap.Files)
			}
		})
	}
}

// The script reads exactly the debug pod's files: every checkpoint path and config.yaml.
func TestCollectScriptPaths(t *testing.T) {
	script := CollectScript("", "test")
	for _, p := range append(decode.Paths(), KubeletConfigFile) {
		if !strings.Contains(script, "'./"+p+"'") {
			t.Errorf("the script does not read %s", p)
		}
	}
	if !strings.Contains(script, "${KUBELET_ROOT_DIR:-'"+decode.DefaultRootDir+"'}") {
		t.Errorf("no default root dir")
	}
}

// KUBELET_CONFIG names a kubelet config kept outside the root dir (the kubelet's --config).
func TestCollectScriptKubeletConfig(t *testing.T) {
	node := recordedNode(t)
	config := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(config, []byte("kind: KubeletConfiguration\ncpuManagerPolicy: static\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, sh := range scriptShells(t) {
		cmd := sh(CollectScript("", "test"))
		cmd.Env = append(cmd.Env, "KUBELET_ROOT_DIR="+filepath.Join(node, "kubelet"), "KUBELET_CONFIG="+config, "NODE_NAME=w", "TMPDIR="+t.TempDir())
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bundle := filepath.Join(t.TempDir(), "b.tar.gz")
		if err := os.WriteFile(bundle, stdout.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		snap, err := local.Read(bundle, []string{ConfigYAMLFile}, local.DefaultLimits)
		if err != nil || !strings.Contains(string(snap.Files[ConfigYAMLFile]), "cpuManagerPolicy: static") {
			t.Errorf("%s: config %q %v", name, snap.Files[ConfigYAMLFile], err)
		}
	}
}

// A root dir that is not there: a clear message, exit 1, nothing on stdout.
func TestCollectScriptNoRoot(t *testing.T) {
	for name, sh := range scriptShells(t) {
		cmd := sh(CollectScript("/nowhere/kubelet", "test"))
		cmd.Env = append(cmd.Env, "TMPDIR="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "KUBELET_ROOT_DIR") {
			t.Errorf("%s: %v, stdout %d bytes, stderr %q", name, err, stdout.Len(), stderr.String())
		}
	}
}
