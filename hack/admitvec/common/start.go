package common

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StartResult is one release's result of a kubelet-start case (schema statevec/manifest/v1's
// `results.<release>`, testdata/kubelet-start/README.md): the kubelet's own order (CPU
// NewManager, memory NewManager, CPU Start, memory Start) decides `phase` and `error`; `cpu`
// and `memory` are each manager made and started alone.
type StartResult struct {
	Starts bool           `json:"starts"`
	Error  string         `json:"error"`
	Phase  string         `json:"phase"`
	CPU    ManagerOutcome `json:"cpu"`
	Memory ManagerOutcome `json:"memory"`
}

// ManagerOutcome is one manager's own outcome: phase "ok", "NewManager" or "Start".
type ManagerOutcome struct {
	Policy string `json:"policy"`
	Phase  string `json:"phase"`
	Error  string `json:"error,omitempty"`
}

// StartCase boots the real managers on caseDir (machine.json, cpu_manager_state,
// memory_manager_state: the kubelet-start layout, schema statevec/machine/v1, which admitvec's
// machine.json reads as it is) three times, each on its own copy of the checkpoints: both
// managers as the kubelet starts them, then the CPU manager alone, then the memory manager
// alone. The reconcile loops of earlier boots go on in the background on their own copies
// until the process ends (the directories are removed then).
func StartCase(k Kubelet, caseDir string) (*StartResult, error) {
	var m Machine
	if err := readJSON(filepath.Join(caseDir, "machine.json"), &m); err != nil {
		return nil, err
	}
	if m.Schema != "statevec/machine/v1" && m.Schema != "admitvec/machine/v1" {
		return nil, fmt.Errorf("%s: machine.json schema %q", caseDir, m.Schema)
	}
	work, err := os.MkdirTemp("", "admitvec-start-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	run := func(only string) (*Expected, error) {
		dir := filepath.Join(work, "both")
		if only != "" {
			dir = filepath.Join(work, only)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		for _, name := range []string{"cpu_manager_state", "memory_manager_state"} {
			if err := copyFile(filepath.Join(caseDir, name), filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
		_, e, err := bootOnly(k, &m, dir, nil, nil, only, false)
		return e, err
	}
	both, err := run("")
	if err != nil {
		return nil, err
	}
	r := &StartResult{Starts: both.Starts, Error: both.StartError, Phase: both.Phase}
	for _, mgr := range []struct {
		only, prefix, policy string
		out                  *ManagerOutcome
	}{
		{"cpu", "cpumanager.", orDefaultPolicy(m.Kubelet.CPUManagerPolicy, "none"), &r.CPU},
		{"memory", "memorymanager.", orDefaultPolicy(m.Kubelet.MemoryManagerPolicy, "None"), &r.Memory},
	} {
		e, err := run(mgr.only)
		if err != nil {
			return nil, err
		}
		*mgr.out = ManagerOutcome{Policy: mgr.policy, Phase: "ok"}
		switch {
		case e.Starts, e.Phase == "config", e.Phase == "featureGates":
			// The kubelet stops at its configuration before either manager is made.
		case strings.HasPrefix(e.Phase, mgr.prefix):
			mgr.out.Phase, mgr.out.Error = strings.TrimPrefix(e.Phase, mgr.prefix), e.StartError
		default:
			return nil, fmt.Errorf("%s: the %s manager alone failed at %s: %s", caseDir, mgr.only, e.Phase, e.StartError)
		}
	}
	return r, nil
}

func orDefaultPolicy(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
