package decode

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Restore checks: what a kubelet's restoreState does with the content once the checkpoint
// loaded (JSON decoded, checksum verified). A file that fails one is refused exactly as a corrupt
// one is: the kubelet does not start. They are rows of files[kind].Restore, by kubelet release,
// with the kubelet's words (docs/restore-checks.md lists each with its source lines).
//
// Not replayed here: checks against the node's configuration (the configured policy name), the
// runtime (1.18-1.35 map a V1 file's container IDs to pods through the runtime) or the machine
// (the managers' Start): they are not a property of the file.

// A restoreRule is the checks the kubelets of By make after loading a file.
type restoreRule struct {
	By    span
	Check restoreCheck
}

type restoreCheck interface {
	check(model any, k Kubelet) error
}

// restoreOf is what kubelet k's restore does with a loaded file's model: the first failing
// check, or, when it passes, the entries it skips (a restoreDropper's, in the same pass).
func restoreOf(kind Kind, k Kubelet, model any) ([]DroppedEntry, error) {
	for _, r := range files[kind].Restore {
		if r.By.has(k) {
			if d, ok := r.Check.(restoreDropper); ok {
				return d.restore(model, k)
			}
			return nil, r.Check.check(model, k)
		}
	}
	return nil, nil
}

// restoreError is a failed restore check: the kubelet's own words, not wrapping further (the
// report's cause is the whole sentence). refusal, when set, is what the kubelet does instead of
// the file's Refused row.
type restoreError struct {
	text    string
	refusal *Refusal
}

func (e *restoreError) Error() string { return e.text }

// A cpusetParser is one release's cpuset.Parse, reproduced for its errors only: it never builds
// the set (a hostile "0-2000000000" would make the kubelet spin, not fail).
type cpusetParser struct {
	// splitAll: strings.Split(r, "-") (a range of three or more parts is silently skipped);
	// otherwise strings.SplitN(r, "-", 2).
	splitAll bool
	// reversed words a range whose start is above its end; empty: such a range is empty, no
	// error.
	reversed string
}

var (
	// pkg/kubelet/cm/cpuset before 1.22.
	cpusetUnchecked = cpusetParser{splitAll: true}
	// pkg/kubelet/cm/cpuset 1.22-1.26.
	cpusetGE = cpusetParser{reversed: "invalid range %q (%d >= %d)"}
	// pkg/kubelet/cm/cpuset 1.27, then k8s.io/utils/cpuset (1.28+).
	cpusetGT = cpusetParser{reversed: "invalid range %q (%d > %d)"}
)

func (p cpusetParser) parse(s string) error {
	if s == "" {
		return nil
	}
	// strings.Split(s, ","), element by element, without allocating (a node has thousands).
	for rest, more := s, true; more; {
		var r string
		r, rest, more = strings.Cut(rest, ",")
		first, second, isRange := strings.Cut(r, "-")
		if !isRange {
			if _, err := strconv.Atoi(r); err != nil {
				return err
			}
			continue
		}
		if p.splitAll && strings.Contains(second, "-") {
			continue // strings.Split gave three parts or more: neither branch of the kubelet's
		}
		start, err := strconv.Atoi(first)
		if err != nil {
			return err
		}
		end, err := strconv.Atoi(second)
		if err != nil {
			return err
		}
		if start > end && p.reversed != "" {
			return fmt.Errorf(p.reversed, r, start, end)
		}
	}
	return nil
}

// cpuRestore is restoreState of the CPU manager: the default CPU set, then every container's
// set, then (with a gate) every baseline, each parsed, the first failure returned. The kubelet
// walks its maps in Go's random order; with several bad sets the one it names varies, and this
// names the first in sorted order.
type cpuRestore struct {
	Parse cpusetParser
	// Default words a bad defaultCpuSet: %q the set, %v the parse error.
	Default string
	// ByContainerID words a bad V1 entry (1.12-1.17: container ID -> set): %q set, %q ID, %v.
	ByContainerID string
	// Entry words a bad container set: %q set, %q container, %q pod, %v.
	Entry string
	// Baseline words a bad baseline (%q set, %q container, %q pod, %v), checked only with
	// BaselineGate on.
	Baseline     string
	BaselineGate string
}

func (c cpuRestore) check(model any, k Kubelet) error {
	st, ok := model.(*CPUState)
	if !ok {
		return nil
	}
	if err := c.Parse.parse(st.DefaultCPUSet); err != nil {
		return &restoreError{text: fmt.Sprintf(c.Default, st.DefaultCPUSet, err)}
	}
	if c.ByContainerID != "" {
		for _, id := range slices.Sorted(maps.Keys(st.ContainerIDEntries)) {
			if set := st.ContainerIDEntries[id]; c.Parse.parse(set) != nil {
				return &restoreError{text: fmt.Sprintf(c.ByContainerID, set, id, c.Parse.parse(set))}
			}
		}
	} else {
		// A V1 file read by 1.18+: its entries were migrated to pod and container names the
		// runtime knows, which the file does not say.
		for _, id := range slices.Sorted(maps.Keys(st.ContainerIDEntries)) {
			if set := st.ContainerIDEntries[id]; c.Parse.parse(set) != nil {
				return &restoreError{text: fmt.Sprintf(c.Entry, set, "<name of container "+id+">", "<UID of the pod of container "+id+">", c.Parse.parse(set))}
			}
		}
	}
	if err := c.containers(c.Entry, st.Entries); err != nil {
		return err
	}
	if c.Baseline != "" && k.Gate(c.BaselineGate) {
		return c.containers(c.Baseline, st.Baselines)
	}
	return nil
}

func (c cpuRestore) containers(text string, sets map[string]map[string]string) error {
	// The common case, every set good, without sorting thousands of keys.
	bad := false
	for _, containers := range sets {
		for _, set := range containers {
			bad = bad || c.Parse.parse(set) != nil
		}
	}
	if !bad {
		return nil
	}
	for _, pod := range slices.Sorted(maps.Keys(sets)) {
		for _, container := range slices.Sorted(maps.Keys(sets[pod])) {
			if set := sets[pod][container]; c.Parse.parse(set) != nil {
				return &restoreError{text: fmt.Sprintf(text, set, container, pod, c.Parse.parse(set))}
			}
		}
	}
	return nil
}
