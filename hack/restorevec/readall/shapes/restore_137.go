// The restores of 1.37+ (memory manager with a logger; DRA's checkpointer).
package main

import (
	"encoding/json"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	drastate "k8s.io/kubernetes/pkg/kubelet/cm/dra/state"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
)

func init() {
	setGates = utilfeature.DefaultMutableFeatureGate.Set
	restorers["memory_manager_state"] = restorer{restore: func(dir, name string, raw []byte) error {
		_, err := memstate.NewCheckpointState(klog.Background(), dir, name, policyOf(raw, "Static"))
		return err
	}}
	// The DRA manager's start: the checkpoint, then its claims (GetClaimInfoStateList).
	restorers["dra_manager_state"] = restorer{restore: func(dir, name string, raw []byte) error {
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
	}}
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
