package nodelocal

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/nodefs"
)

// The Go PCI section is the script's, byte for byte, on this machine's sysfs.
func TestPCISectionIsTheScripts(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no PCI sysfs here")
	}
	want := sh(t, t.TempDir(), machine.PCIScript)
	got := pciSection("/sys")
	if !bytes.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if _, err := machine.ParsePCINUMA(got); err != nil {
		t.Error(err)
	}
}

// The reader's streams: every section on stderr in the order asked, the end marker last, and a
// tar on stdout that the client's tar reader takes; nothing with no file.
func TestNodeReadRun(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cpu_manager_state"), []byte("cpu"), 0o600)
	var out, errOut bytes.Buffer
	r := NodeRead{RootDir: root, SysRoot: "/sys", ProcRoot: "/proc", Sections: []string{SectionPodResources, SectionSockets},
		Files: []string{"cpu_manager_state", "memory_manager_state"}}
	if err := r.Run(context.Background(), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	files, missing, err := fetch.ReadTar(&out, r.Files, fetch.TarLimits{})
	if err != nil || string(files["cpu_manager_state"]) != "cpu" || len(missing) != 1 {
		t.Errorf("tar: %q %q %v", files, missing, err)
	}
	e := errOut.String()
	pr, sock := strings.Index(e, machine.PodResourcesHeader), strings.Index(e, nodefs.SocketsHeader)
	if pr != 0 || sock <= pr || !strings.HasSuffix(e, fetch.CollectEnd) {
		t.Errorf("stderr out of order:\n%s", e)
	}
	if p, err := machine.ParsePodResources([]byte(e)); err != nil || !strings.Contains(p.Error, "no PodResources socket") {
		t.Errorf("PodResources without a kubelet: %+v %v", p, err)
	}

	out.Reset()
	if warnings, err := WriteTar(&out, root, nil); err != nil || out.Len() != 0 || warnings != nil {
		t.Errorf("no file: %d bytes, %q, %v", out.Len(), warnings, err)
	}
}

// A stream that cannot be written (the exec gone) stops the read, without the end marker.
func TestNodeReadStopsOnAGoneStream(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "big"), make([]byte, 1<<20), 0o600)
	var errOut bytes.Buffer
	err := NodeRead{RootDir: root, Files: []string{"big"}}.Run(context.Background(), failingWriter{}, &errOut)
	if err == nil || strings.Contains(errOut.String(), fetch.CollectEnd) {
		t.Errorf("err %v, stderr %q", err, errOut.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// The tar carries the file's mode and time, and a name the client asked for.
func TestWriteTarHeader(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "device-plugins"), 0o755)
	os.WriteFile(filepath.Join(root, "device-plugins", "kubelet_internal_checkpoint"), []byte("dev"), 0o600)
	var out bytes.Buffer
	if _, err := WriteTar(&out, root, []string{"device-plugins/kubelet_internal_checkpoint"}); err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(&out).Next()
	if err != nil || hdr.Name != "device-plugins/kubelet_internal_checkpoint" || hdr.Mode != 0o600 || hdr.Size != 3 || hdr.ModTime.IsZero() {
		t.Errorf("%+v %v", hdr, err)
	}
}
