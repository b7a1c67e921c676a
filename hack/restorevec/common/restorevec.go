// Package restorevec is what every release module of hack/restorevec shares: the cases, the
// three modes (write, read, vectors) and the vector layout. A release module says only how its
// kubelet writes and restores a cpu_manager_state (its types and signatures differ by release).
package restorevec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
)

// A Case is one file: its sets as the kubelet's own types hold them (pod -> container -> set).
type Case struct {
	Name          string                       `json:"name"`
	Description   string                       `json:"description"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
	Baselines     map[string]map[string]string `json:"baselines"`
	// Gates is the suffix of the one writer label that writes the case
	// ("+PodLevelResourceManagers+InPlacePodVerticalScalingExclusiveCPUs"); empty: every writer.
	Gates string `json:"gates"`
}

// ContainerID is the ID a V1 file (1.12-1.17) keys a container's set by: the case names the
// container by pod and name, so the ID is derived from them (64 hex digits, as a runtime's).
func ContainerID(pod, name string) string {
	sum := sha256.Sum256([]byte(pod + "/" + name))
	return hex.EncodeToString(sum[:])
}

// V1Entries are the case's sets keyed by container ID.
func (c Case) V1Entries() map[string]string {
	out := map[string]string{}
	for pod, containers := range c.Entries {
		for name, set := range containers {
			out[ContainerID(pod, name)] = set
		}
	}
	return out
}

// A Container is what the runtime says of a container when a 1.18+ kubelet migrates a V1 file.
type Container struct{ ID, PodUID, Name string }

// RuntimeContainers is the runtime a 1.18+ reader migrates V1 entries through: it knows every
// case's container (so the migration passes, as on a node whose containers still run). The file
// holds only container IDs, so the runtime's names are the placeholders nodestate words them
// with (pkg/decode/restore.go): the real code then words the rest of its sentence, which the
// vectors check.
func RuntimeContainers(cases []Case) []Container {
	var out []Container
	for _, c := range cases {
		for id := range c.V1Entries() {
			out = append(out, Container{ID: id, PodUID: "<UID of the pod of container " + id + ">", Name: "<name of container " + id + ">"})
		}
	}
	return out
}

// A Writer is one way a release writes the file (its feature gates choose the layout).
type Writer struct {
	// Suffix is appended to the release to label the writer ("+PodLevelResourceManagers").
	Suffix string
	Format string // the vectors' format ID of its files (cpu-v1, cpu-v2, cpu-v3, cpu-v4)
	// OnlyGated: it writes only the cases whose Gates are its Suffix.
	OnlyGated bool
	// Write stores the case as dir/cpu_manager_state through the release's checkpoint manager
	// (which computes the checksums) and returns the checkpoint as that manager loads it back
	// (GetCheckpoint): the kubelet's view of the file before its restore parses the sets.
	Write func(dir string, c Case) (loaded any, err error)
}

// A Reader is one reader configuration of a release.
type Reader struct {
	Suffix string
	Gates  string // feature gates (process-global: one process per reader)
}

// A Release is one kubelet release's module.
type Release struct {
	// Name is set by Main: the k8s.io/kubernetes version the module requires, so that one
	// main.go (../shapes) serves every release of its API shape.
	Name    string
	Writers []Writer
	Readers []Reader
	// SetGates sets the process's feature gates (nil: the release's path has none).
	SetGates func(gates string) error
	// Restore runs the release's state.NewCheckpointState on dir (policy "static", as the files
	// say), with containers as the runtime's (1.18+), and returns the restored state, sets as
	// strings.
	Restore func(dir string, containers []Container) (restored any, err error)
}

// kubeletRelease is the version of k8s.io/kubernetes built into the binary.
func kubeletRelease() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", fmt.Errorf("no build info: build the release module with go build")
	}
	for _, d := range info.Deps {
		if d.Path == "k8s.io/kubernetes" {
			return d.Version, nil
		}
	}
	return "", fmt.Errorf("k8s.io/kubernetes is not a dependency of %s", info.Main.Path)
}

// NodePath is where the kubelet keeps the file; the error texts name it.
const NodePath = "/var/lib/kubelet/cpu_manager_state"

type read struct {
	File     string          `json:"file"` // <writer label>/<case>
	Reader   string          `json:"reader"`
	Verdict  string          `json:"verdict"`
	Error    *string         `json:"error"`
	Restored json.RawMessage `json:"restored,omitempty"`
}

// Main runs the mode the flags say:
//
//	-mode write   -cases F -dir D: writes every case each writer can, D/<writer label>/<case>/
//	-mode read    -cases F -dir D: every reader restores every file under D/files, its
//	              judgements to D/reads/<reader label>.json (one process per reader, -mode read-one)
//	-mode vectors -cases F -dir D -out testdata/kubelet: the vectors and their expectations
func Main(rel Release) {
	mode := flag.String("mode", "", "write | read | vectors")
	casesFile := flag.String("cases", "", "cases JSON")
	dir := flag.String("dir", "", "the work directory every release's module shares")
	reader := flag.String("reader", "", "read-one: the reader (its label suffix); read runs one process per reader")
	out := flag.String("out", "", "vectors: the repository's testdata/kubelet")
	flag.Parse()
	name, err := kubeletRelease()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rel.Name = name
	cases, err := loadCases(*casesFile)
	if err == nil {
		switch *mode {
		case "write":
			err = writeAll(rel, cases, *dir)
		case "read":
			err = readAll(rel, *casesFile, *dir)
		case "read-one":
			err = readAs(rel, cases, *dir, *reader)
		case "vectors":
			err = vectors(cases, *dir, *out)
		default:
			err = fmt.Errorf("-mode write|read|vectors")
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", rel.Name, err)
		os.Exit(1)
	}
}

func loadCases(file string) ([]Case, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cases []Case
	return cases, json.Unmarshal(b, &cases)
}

func (w Writer) writes(c Case) bool {
	if c.Gates == "" {
		return !w.OnlyGated
	}
	return c.Gates == w.Suffix
}

func writeAll(rel Release, cases []Case, dir string) error {
	for _, w := range rel.Writers {
		label := rel.Name + w.Suffix
		base := filepath.Join(dir, "files", label)
		if err := os.MkdirAll(base, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(base, "format"), []byte(w.Format), 0o644); err != nil {
			return err
		}
		for _, c := range cases {
			if !w.writes(c) {
				continue
			}
			caseDir := filepath.Join(base, c.Name)
			loaded, err := w.Write(caseDir, c)
			if err != nil {
				return fmt.Errorf("%s %s: %w", label, c.Name, err)
			}
			b, err := json.Marshal(loaded)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(caseDir, "loaded.json"), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAll runs one process per reader: feature gates are process-global.
func readAll(rel Release, casesFile, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, r := range rel.Readers {
		cmd := exec.Command(self, "-mode", "read-one", "-cases", casesFile, "-dir", dir, "-reader="+r.Suffix)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("reader %s%s: %w", rel.Name, r.Suffix, err)
		}
	}
	return nil
}

func readAs(rel Release, cases []Case, dir, suffix string) error {
	var rd *Reader
	for i := range rel.Readers {
		if rel.Readers[i].Suffix == suffix {
			rd = &rel.Readers[i]
		}
	}
	if rd == nil {
		return fmt.Errorf("no reader %q", suffix)
	}
	if rd.Gates != "" {
		if err := rel.SetGates(rd.Gates); err != nil {
			return err
		}
	}
	label := rel.Name + rd.Suffix
	files, err := filepath.Glob(filepath.Join(dir, "files", "*", "*", "cpu_manager_state"))
	if err != nil {
		return err
	}
	containers := RuntimeContainers(cases)
	var out []read
	for _, f := range files {
		caseDir := filepath.Dir(f)
		r := read{File: filepath.Base(filepath.Dir(caseDir)) + "/" + filepath.Base(caseDir), Reader: label, Verdict: "valid"}
		// A copy: a kubelet that finds no file it can use may write one.
		tmp, err := os.MkdirTemp(dir, "restore-")
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		file := filepath.Join(tmp, "cpu_manager_state")
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			return err
		}
		restored, err := rel.Restore(tmp, containers)
		if err != nil {
			// The kubelet names the file by its directory: the node's, not this one.
			msg := strings.ReplaceAll(err.Error(), file, NodePath)
			r.Error, r.Verdict = &msg, "unreadable"
			// As the vectors judge it: the checkpoint manager's words, however a release wraps them.
			if strings.Contains(msg, "checkpoint is corrupted") {
				r.Verdict = "corrupt"
			}
		} else if r.Restored, err = json.Marshal(restored); err != nil {
			return err
		}
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		out = append(out, r)
	}
	if err := os.MkdirAll(filepath.Join(dir, "reads"), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "reads", label+".json"), b, 0o644)
}

// vectors writes each distinct written file to out/cpu_manager_state/<writer>/<case>.json and
// its expectations (the writer's own read, every reader's) to out/expected/..., in the layout
// the conformance suite reads (pkg/decode/conformance_test.go).
func vectors(cases []Case, dir, out string) error {
	readFiles, err := filepath.Glob(filepath.Join(dir, "reads", "*.json"))
	if err != nil {
		return err
	}
	byFile, err := IndexReads(readFiles, func(r read) (string, string) { return r.File, r.Reader })
	if err != nil {
		return err
	}
	formats, err := filepath.Glob(filepath.Join(dir, "files", "*", "format"))
	if err != nil {
		return err
	}
	writers := make([]string, 0, len(formats))
	for _, f := range formats {
		writers = append(writers, filepath.Base(filepath.Dir(f)))
	}
	sort.Slice(writers, func(i, j int) bool { return labelLess(writers[i], writers[j]) })
	// One vector per distinct file: named by its oldest writer, the others listed (1.18-1.36
	// write the same V2 bytes); every copy must have been judged alike.
	type vector struct {
		writer, format string
		c              Case
		raw            []byte
		also           []string
	}
	var vecs []*vector
	byBytes := map[string]*vector{}
	for _, writer := range writers {
		format, err := os.ReadFile(filepath.Join(dir, "files", writer, "format"))
		if err != nil {
			return err
		}
		for _, c := range cases {
			raw, err := os.ReadFile(filepath.Join(dir, "files", writer, c.Name, "cpu_manager_state"))
			if os.IsNotExist(err) {
				continue // a case this writer does not write
			} else if err != nil {
				return err
			}
			if _, ok := byFile[writer+"/"+c.Name][writer]; !ok {
				return fmt.Errorf("%s/%s: not read by its writer", writer, c.Name)
			}
			if v, ok := byBytes[string(raw)]; ok {
				if err := sameReads(byFile[v.writer+"/"+v.c.Name], byFile[writer+"/"+c.Name]); err != nil {
					return fmt.Errorf("%s/%s and %s/%s hold the same bytes: %w", v.writer, v.c.Name, writer, c.Name, err)
				}
				v.also = append(v.also, writer)
				continue
			}
			v := &vector{writer: writer, format: string(format), c: c, raw: raw}
			byBytes[string(raw)] = v
			vecs = append(vecs, v)
		}
	}
	judged := 0
	for _, v := range vecs {
		key := v.writer + "/" + v.c.Name
		own := byFile[key][v.writer]
		var loaded json.RawMessage
		if own.Verdict == "valid" {
			if loaded, err = os.ReadFile(filepath.Join(dir, "files", key, "loaded.json")); err != nil {
				return err
			}
		}
		if err := writeFile(filepath.Join(out, "cpu_manager_state", v.writer, v.c.Name+".json"), v.raw); err != nil {
			return err
		}
		exp := expectation(v.writer, v.also, v.c, v.format, own, byFile[key], loaded)
		if err := writeFile(filepath.Join(out, "expected", "cpu_manager_state", v.writer, v.c.Name+".json"), exp); err != nil {
			return err
		}
		judged += len(byFile[key])
	}
	fmt.Fprintf(os.Stderr, "%d writers, %d readers, %d distinct files (vectors), %d reader judgements\n", len(writers), len(readFiles), len(vecs), judged)
	return nil
}

func sameReads(a, b map[string]read) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d readers, %d readers", len(a), len(b))
	}
	for label, ra := range a {
		rb := b[label]
		if ra.Verdict != rb.Verdict || Marshal(ra.Error) != Marshal(rb.Error) {
			return fmt.Errorf("reader %s: %s %s, %s %s", label, ra.Verdict, Marshal(ra.Error), rb.Verdict, Marshal(rb.Error))
		}
	}
	return nil
}

// labelLess orders writer labels by release (v1.9 before v1.17, a pre-release before its
// release), then by their gates.
func labelLess(a, b string) bool {
	va, ga, _ := strings.Cut(a, "+")
	vb, gb, _ := strings.Cut(b, "+")
	if va == vb {
		return ga < gb
	}
	na, pa, _ := strings.Cut(strings.TrimPrefix(va, "v"), "-")
	nb, pb, _ := strings.Cut(strings.TrimPrefix(vb, "v"), "-")
	xa, xb := strings.Split(na, "."), strings.Split(nb, ".")
	for i := 0; i < len(xa) && i < len(xb); i++ {
		if xa[i] != xb[i] {
			ia, _ := strconv.Atoi(xa[i])
			ib, _ := strconv.Atoi(xb[i])
			return ia < ib
		}
	}
	if pa == "" || pb == "" {
		return pa != "" // a pre-release first
	}
	return pa < pb
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// IndexReads loads the reads the readers wrote (a JSON list per file) by what was read (key's
// first result), then by reader (its second).
func IndexReads[R any](files []string, key func(R) (read, reader string)) (map[string]map[string]R, error) {
	by := map[string]map[string]R{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var rs []R
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range rs {
			what, reader := key(r)
			if by[what] == nil {
				by[what] = map[string]R{}
			}
			by[what][reader] = r
		}
	}
	return by, nil
}

// Marshal is v as the vectors spell JSON: on one line, HTML characters as they are.
func Marshal(v any) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// Head is what every vector's expectation file (the CPU and the device generators') starts with.
type Head struct {
	Component, Writer string
	AlsoWrittenBy     []string // left out when empty
	Case, Description string
	Format            string
	Verdict           string
	Error             *string
	// Reads is each reader's judgement by label: its fields, each a key and a value.
	Reads map[string][]any
}

// Write writes the head's fields, then "reads", one line per reader in label order, up to the
// comma after it; the caller writes the rest of the file.
func (h Head) Write(b *strings.Builder) {
	field := func(k string, v any) { fmt.Fprintf(b, "  %q: %s,\n", k, Marshal(v)) }
	b.WriteString("{\n")
	field("component", h.Component)
	field("writer", h.Writer)
	if len(h.AlsoWrittenBy) > 0 {
		field("alsoWrittenBy", h.AlsoWrittenBy)
	}
	field("case", h.Case)
	field("description", h.Description)
	field("format", h.Format)
	field("mutation", nil)
	field("expectedVerdict", h.Verdict)
	field("expectedError", h.Error)
	b.WriteString("  \"reads\": {\n")
	labels := make([]string, 0, len(h.Reads))
	for l := range h.Reads {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for i, l := range labels {
		kv := h.Reads[l]
		fields := make([]string, 0, len(kv)/2)
		for j := 0; j+1 < len(kv); j += 2 {
			fields = append(fields, Marshal(kv[j])+": "+Marshal(kv[j+1]))
		}
		sep := ","
		if i == len(labels)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "    %q: {%s}%s\n", l, strings.Join(fields, ", "), sep)
	}
	b.WriteString("  },\n")
}

// expectation is the vector's <case>.json: expectedDecoded is the checkpoint as the writer's own
// checkpoint manager loaded it (the strings the file holds, what nodestate decodes);
// restoredByWriter is what its restore then made of them (cpuset.String(): "3-3" is "3", and
// 1.12-1.21 make "5-3" an empty set).
func expectation(writer string, also []string, c Case, format string, own read, reads map[string]read, loaded json.RawMessage) []byte {
	head := Head{Component: "cpu_manager_state", Writer: writer, AlsoWrittenBy: also, Case: c.Name, Description: c.Description,
		Format: format, Verdict: own.Verdict, Error: own.Error, Reads: map[string][]any{}}
	for l, r := range reads {
		head.Reads[l] = []any{"verdict", r.Verdict, "error", r.Error}
	}
	var b strings.Builder
	head.Write(&b)
	if own.Restored != nil {
		var c bytes.Buffer
		_ = json.Compact(&c, own.Restored)
		b.WriteString("  \"restoredByWriter\": " + c.String() + ",\n")
	}
	dec := "null"
	if loaded != nil {
		dec = string(loaded)
	}
	b.WriteString("  \"expectedDecoded\": " + dec + "\n}\n")
	return []byte(b.String())
}
