package nodestate

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// The device checkpoint and the node's status, as the real kubelet wrote them: the device
// vector cases with a seeded checkpoint (written by the release's device manager, whose
// writeCheckpoint records each resource's healthy IDs) and its GetCapacity after the restart
// (deviceCapacity/deviceAllocatable, what the node's status counts). Where the checkpoint lists
// more IDs than the status counts healthy (a plugin not back after the restart: the kubelet
// holds the resource with no device), the join must not hand the replay the checkpoint's IDs;
// and any resource it judges has as many devices as the kubelet holds healthy.
func TestJoinNodeDevicesOnDeviceVectors(t *testing.T) {
	sets, err := vectorpack.ReadDir(filepath.Join(repo, "testdata/admission"))
	if err != nil {
		t.Fatal(err)
	}
	above, judged := 0, 0
	for _, set := range sets {
		if !strings.HasSuffix(set.Name, "-devices") {
			continue
		}
		k, err := decode.ParseKubelet(set.MetaString("kubelet"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range set.Cases {
			b, ok := c.Files["device-plugins/kubelet_internal_checkpoint"]
			if !ok {
				continue
			}
			var want struct {
				Starts            bool             `json:"starts"`
				DeviceCapacity    map[string]int64 `json:"deviceCapacity"`
				DeviceAllocatable map[string]int64 `json:"deviceAllocatable"`
			}
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			rep := decode.Decode(decode.KindDevices, b, decode.Options{Kubelet: &k})
			if !want.Starts || rep.Verdict != decode.Valid || rep.Decoded.Devices == nil {
				continue
			}
			cp := rep.Decoded.Devices
			// Policy none: the IDs need no NUMA node, so only the counts decide.
			got := joinNodeDevices(nodeDeviceInput{checkpoint: cp, topologyNone: true,
				status: &fetch.DeviceStatus{Capacity: want.DeviceCapacity, Allocatable: want.DeviceAllocatable}})
			for r, ids := range cp.RegisteredDevices {
				healthy, counted := want.DeviceAllocatable[r]
				if !counted {
					continue
				}
				devs, isJudged := got.plugins[r]
				if int64(len(ids)) > healthy {
					above++
					if isJudged || !strings.Contains(got.notJudged[r], "the node's status") {
						t.Errorf("%s %s: the checkpoint lists %d %s, the kubelet holds %d healthy: judged %v with %d devices (not judged: %q)",
							set.Name, c.Name, len(ids), r, healthy, isJudged, len(devs), got.notJudged[r])
					}
				}
				if isJudged {
					judged++
					if int64(len(devs)) != healthy {
						t.Errorf("%s %s: %s judged with %d devices, the kubelet holds %d healthy", set.Name, c.Name, r, len(devs), healthy)
					}
				}
			}
		}
	}
	t.Logf("checkpoints listing more IDs than the status counts: %d; resources judged: %d", above, judged)
	if above == 0 || judged == 0 {
		t.Errorf("the device vectors hold no checkpoint above the status (%d) or none judged (%d)", above, judged)
	}
}
