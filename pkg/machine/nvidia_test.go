package machine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// h200Information is /proc/driver/nvidia/gpus/0000:19:00.0/information as driver 580 writes it
// on an H200 (the spacing is the driver's: a tab, a space).
const h200Information = "Model: \t\t NVIDIA H200\n" +
	"IRQ:   \t\t 0\n" +
	"GPU UUID: \t GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9\n" +
	"Video BIOS: \t 96.00.af.00.01\n" +
	"Bus Type: \t PCIe\n" +
	"DMA Size: \t 52 bits\n" +
	"DMA Mask: \t 0xfffffffffffff\n" +
	"Bus Location: \t 0000:19:00.0\n" +
	"Device Minor: \t 0\n" +
	"GPU Firmware: \t 580.65.06\n" +
	"GPU Excluded:\t No\n"

const nvidiaDump = NVIDIAHeader + "\n" +
	"0000:19:00.0/information:GPU UUID: \t GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9\n" +
	"0000:19:00.0/information:Bus Location: \t 0000:19:00.0\n" +
	"0000:19:00.0/information:Device Minor: \t 0\n" +
	"0000:3b:00.0/information:GPU UUID: \t GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001\n" +
	"0000:3b:00.0/information:Bus Location: \t 0000:3b:00.0\n" +
	"0000:3b:00.0/information:Device Minor: \t 1\n" +
	NVIDIAEnd + "\n"

func TestParseNVIDIAGPUs(t *testing.T) {
	got, err := ParseNVIDIAGPUs([]byte(nvidiaDump))
	if err != nil {
		t.Fatal(err)
	}
	want := []NVIDIAGPU{{UUID: "GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9", BusID: "0000:19:00.0", Minor: 0},
		{UUID: "GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001", BusID: "0000:3b:00.0", Minor: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	none, err := ParseNVIDIAGPUs([]byte(NVIDIAHeader + "\n" + NVIDIAEnd + "\n"))
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("a node without the driver: %#v, %v", none, err)
	}
}

func TestParseNVIDIAGPUsRefuses(t *testing.T) {
	gpu := func(dir, uuid, bus, minor string) string {
		return dir + "/information:GPU UUID: \t " + uuid + "\n" + dir + "/information:Bus Location: \t " + bus + "\n" +
			dir + "/information:Device Minor: \t " + minor + "\n"
	}
	const u0, u1 = "GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9", "GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001"
	framed := func(body string) string { return NVIDIAHeader + "\n" + body + NVIDIAEnd + "\n" }
	for name, text := range map[string]string{
		"no header":          gpu("0000:19:00.0", u0, "0000:19:00.0", "0") + NVIDIAEnd,
		"cut short":          NVIDIAHeader + "\n" + gpu("0000:19:00.0", u0, "0000:19:00.0", "0"),
		"not an address":     framed(gpu("../../etc", u0, "0000:19:00.0", "0")),
		"another file":       framed("0000:19:00.0/registry:GPU UUID: \t " + u0 + "\n"),
		"another key":        framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "0") + "0000:19:00.0/information:Model: \t\t NVIDIA H200\n"),
		"MIG UUID":           framed(gpu("0000:19:00.0", "MIG-bbd82119-de6c-4a76-665f-57787d7fb6d9", "0000:19:00.0", "0")),
		"uppercase UUID":     framed(gpu("0000:19:00.0", strings.ToUpper(u0), "0000:19:00.0", "0")),
		"bus not its dir":    framed(gpu("0000:19:00.0", u0, "0000:3b:00.0", "0")),
		"minor nvidiactl":    framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "255")),
		"minor negative":     framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "-1")),
		"minor not a number": framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "0x1")),
		"minor padded":       framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "01")),
		"a line twice":       framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "0") + "0000:19:00.0/information:Device Minor: \t 0\n"),
		"a line missing":     framed("0000:19:00.0/information:GPU UUID: \t " + u0 + "\n0000:19:00.0/information:Bus Location: \t 0000:19:00.0\n"),
		"UUID twice":         framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "0") + gpu("0000:3b:00.0", u0, "0000:3b:00.0", "1")),
		"minor twice":        framed(gpu("0000:19:00.0", u0, "0000:19:00.0", "0") + gpu("0000:3b:00.0", u1, "0000:3b:00.0", "0")),
		"over the limit":     framed(strings.Repeat("#", MaxNVIDIABytes)),
	} {
		if got, err := ParseNVIDIAGPUs([]byte(text)); err == nil {
			t.Errorf("%s: no error, got %+v", name, got)
		}
	}
}

// The script on a tree laid out as the driver's: only the three lines leave the file, every
// GPU is read, and a node without the driver prints an empty section.
func TestNVIDIAScriptOnATree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpus")
	second := strings.NewReplacer("GPU-bbd82119-de6c-4a76-665f-57787d7fb6d9", "GPU-0c0e7a8e-1f6b-4f3c-9d0a-000000000001",
		"0000:19:00.0", "0000:3b:00.0", "Device Minor: \t 0", "Device Minor: \t 1").Replace(h200Information)
	for addr, info := range map[string]string{"0000:19:00.0": h200Information, "0000:3b:00.0": second} {
		os.MkdirAll(filepath.Join(dir, addr), 0o755)
		if err := os.WriteFile(filepath.Join(dir, addr, "information"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.Replace(NVIDIAScript, NVIDIAGPUsDir, dir, 1)
	if script == NVIDIAScript {
		t.Fatal("the script does not name " + NVIDIAGPUsDir)
	}
	out, err := runShell(script)
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	if string(out) != nvidiaDump {
		t.Errorf("got\n%q\nwant\n%q", out, nvidiaDump)
	}
	out, _ = runShell(strings.Replace(NVIDIAScript, NVIDIAGPUsDir, filepath.Join(dir, "absent"), 1))
	if got, err := ParseNVIDIAGPUs(out); err != nil || len(got) != 0 {
		t.Errorf("no driver: %q: %+v %v", out, got, err)
	}
}

// TestNVIDIAScriptHere reads this machine's driver, when it has one, and checks each GPU the
// driver lists is read.
func TestNVIDIAScriptHere(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(NVIDIAGPUsDir, "*", "information"))
	if len(files) == 0 {
		t.Skip("no NVIDIA driver here")
	}
	out, err := runShell(NVIDIAScript)
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	got, err := ParseNVIDIAGPUs(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != len(files) {
		t.Errorf("%d GPUs read, the driver lists %d", len(got), len(files))
	}
	t.Logf("%+v", got)
}

func FuzzParseNVIDIAGPUs(f *testing.F) {
	f.Add([]byte(nvidiaDump))
	f.Add([]byte(NVIDIAHeader + "\n" + NVIDIAEnd))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseNVIDIAGPUs(b)
		if err != nil {
			return
		}
		uuids, minors := map[string]bool{}, map[int]bool{}
		for _, g := range got {
			if !IsNVIDIAGPUUUID(g.UUID) || !IsPCIAddress(g.BusID) || g.Minor < 0 || g.Minor > maxNVIDIAMinor || uuids[g.UUID] || minors[g.Minor] {
				t.Fatalf("accepted %+v", g)
			}
			uuids[g.UUID], minors[g.Minor] = true, true
		}
	})
}
