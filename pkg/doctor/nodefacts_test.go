package doctor

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
)

const (
	podA   = "11111111-1111-4111-8111-111111111111"
	podB   = "22222222-2222-4222-8222-222222222222"
	claimA = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
)

// healthyNode: two GPUs registered and advertised, their plugin's socket there, a claim
// allocated and reserved for its pod, its CDI device defined, its device healthy.
func healthyNode() Input {
	devs := &decode.DeviceState{
		RegisteredDevices: map[string][]string{"example.com/gpu": {"gpu-0", "gpu-1"}},
		PodDeviceEntries: []decode.DeviceEntry{{PodUID: podA, ContainerName: "c", ResourceName: "example.com/gpu",
			DevicesPerNUMA: map[int64][]string{0: {"gpu-0"}}}},
	}
	dra := &decode.DRAState{Claims: []decode.DRAClaim{{ClaimUID: claimA, ClaimName: "gpu", Namespace: "ml", PodUIDs: []string{podA},
		DriverState: map[string]decode.DRADriverState{"gpu.example.com": {Devices: []decode.DRADevice{
			{PoolName: "node-1", DeviceName: "gpu-1", CDIDeviceIDs: []string{"gpu.example.com/gpu=gpu-1"}}}}}}}}
	health := &decode.DRAHealthState{Drivers: map[string]map[string]decode.DRADeviceHealth{"gpu.example.com": {
		"node-1/gpu-1": {PoolName: "node-1", DeviceName: "gpu-1", Health: "Healthy", LastUpdated: time.Unix(0, 0)}}}}
	return Input{
		Files: []*decode.Report{
			{Kind: decode.KindDevices, File: "device-plugins/kubelet_internal_checkpoint", Verdict: decode.Valid, Decoded: decode.Model{Devices: devs}},
			{Kind: decode.KindDRA, File: "dra_manager_state", Verdict: decode.Valid, Decoded: decode.Model{DRA: dra}},
			{Kind: decode.KindDRAHealth, File: "dra_health_state", Verdict: decode.Valid, Decoded: decode.Model{DRAHealth: health}},
		},
		LivePods: map[string]bool{podA: true},
		Node: &NodeFacts{
			Capacity:    map[string]int64{"example.com/gpu": 2},
			Allocatable: map[string]int64{"example.com/gpu": 2},
			Sockets:     []string{"example-gpu.sock", "kubelet.sock"},
			CDIDevices:  map[string]string{"gpu.example.com/gpu=gpu-1": "/var/run/cdi/gpu.yaml"},
			Claims:      map[string]ClaimStatus{"ml/gpu": {UID: claimA, Allocated: true, ReservedFor: []string{podA}}},
		},
	}
}

func checks(r Result) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+" "+f.Check)
	}
	sort.Strings(out)
	return out
}

// A healthy node has no finding, and no node check is skipped.
func TestNodeFactsHealthy(t *testing.T) {
	res := Diagnose(healthyNode())
	if len(res.Findings) != 0 {
		t.Errorf("findings on a healthy node: %+v", res.Findings)
	}
	for _, s := range res.Skipped {
		if strings.Contains(s, "device") || strings.Contains(s, "claim") || strings.Contains(s, "CDI") {
			t.Errorf("skipped %q", s)
		}
	}
}

// Each fault, planted alone on the healthy node, is the one finding.
func TestNodeFactsFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(in *Input)
		want  string
		says  string
	}{
		{"restart without the plugin", func(in *Input) { in.Node.Capacity["example.com/gpu"], in.Node.Allocatable["example.com/gpu"] = 0, 0 },
			"error device-not-advertised", "registers 2 example.com/gpu devices, but the node advertises none"},
		{"status without the resource", func(in *Input) { in.Node.Capacity, in.Node.Allocatable = map[string]int64{}, map[string]int64{} },
			"error device-not-advertised", "advertises none"},
		{"plugin disconnected", func(in *Input) { in.Node.Allocatable["example.com/gpu"] = 0 },
			"error device-plugin-disconnected", "2 example.com/gpu but none allocatable"},
		{"one device unhealthy", func(in *Input) { in.Node.Allocatable["example.com/gpu"] = 1 },
			"warning device-unhealthy", "1 of the node's 2"},
		{"checkpoint behind the status", func(in *Input) {
			in.Node.Capacity["example.com/gpu"], in.Node.Allocatable["example.com/gpu"] = 3, 3
		}, "warning device-count-drift", "registers 2"},
		{"plugin socket gone", func(in *Input) { in.Node.Sockets = []string{"kubelet.sock"} },
			"error device-plugin-gone", "no device plugin socket"},
		{"kubelet down", func(in *Input) { in.Node.Sockets = []string{"example-gpu.sock"} },
			"info kubelet-socket-missing", "kubelet.sock is missing"},
		{"claim gone from the API", func(in *Input) { in.Node.Claims = map[string]ClaimStatus{} },
			"warning dra-claim-gone", "no such ResourceClaim"},
		{"claim created again", func(in *Input) { in.Node.Claims["ml/gpu"] = ClaimStatus{UID: "other", Allocated: true} },
			"warning dra-claim-replaced", "deleted and created again"},
		{"claim deallocated", func(in *Input) { in.Node.Claims["ml/gpu"] = ClaimStatus{UID: claimA, ReservedFor: []string{podA}} },
			"error dra-claim-not-allocated", "no allocation"},
		{"claim not reserved", func(in *Input) { in.Node.Claims["ml/gpu"] = ClaimStatus{UID: claimA, Allocated: true} },
			"warning dra-claim-not-reserved", "not reserved for that pod"},
		{"CDI spec deleted", func(in *Input) { in.Node.CDIDevices = map[string]string{} },
			"error dra-cdi-missing", "gpu.example.com/gpu=gpu-1"},
		{"CDI spec unreadable", func(in *Input) { in.Node.CDIProblems = []string{"/etc/cdi/x.yaml: no cdiVersion"} },
			"warning cdi-spec-unreadable", "no cdiVersion"},
		{"device unhealthy", func(in *Input) {
			h := fileOf(in.Files, decode.KindDRAHealth).Decoded.DRAHealth
			msg := "ECC errors"
			h.Drivers["gpu.example.com"]["node-1/gpu-1"] = decode.DRADeviceHealth{PoolName: "node-1", DeviceName: "gpu-1", Health: "Unhealthy", Message: &msg}
		}, "warning dra-device-unhealthy", "ECC errors; claims prepared on it: ml/gpu"},
		{"device held twice", func(in *Input) {
			ds := fileOf(in.Files, decode.KindDevices).Decoded.Devices
			in.LivePods[podB] = true
			ds.PodDeviceEntries = append(ds.PodDeviceEntries, decode.DeviceEntry{PodUID: podB, ContainerName: "c", ResourceName: "example.com/gpu",
				DevicesPerNUMA: map[int64][]string{0: {"gpu-0"}}})
		}, "error device-held-twice", "also held by"},
		{"pod removed while the kubelet was down", func(in *Input) { in.LivePods = map[string]bool{} }, "", ""},
		{"pod and claim both gone", func(in *Input) { in.LivePods, in.Node.Claims = map[string]bool{}, map[string]ClaimStatus{} }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := healthyNode()
			tc.plant(&in)
			res := Diagnose(in)
			got := checks(res)
			if tc.want == "" {
				// The gone pod is stale in both files, and no other check fires for it.
				if want := []string{"warning stale-pod", "warning stale-pod"}; strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("findings %q, want %q", got, want)
				}
				return
			}
			if len(got) != 1 || got[0] != tc.want || !strings.Contains(res.Findings[0].Message, tc.says) {
				t.Fatalf("findings %q (%+v), want one %q saying %q", got, res.Findings, tc.want, tc.says)
			}
			if res.Findings[0].Fix == "" {
				t.Errorf("no fix: %+v", res.Findings[0])
			}
		})
	}
}

// Unknown node facts are skipped and named, never guessed.
func TestNodeFactsUnknown(t *testing.T) {
	in := healthyNode()
	in.Node = &NodeFacts{ClaimsSkipped: "no get on resourceclaims in namespace ml"}
	res := Diagnose(in)
	if len(res.Findings) != 0 {
		t.Errorf("findings %+v", res.Findings)
	}
	want := []string{"registered devices against the node's capacity", "device plugin sockets", "ResourceClaims: no get on resourceclaims", "CDI devices of the prepared claims"}
	joined := strings.Join(res.Skipped, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("skipped %q lacks %q", res.Skipped, w)
		}
	}
}

// The recorded example node's files, judged by kubelet v1.37.1, with a node whose CDI specs
// lack one GPU and whose device plugins are gone: the findings the files and facts call for.
func TestNodeFactsRecorded(t *testing.T) {
	k, err := decode.ParseKubelet("v1.37.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	for _, f := range []string{"device-plugins/kubelet_internal_checkpoint", "dra_manager_state", "dra_health_state"} {
		b, err := os.ReadFile(filepath.Join("../../examples/kubelet-root", f))
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := decode.ParseKind(f)
		rep := decode.Decode(kind, b, decode.Options{Kubelet: &k})
		rep.File = f
		in.Files = append(in.Files, rep)
	}
	in.Node = &NodeFacts{Sockets: []string{"kubelet.sock"},
		CDIDevices: map[string]string{"gpu.example.com/gpu=gpu-1": "/var/run/cdi/gpu.yaml", "net.example.com/nic=vf-3": "/etc/cdi/nic.json"}}
	got := checks(Diagnose(in))
	want := []string{"error device-plugin-gone", "error dra-cdi-missing", "warning dra-device-unhealthy"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("findings %q, want %q", got, want)
	}
}
