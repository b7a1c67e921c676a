// Command restorevec writes cpu_manager_state files whose checksums the real kubelet code
// computes but whose CPU sets its restore cannot parse, and judges files with that release's real
// restore path (state.NewCheckpointState). One module per release: this one is v1.37.1.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	cperrors "k8s.io/kubernetes/pkg/kubelet/checkpointmanager/errors"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
)

// A restoreCase is one file: its sets as the kubelet's own types hold them.
type restoreCase struct {
	Name          string                       `json:"name"`
	Description   string                       `json:"description"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
	Baselines     map[string]map[string]string `json:"baselines"`
	// Gates are the writer's gates, as a suffix of its label ("+InPlacePodVerticalScalingExclusiveCPUs"):
	// a file only a kubelet with them writes.
	Gates string `json:"gates"`
}

type read struct {
	Case    string  `json:"case"`
	Reader  string  `json:"reader"`
	Verdict string  `json:"verdict"`
	Error   *string `json:"error"`
	// Decoded is the checkpoint data the reader loaded, when it accepted the file.
	Decoded json.RawMessage `json:"decoded,omitempty"`
}

// nodePath is where the kubelet keeps the file; the error texts name it.
const nodePath = "/var/lib/kubelet/cpu_manager_state"

func main() {
	mode := flag.String("mode", "", "write | read | vectors")
	cases := flag.String("cases", "", "cases JSON (write, vectors)")
	dir := flag.String("dir", "", "directory of the written files, one sub-directory per case")
	gates := flag.String("gates", "", "feature gates of the reader (read), e.g. InPlacePodVerticalScalingExclusiveCPUs=true")
	label := flag.String("label", "", "the reader's label (read), as the vectors name readers")
	reads := flag.String("reads", "", "comma-separated outputs of -mode read (vectors)")
	out := flag.String("out", "", "the repository's testdata/kubelet (vectors)")
	formats := flag.String("formats", "", "release=format of the files each release wrote, comma-separated (vectors)")
	flag.Parse()
	var err error
	switch *mode {
	case "write":
		err = writeAll(*cases, *dir)
	case "read":
		err = readAll(*dir, *gates, *label)
	case "vectors":
		err = vectors(*cases, *dir, *reads, *out, *formats)
	default:
		err = fmt.Errorf("-mode write|read|vectors")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func loadCases(file string) ([]restoreCase, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cases []restoreCase
	return cases, json.Unmarshal(b, &cases)
}

func writeAll(casesFile, dir string) error {
	cases, err := loadCases(casesFile)
	if err != nil {
		return err
	}
	for _, c := range cases {
		if err := write(filepath.Join(dir, c.Name), c); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// write stores the case through the kubelet's checkpoint manager, which computes both checksums.
func write(dir string, c restoreCase) error {
	cp := &state.CPUManagerCheckpoint{}
	cp.CheckpointData = state.CPUManagerCheckpointData{PolicyName: "static", DefaultCPUSet: c.DefaultCPUSet, Entries: c.Entries}
	for pod, containers := range c.Baselines {
		if cp.CheckpointData.Baselines == nil {
			cp.CheckpointData.Baselines = map[string]map[string]state.ContainerCPUs{}
		}
		cp.CheckpointData.Baselines[pod] = map[string]state.ContainerCPUs{}
		for name, set := range containers {
			cp.CheckpointData.Baselines[pod][name] = state.ContainerCPUs{Baseline: set}
		}
	}
	m, err := checkpointmanager.NewCheckpointManager(dir)
	if err != nil {
		return err
	}
	return m.CreateCheckpoint("cpu_manager_state", cp)
}

// readAll restores every written file as the kubelet does at start (policy "static", as the
// files say; no containers, as the files key them by pod). Gates are process-global: one
// process per reader.
func readAll(dir, gates, label string) error {
	if gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(gates); err != nil {
			return err
		}
	}
	// dir/<writer release>/<case>/cpu_manager_state: every release's files.
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
			// The kubelet names the file by its directory: the node's, not this one.
			msg := strings.ReplaceAll(err.Error(), f, nodePath)
			r.Error = &msg
			r.Verdict = "unreadable"
			// Some releases wrap the checkpoint's error with %v: its words still say it.
			if errors.Is(err, cperrors.CorruptCheckpointError{}) || strings.Contains(msg, cperrors.CorruptCheckpointError{}.Error()) {
				r.Verdict = "corrupt"
			}
		} else if r.Decoded, err = restored(st); err != nil {
			return err
		}
		out = append(out, r)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// restored is the state the kubelet restored, CPU sets as strings (as the vectors record it).
func restored(st state.State) (json.RawMessage, error) {
	entries := map[string]map[string]string{}
	for pod, containers := range st.GetCPUAssignments() {
		entries[pod] = map[string]string{}
		for name, set := range containers {
			entries[pod][name] = set.String()
		}
	}
	baselines := map[string]map[string]string{}
	for pod, containers := range st.GetCPUBaselines() {
		baselines[pod] = map[string]string{}
		for name, b := range containers {
			baselines[pod][name] = b.Baseline.String()
		}
	}
	pods := map[string]string{}
	for pod, e := range st.GetPodCPUAssignments() {
		pods[pod] = e.CPUSet.String()
	}
	return json.Marshal(map[string]any{"policyName": "static", "defaultCpuSet": st.GetDefaultCPUSet().String(),
		"entries": entries, "baselines": baselines, "podEntries": pods})
}

// vectors writes each file a release wrote (dir/<release>/<case>) to
// out/cpu_manager_state/<writer>/ and its expectations (the writer's own read, and every
// reader's) to out/expected/, in the layout the conformance suite reads. The writer is the
// release with the case's gates.
func vectors(casesFile, dir, readFiles, out, formats string) error {
	cases, err := loadCases(casesFile)
	if err != nil {
		return err
	}
	byCase := map[string]map[string]read{}
	for _, f := range strings.Split(readFiles, ",") {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var rs []read
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range rs {
			if byCase[r.Case] == nil {
				byCase[r.Case] = map[string]read{}
			}
			byCase[r.Case][r.Reader] = r
		}
	}
	for _, rf := range strings.Split(formats, ",") {
		release, format, _ := strings.Cut(rf, "=")
		if err := vectorsOf(cases, dir, release, format, byCase, out); err != nil {
			return err
		}
	}
	return nil
}

func vectorsOf(cases []restoreCase, dir, release, format string, byCase map[string]map[string]read, out string) error {
	for _, c := range cases {
		writer := release + c.Gates
		key := release + "/" + c.Name
		if byCase[key] == nil {
			continue // a case this release does not write
		}
		raw, err := os.ReadFile(filepath.Join(dir, release, c.Name, "cpu_manager_state"))
		if err != nil {
			return err
		}
		file := filepath.Join(out, "cpu_manager_state", writer, c.Name+".json")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			return err
		}
		own, ok := byCase[key][writer]
		if !ok {
			return fmt.Errorf("%s: no read by the writer %s", c.Name, writer)
		}
		var b strings.Builder
		marshal := func(v any) string {
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
			return strings.TrimSuffix(buf.String(), "\n")
		}
		field := func(k string, v any) { fmt.Fprintf(&b, "  %q: %s,\n", k, marshal(v)) }
		b.WriteString("{\n")
		field("component", "cpu_manager_state")
		field("writer", writer)
		field("case", c.Name)
		field("description", c.Description)
		field("format", format)
		field("mutation", nil)
		field("expectedVerdict", own.Verdict)
		field("expectedError", own.Error)
		b.WriteString("  \"reads\": {\n")
		labels := make([]string, 0, len(byCase[key]))
		for l := range byCase[key] {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		for i, l := range labels {
			r := byCase[key][l]
			j := marshal(struct {
				Verdict string  `json:"verdict"`
				Error   *string `json:"error"`
			}{r.Verdict, r.Error})
			sep := ","
			if i == len(labels)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "    %q: %s%s\n", l, strings.NewReplacer(`{"verdict":`, `{"verdict": `, `","error":`, `", "error": `).Replace(j), sep)
		}
		dec := "null"
		if own.Decoded != nil {
			dec = string(own.Decoded)
		}
		b.WriteString("  },\n  \"expectedDecoded\": " + dec + "\n}\n")
		exp := filepath.Join(out, "expected", "cpu_manager_state", writer, c.Name+".json")
		if err := os.MkdirAll(filepath.Dir(exp), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(exp, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
