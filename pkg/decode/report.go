package decode

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"
)

// Verdict is what a kubelet (or the file's own format rules) makes of a file.
type Verdict string

// The verdicts, as in the kubelet vectors' expectations (testdata/kubelet/expected).
const (
	Valid         Verdict = "valid"          // the reader accepts the file
	Corrupt       Verdict = "corrupt"        // it parses, but a checksum does not match
	Unreadable    Verdict = "unreadable"     // not the JSON that reader expects (or its data payload is not)
	UnknownFormat Verdict = "unknown-format" // not a checkpoint nodestate recognises
	NotRead       Verdict = "not-read"       // that kubelet version never reads this file
)

// Report is the judgement of one file.
type Report struct {
	// File is the path as given (or relative to the kubelet root dir).
	File string `json:"file"`
	Kind Kind   `json:"kind"`
	// Format is the layout era detected from the content, e.g. "cpu-v4".
	Format string `json:"format"`
	// Verdict is the judged reader's verdict.
	Verdict Verdict `json:"verdict"`
	// Reader is the kubelet the verdict is for: the one asked about, or the last release writing
	// the detected format.
	Reader string `json:"reader"`
	// Rule is the checksum rule that accepted the file (empty when none did).
	Rule string `json:"rule,omitempty"`
	// Error is the error the judged kubelet reports, word for word where known.
	Error string `json:"error,omitempty"`
	// Cause is the innermost reason, without the kubelet's wrapping.
	Cause string `json:"cause,omitempty"`
	// Checksums holds one result per checksum the format carries (two for dual-checksum files).
	Checksums []ChecksumResult `json:"checksums,omitempty"`
	// Notes are facts an operator should know (e.g. which other kubelets would reject it).
	Notes []string `json:"notes,omitempty"`
	// WrittenBy and ReadBy say which kubelets write the detected format and which decode it into
	// its own layout ("1.11-1.19", "1.37+").
	WrittenBy string `json:"writtenBy,omitempty"`
	ReadBy    string `json:"readBy,omitempty"`
	// Breaks, for a file its reader accepts although a checksum does not match, names the
	// nearest releases that would refuse it as corrupted.
	Breaks *Breaks `json:"breaks,omitempty"`
	// Dropped, for a file its reader accepts, is the entries its restore skips (the device
	// manager's entries whose allocResp it cannot unmarshal): the kubelet starts without them.
	Dropped []DroppedEntry `json:"dropped,omitempty"`
	// Refused, for a file the judged kubelet refuses, says what that kubelet then does.
	Refused *Refusal `json:"refused,omitempty"`
	// Apart is set by a caller judging a node's files together (ChooseWritingRelease): no kubelet that
	// writes the node's other files writes this one in its format.
	Apart bool `json:"apart,omitempty"`
	// Decoded is the version-neutral content when it parsed.
	Decoded Model `json:"decoded,omitzero"`
}

// ChecksumResult is one stored checksum recomputed with one rule.
type ChecksumResult struct {
	Field     string `json:"field"`
	Rule      string `json:"rule"`
	Algorithm string `json:"algorithm"`
	Stored    uint64 `json:"stored"`
	Computed  uint64 `json:"computed"`
	Match     bool   `json:"match"`
	// ZeroAccepted: the stored value is 0 and the readers of this format accept it unverified.
	ZeroAccepted bool `json:"zeroAccepted,omitempty"`
	// Readers says which kubelets check this checksum.
	Readers string `json:"readers,omitempty"`
}

// Breaks names the releases nearest to the reader that refuse a file it accepts: Older the
// newest release before it, Newer the oldest after it (either may be empty).
type Breaks struct {
	Older string `json:"older,omitempty"`
	Newer string `json:"newer,omitempty"`
}

// A Refusal is what a kubelet does once it refuses a checkpoint at start: most managers stop
// the kubelet; the device manager and the DRA health cache log it and carry on without it.
type Refusal struct {
	KubeletStarts bool   `json:"kubeletStarts"`
	Effect        string `json:"effect"`
}

// Model is a file's decoded, version-neutral content: the one field of its kind is set, none
// when nothing parsed. Consumers read the field they want; no type assertions.
type Model struct {
	CPU            *CPUState
	Memory         *MemoryState
	Devices        *DeviceState
	DRA            *DRAState
	DRAHealth      *DRAHealthState
	PodAllocations *PodAllocationState
}

// modelOf files a layout's model under its field.
func modelOf(v any) Model {
	switch m := v.(type) {
	case *CPUState:
		return Model{CPU: m}
	case *MemoryState:
		return Model{Memory: m}
	case *DeviceState:
		return Model{Devices: m}
	case *DRAState:
		return Model{DRA: m}
	case *DRAHealthState:
		return Model{DRAHealth: m}
	case *PodAllocationState:
		return Model{PodAllocations: m}
	}
	return Model{}
}

// Any is the one model set, nil when none.
func (m Model) Any() any {
	switch {
	case m.CPU != nil:
		return m.CPU
	case m.Memory != nil:
		return m.Memory
	case m.Devices != nil:
		return m.Devices
	case m.DRA != nil:
		return m.DRA
	case m.DRAHealth != nil:
		return m.DRAHealth
	case m.PodAllocations != nil:
		return m.PodAllocations
	}
	return nil
}

// AddPodUIDs adds to uids the pods the file holds entries of: the CPU and memory managers'
// containers and pods, the device checkpoint's entries, the DRA claims' reservations and the
// pod allocations. The DRA health cache names none.
func (m Model) AddPodUIDs(uids map[string]bool) {
	add := func(keys iter.Seq[string]) {
		for uid := range keys {
			uids[uid] = true
		}
	}
	if m.CPU != nil {
		add(maps.Keys(m.CPU.Entries))
		add(maps.Keys(m.CPU.PodEntries))
	}
	if m.Memory != nil {
		add(maps.Keys(m.Memory.Entries))
		add(maps.Keys(m.Memory.PodEntries))
	}
	if m.Devices != nil {
		for _, e := range m.Devices.PodDeviceEntries {
			uids[e.PodUID] = true
		}
	}
	if m.DRA != nil {
		for _, c := range m.DRA.Claims {
			add(slices.Values(c.PodUIDs))
		}
	}
	if m.PodAllocations != nil {
		add(maps.Keys(m.PodAllocations.Pods))
	}
}

// IsZero reports a file with nothing decoded (json omitzero).
func (m Model) IsZero() bool { return m.Any() == nil }

// MarshalJSON writes the one model, as the file's "decoded" field always has.
func (m Model) MarshalJSON() ([]byte, error) { return json.Marshal(m.Any()) }
