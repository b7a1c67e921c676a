package common

import (
	"errors"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// Judge mode (issue 45): the kubelet that judges a scheduler's binding is the release's real
// one. A node is a directory as the cases have it: machine.json (with the kubelet config),
// node.json (the node's allocatable and the pods admitted there, in admission order), the
// checkpoints cpu_manager_state, memory_manager_state and, with -devices,
// device-plugins/kubelet_internal_checkpoint, and devices.json (the device plugins' devices
// with their topology). The managers start from the checkpoints with node.json's pods active
// and running; a checkpoint owner no longer among them was deleted, so the managers' own
// removeStaleState drops it (bootOnly's ownersMayBeGone). Then ONE pod is admitted, through
// the topology manager's handler and the node-resource predicate, as the kubelet does.
//
//	-mode judge -case NODE -pod POD.json -out DIR [-devices]
//
// writes DIR/verdict.json and, when the pod is admitted, the checkpoints the real managers
// wrote (DIR/cpu_manager_state, DIR/memory_manager_state, DIR/device-plugins/...): the node's
// state after the admission. A refused pod writes no checkpoint: the node's files stand (its
// partial allocations would be dropped at the kubelet's next admission). Without -pod, a
// BestEffort pod is admitted only so that the managers drop what deleted pods held, and the
// checkpoints are written: what the kubelet's files hold once it noticed the deletions.
//
// One process per judgement: the feature gates are process-global, the CPU manager's
// reconcile loop has no stop, and the device manager's sockets have fixed paths (run it in a
// private mount namespace, as devices.sh does).

// VerdictSchema names verdict.json's format.
const VerdictSchema = "admitvec/verdict/v1"

// Verdict is verdict.json: expected.json's words for one pod on one node.
type Verdict struct {
	Schema     string `json:"schema"`
	Kubelet    string `json:"kubelet"`
	Starts     bool   `json:"starts"`
	Phase      string `json:"phase"`
	StartError string `json:"startError"`
	// Pod is empty in garbage-collection mode (no -pod).
	Pod        string                     `json:"pod,omitempty"`
	UID        string                     `json:"uid,omitempty"`
	Admit      bool                       `json:"admit"`
	Reason     string                     `json:"reason"`
	Message    string                     `json:"message"`
	Hangs      bool                       `json:"hangs,omitempty"`
	Containers map[string]ContainerResult `json:"containers,omitempty"`
	PodCPUs    string                     `json:"podCPUs,omitempty"`
	StateAfter *StateAfter                `json:"stateAfter,omitempty"`
	// Checkpoints are the files written beside verdict.json, relative to it.
	Checkpoints []string `json:"checkpoints,omitempty"`
}

// JudgeNode admits the pod at podPath ("" for garbage collection only) on nodeDir's state and
// writes outDir/verdict.json and the checkpoints after it.
func JudgeNode(k Kubelet, nodeDir, podPath, outDir string) error {
	if nodeDir == "" || outDir == "" {
		return errors.New("judge: -case (the node directory) and -out are required")
	}
	var m Machine
	if err := readJSON(filepath.Join(nodeDir, "machine.json"), &m); err != nil {
		return err
	}
	nf, err := readNodeFile(filepath.Join(nodeDir, "node.json"))
	if err != nil {
		return err
	}
	if nf == nil {
		return errors.New("judge: " + nodeDir + " has no node.json (the node's allocatable and admitted pods)")
	}
	var pod *v1.Pod
	if podPath != "" {
		p, ok, err := readPod(podPath)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("judge: no pod " + podPath)
		}
		pod = p
	}
	work, err := stateWorkDir(nodeDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var plugins map[string][]Device
	if deviceMode {
		if err := copyFile(filepath.Join(nodeDir, deviceCheckpoint), filepath.Join(devicePluginDir, "kubelet_internal_checkpoint")); err != nil && !os.IsNotExist(err) {
			return err
		}
		if plugins, err = readDevices(filepath.Join(nodeDir, "devices.json")); err != nil {
			return err
		}
	}
	v := &Verdict{Schema: VerdictSchema, Kubelet: Release()}
	active, e, err := bootOnly(k, &m, work, nf.boundPods(), plugins, "", true)
	if err != nil {
		return err
	}
	v.Starts, v.Phase, v.StartError = e.Starts, e.Phase, e.StartError
	if !e.Starts {
		return WriteJSON(filepath.Join(outDir, "verdict.json"), v)
	}
	if pod == nil {
		collectGarbage(k, active)
		v.Admit = true
		st := k.State()
		v.StateAfter = &st
	} else {
		r := admit(k, active, []*v1.Pod{pod}, nf.node())[0]
		v.Pod, v.UID, v.Admit, v.Reason, v.Message, v.Hangs = r.Pod, r.UID, r.Admit, r.Reason, r.Message, r.Hangs
		v.Containers, v.PodCPUs, v.StateAfter = r.Containers, r.PodCPUs, r.StateAfter
	}
	if deviceMode && v.StateAfter != nil {
		v.StateAfter.DeviceAssignments = deviceAssignments(k, active, nil)
	}
	if v.Admit {
		files := map[string]string{
			"cpu_manager_state":    filepath.Join(work, "cpu_manager_state"),
			"memory_manager_state": filepath.Join(work, "memory_manager_state"),
		}
		if deviceMode {
			files[deviceCheckpoint] = filepath.Join(devicePluginDir, "kubelet_internal_checkpoint")
		}
		for _, name := range sortedKeys(files) {
			dest := filepath.Join(outDir, name)
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				return err
			}
			if err := copyFile(files[name], dest); os.IsNotExist(err) {
				continue
			} else if err != nil {
				return err
			}
			v.Checkpoints = append(v.Checkpoints, name)
		}
	}
	return WriteJSON(filepath.Join(outDir, "verdict.json"), v)
}
