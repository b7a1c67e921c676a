package doctor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/cmdtest"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

// restartBundle writes a collect bundle of a node whose kubelet ran pods on a device plugin's
// devices: its device checkpoint, the sockets its device-plugins dir held, a machine, a kubelet
// config of the defaults (no CPU, memory or topology policy) and the recorded kubelet version.
func restartBundle(t *testing.T, checkpoint []byte, kubelet string, sockets ...string) string {
	t.Helper()
	dir := t.TempDir()
	machine, err := os.ReadFile("../../../examples/doctor-node/machine.json")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"device-plugins/kubelet_internal_checkpoint": checkpoint,
		"machine.json":           machine,
		"kubelet-config.yaml":    []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"),
		"node.json":              []byte(`{"schema":"kubectl-nodestate/node/v1","node":"n1","kubeletVersion":"` + kubelet + `"}`),
		"device-plugins.sockets": []byte("@@nodestate-device-plugin-sockets v1\n" + strings.Join(sockets, "\n") + "\n@@end\n"),
	}
	for name, b := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// renamedResource is a real kubelet's device checkpoint with its one resource renamed, its
// devices given other IDs without a NUMA node, its allocation response emptied, and the
// checksum the kubelet would write for that content.
func renamedResource(t *testing.T, file, kubelet, resource string, ids map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range ids {
		b = []byte(strings.ReplaceAll(string(b), from, to))
	}
	var cp struct {
		Data struct {
			PodDeviceEntries []struct {
				PodUID, ContainerName, ResourceName string
				DeviceIDs                           map[string][]string
				AllocResp                           []byte
			}
			RegisteredDevices map[string][]string
		}
		Checksum uint64
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	for i := range cp.Data.PodDeviceEntries {
		e := &cp.Data.PodDeviceEntries[i]
		var all []string
		for _, list := range e.DeviceIDs {
			all = append(all, list...)
		}
		e.ResourceName, e.DeviceIDs, e.AllocResp = resource, map[string][]string{"-1": all}, nil
	}
	registered := map[string][]string{}
	for _, list := range cp.Data.RegisteredDevices {
		registered[resource] = append(registered[resource], list...)
	}
	cp.Data.RegisteredDevices = registered
	k, err := decode.ParseKubelet(kubelet, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second pass holds the checksum computed by the first
		if b, err = json.Marshal(cp); err != nil {
			t.Fatal(err)
		}
		rep := decode.Decode(decode.KindDevices, b, decode.Options{Kubelet: &k})
		if rep.Verdict == decode.Valid {
			return b
		}
		if len(rep.Checksums) == 0 {
			t.Fatalf("%s: %s", rep.Verdict, rep.Error)
		}
		cp.Checksum = rep.Checksums[0].Computed
	}
	t.Fatalf("the renamed checkpoint is not valid for %s", kubelet)
	return nil
}

// The held-out restart reports, answered from a bundle alone: nobody says that a plugin is
// missing; doctor finds the pods holding a plugin's devices in the device checkpoint, the
// plugin in its registered resources, and says that a reboot refuses those pods with the words
// the reporters quote, until their plugin registers.
func TestRestartReportsFromABundle(t *testing.T) {
	const pod = "6f1c2a0d-3b5e-4c8a-9d1e-2a7b6c5d4e3f"
	gpu, err := os.ReadFile("../../../testdata/kubelet/kubelet_internal_checkpoint/v1.30.14/gpu-single.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		report, kubelet, resource string
		checkpoint                []byte
		sockets                   []string
		want                      []string
	}{
		{
			// kubernetes/kubernetes #125579 (GKE 1.30, a node reboot; #124934 the same): a pod on
			// a GPU, the checkpoint the real kubelet 1.30.14 wrote for it.
			report: "k/k #125579", kubelet: "v1.30.14", resource: "nvidia.com/gpu", checkpoint: gpu, sockets: []string{"kubelet.sock", "nvidia-gpu.sock"},
			want: []string{
				"if this node reboots (no container running; device plugins not yet registered): 1 of 1 pods refused",
				"pod " + pod + " waits on nvidia.com/gpu, refused meanwhile: UnexpectedAdmissionError: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected",
				"have the nvidia.com/gpu plugin register before the kubelet re-admits its pods",
			},
		},
		{
			// squat/generic-device-plugin #33 (2023-07: Kubernetes 1.27, a Zigbee USB stick as
			// squat.ai/zigbee, one Deployment replica, the node restarted): the real kubelet
			// 1.28.15's checkpoint of one pod on one device, the resource renamed.
			report: "generic-device-plugin #33", kubelet: "v1.27.16", resource: "squat.ai/zigbee",
			checkpoint: renamedResource(t, "../../../testdata/kubelet/kubelet_internal_checkpoint/v1.28.15/gpu-single.json", "v1.27.16", "squat.ai/zigbee",
				map[string]string{"GPU-": "zigbee-"}),
			sockets: []string{"kubelet.sock", "squat.ai-zigbee.sock"},
			want: []string{
				"1 of 1 pods refused",
				"pod " + pod + " waits on squat.ai/zigbee, refused meanwhile: UnexpectedAdmissionError: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices squat.ai/zigbee, which is unexpected",
				"have the squat.ai/zigbee plugin register before the kubelet re-admits its pods",
			},
		},
	} {
		dir := restartBundle(t, tc.checkpoint, tc.kubelet, tc.sockets...)
		out, errOut, code := cmdtest.Run(t, "doctor", "--from-dir", dir, "-o", "json")
		var res struct {
			Findings []struct {
				Severity, Check, Message, Fix string
			} `json:"findings"`
			Skipped []string `json:"skipped"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: exit %d: %v\n%s\n%s", tc.report, code, err, out, errOut)
		}
		var line string
		for _, f := range res.Findings {
			if f.Check == "if-reboot" {
				line = f.Severity + " " + f.Message + " | " + f.Fix
			}
		}
		t.Logf("%s: %s", tc.report, line)
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: the reboot outlook lacks %q:\n%s\n%s", tc.report, w, out, errOut)
			}
		}
		for _, want := range []string{"plugins: " + tc.resource + " (the device checkpoint registers them)", tc.resource + ": 3 of 4 devices held by no pod",
			"device plugin sockets: " + strings.Join(tc.sockets, ", ")} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: the notes lack %q:\n%s", tc.report, want, errOut)
			}
		}
		if !strings.HasPrefix(line, "warning ") {
			t.Errorf("%s: a reboot that refuses a pod is a warning: %s", tc.report, line)
		}
	}
}
