package nodelocal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/machine"
)

// The Go NVIDIA section is the script's, byte for byte, on a tree laid out as the driver's
// (two GPUs, a directory without its file, a file of other lines), and on a node without the
// driver; the node reader prints it for its section name.
func TestNVIDIASectionIsTheScripts(t *testing.T) {
	proc := t.TempDir()
	gpus := filepath.Join(proc, "driver", "nvidia", "gpus")
	info := func(uuid, bus, minor string) string {
		return "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t " + uuid + "\nVideo BIOS: \t 96.00.af.00.01\nBus Type: \t PCIe\n" +
			"DMA Size: \t 52 bits\nBus Location: \t " + bus + "\nDevice Minor: \t " + minor + "\nGPU Excluded:\t No\n"
	}
	for addr, text := range map[string]string{
		"0000:19:00.0": info("GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9", "0000:19:00.0", "0"),
		"0000:3b:00.0": info("GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001", "0000:3b:00.0", "1"),
		"0000:5d:00.0": "Model: \t\t NVIDIA H200\n",
	} {
		os.MkdirAll(filepath.Join(gpus, addr), 0o755)
		if err := os.WriteFile(filepath.Join(gpus, addr, "information"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(gpus, "0000:af:00.0"), 0o755)
	script := strings.Replace(machine.NVIDIAScript, machine.NVIDIAGPUsDir, gpus, 1)
	got, want := nvidiaSection(proc), sh(t, t.TempDir(), script)
	if !bytes.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if list, err := machine.ParseNVIDIAGPUs(got); err != nil || len(list) != 2 || list[1].Minor != 1 {
		t.Errorf("parsed %+v %v", list, err)
	}
	var errOut bytes.Buffer
	if err := (NodeRead{RootDir: t.TempDir(), ProcRoot: proc, Sections: []string{SectionNVIDIA}}).Run(t.Context(), &bytes.Buffer{}, &errOut); err != nil ||
		!bytes.HasPrefix(errOut.Bytes(), got) {
		t.Errorf("node reader: %v\n%s", err, errOut.String())
	}

	none := t.TempDir()
	script = strings.Replace(machine.NVIDIAScript, machine.NVIDIAGPUsDir, filepath.Join(none, "driver", "nvidia", "gpus"), 1)
	if got, want := nvidiaSection(none), sh(t, t.TempDir(), script); !bytes.Equal(got, want) {
		t.Errorf("no driver: got %q, want %q", got, want)
	}
}
