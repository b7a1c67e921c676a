// The restores of 1.37+ (the CPU and memory managers with a logger; DRA's checkpointer and
// health cache).
package main

import (
	"encoding/json"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	cpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	devcheckpoint "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"
	drastate "k8s.io/kubernetes/pkg/kubelet/cm/dra/state"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
)

func init() {
	setGates = utilfeature.DefaultMutableFeatureGate.Set
	// A V1 file keys its sets by container ID: the runtime the kubelet migrates it through knows
	// those containers (as on a node whose containers still run), named with the placeholders
	// nodestate words them with (pkg/decode/restore.go), as hack/restorevec does.
	restorers["cpu_manager_state"] = func(dir, name string, raw []byte) error {
		runtime := containermap.NewContainerMap()
		var v1 struct {
			Entries map[string]json.RawMessage `json:"entries"`
		}
		if json.Unmarshal(raw, &v1) == nil {
			for id, set := range v1.Entries {
				if len(set) > 0 && set[0] == '"' { // V1: container ID -> set
					runtime.Add("<UID of the pod of container "+id+">", "<name of container "+id+">", id)
				}
			}
		}
		_, err := cpustate.NewCheckpointState(klog.Background(), dir, name, policyOf(raw, "static"), runtime)
		return err
	}
	restorers["memory_manager_state"] = func(dir, name string, raw []byte) error {
		_, err := memstate.NewCheckpointState(klog.Background(), dir, name, policyOf(raw, "Static"))
		return err
	}
	// The DRA manager's start: the checkpoint, then its claims (GetClaimInfoStateList).
	restorers["dra_manager_state"] = func(dir, name string, raw []byte) error {
		c, err := drastate.NewCheckpointer(dir, name)
		if err != nil {
			return err
		}
		cp, err := c.GetOrCreate()
		if err != nil {
			return err
		}
		_, err = cp.GetClaimInfoStateList()
		return err
	}
	// The device manager's start reads its checkpoint with getCheckpoint (manager.go, 1.37.1
	// :573-579; unexported, its body here): an empty checkpoint.New filled by GetCheckpoint. What it
	// then skips of each entry is ../device's (it needs the manager running at its fixed path).
	restorers["kubelet_internal_checkpoint"] = func(dir, name string, raw []byte) error {
		m, err := checkpointmanager.NewCheckpointManager(dir)
		if err != nil {
			return err
		}
		return m.GetCheckpoint(name, devcheckpoint.New(make([]devcheckpoint.PodDevicesEntry, 0), make(map[string][]string)))
	}
	// The DRA manager's health cache (healthinfo.go, loadFromCheckpoint: 1.37.1 :68-81): the file
	// decoded into the state's map, no checksum; an error is logged and the cache starts empty.
	restorers["dra_health_state"] = func(dir, name string, raw []byte) error {
		return json.Unmarshal(raw, &drastate.DevicesHealthMap{})
	}
}

// policyOf is the policy the file names (the node's kubelet runs the policy its file was
// written by), def when the file names none.
func policyOf(raw []byte, def string) string {
	var top struct {
		PolicyName string `json:"policyName"`
	}
	if json.Unmarshal(raw, &top) != nil || top.PolicyName == "" {
		return def
	}
	return top.PolicyName
}
