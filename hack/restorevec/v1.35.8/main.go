// Command restorevec for kubelet v1.35.8: writes V2 cpu_manager_state files with the real
// checkpoint code and judges files with the real restore path (see ../README.md; the newest
// release's module also assembles the vectors).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	cperrors "k8s.io/kubernetes/pkg/kubelet/checkpointmanager/errors"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

type restoreCase struct {
	Name          string                       `json:"name"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
	Baselines     map[string]map[string]string `json:"baselines"`
	Gates         string                       `json:"gates"`
}

type read struct {
	Case    string          `json:"case"`
	Reader  string          `json:"reader"`
	Verdict string          `json:"verdict"`
	Error   *string         `json:"error"`
	Decoded json.RawMessage `json:"decoded,omitempty"`
}

const nodePath = "/var/lib/kubelet/cpu_manager_state"

func main() {
	mode := flag.String("mode", "", "write | read")
	cases := flag.String("cases", "", "cases JSON (write)")
	dir := flag.String("dir", "", "write: this release's directory; read: the directory of every release's")
	gates := flag.String("gates", "", "feature gates of the reader (read)")
	label := flag.String("label", "", "the reader's label (read)")
	flag.Parse()
	var err error
	switch *mode {
	case "write":
		err = writeAll(*cases, *dir)
	case "read":
		err = readAll(*dir, *gates, *label)
	default:
		err = fmt.Errorf("-mode write|read")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeAll writes the cases a 1.35 kubelet can write: V2 has no baselines, and the gates a case
// names are 1.37's.
func writeAll(casesFile, dir string) error {
	b, err := os.ReadFile(casesFile)
	if err != nil {
		return err
	}
	var cases []restoreCase
	if err := json.Unmarshal(b, &cases); err != nil {
		return err
	}
	for _, c := range cases {
		if c.Baselines != nil || c.Gates != "" {
			continue
		}
		m, err := checkpointmanager.NewCheckpointManager(filepath.Join(dir, c.Name))
		if err != nil {
			return err
		}
		cp := state.NewCPUManagerCheckpoint()
		cp.PolicyName, cp.DefaultCPUSet = "static", c.DefaultCPUSet
		for pod, containers := range c.Entries {
			cp.Entries[pod] = containers
		}
		if err := m.CreateCheckpoint("cpu_manager_state", cp); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

func readAll(dir, gates, label string) error {
	if gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			return err
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "cpu_manager_state"))
	if err != nil {
		return err
	}
	var out []read
	for _, f := range files {
		caseDir := filepath.Dir(f)
		r := read{Case: filepath.Base(filepath.Dir(caseDir)) + "/" + filepath.Base(caseDir), Reader: label, Verdict: "valid"}
		st, err := state.NewCheckpointState(klog.Background(), caseDir, "cpu_manager_state", "static", containermap.NewContainerMap())
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), f, nodePath)
			r.Error = &msg
			r.Verdict = "unreadable"
			// Some releases wrap the checkpoint's error with %v: its words still say it.
			if errors.Is(err, cperrors.CorruptCheckpointError{}) || strings.Contains(msg, cperrors.CorruptCheckpointError{}.Error()) {
				r.Verdict = "corrupt"
			}
		} else {
			entries := map[string]map[string]string{}
			for pod, containers := range st.GetCPUAssignments() {
				entries[pod] = map[string]string{}
				for name, set := range containers {
					entries[pod][name] = set.String()
				}
			}
			if r.Decoded, err = json.Marshal(map[string]any{"policyName": "static",
				"defaultCpuSet": st.GetDefaultCPUSet().String(), "entries": entries}); err != nil {
				return err
			}
		}
		out = append(out, r)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
