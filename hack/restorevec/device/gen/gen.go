// Package gen is the release-independent part of the device restore generator: the cases, the
// modes, and the vectors' layout. Each release module (../vX.Y.Z) implements Release with that
// release's real device manager code and calls Main.
package gen

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	restorevec "github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/common"
)

// FileName is the checkpoint's name in the kubelet's device plugin directory.
const FileName = "kubelet_internal_checkpoint"

// Release is one kubelet release's real code.
type Release interface {
	// Write stores the case through the release's checkpoint.New and checkpointmanager in dir.
	Write(dir string, c Case) error
	// Restore starts the release's real device manager (NewManagerImpl, then Start, which reads
	// the checkpoint the caller put in the device plugin directory) with log, and returns what
	// it restored: devices(pod, container, resource) is the IDs it holds for them, sorted.
	Restore(log *Log) (devices func(pod, container, resource string) []string, stop func(), err error)
}

// Log records what the device manager logs at errors: the checkpoint's read error and the
// entries it cannot unmarshal. Each release module adapts it to its klog/logr.
type Log struct {
	ReadErr error
	Dropped map[string][]string // pod/container/resource -> the unmarshal errors, in order
}

// Info is called for every info line: 1.21 logs the checkpoint's read error as one ("err").
func (l *Log) Info(msg string, kv ...any) {
	if !strings.HasPrefix(msg, "Continue after failing to read checkpoint file") {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err, ok := kv[i+1].(error); ok && kv[i] == "err" {
			l.ReadErr = err
		}
	}
}

// Error is called for every error the manager logs, with its key/value pairs.
func (l *Log) Error(err error, msg string, kv ...any) {
	switch {
	case strings.HasPrefix(msg, "Continue after failing to read checkpoint file"):
		l.ReadErr = err
	case msg == "Can't unmarshal allocResp":
		v := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			v[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
		}
		if l.Dropped == nil {
			l.Dropped = map[string][]string{}
		}
		// google.golang.org/protobuf writes "proto:" then a space or a no-break space, chosen
		// by a hash of the binary (internal/detrand) so that nobody matches its texts: the
		// vectors have the space.
		k := v["podUID"] + "/" + v["containerName"] + "/" + v["resourceName"]
		l.Dropped[k] = append(l.Dropped[k], strings.ReplaceAll(err.Error(), "proto:\u00a0", "proto: "))
	}
}

// Dropped is one entry the restore skipped.
type Dropped struct {
	Index int    `json:"index"` // in the file's entries
	Error string `json:"error,omitempty"`
	// ReplacedBy is the later entry for the same pod, container and resource that the kubelet
	// keeps instead (it logs nothing for this one).
	ReplacedBy *int `json:"replacedBy,omitempty"`
}

// Read is how one reader judged one file.
type Read struct {
	Case    string    `json:"case"`
	Reader  string    `json:"reader"`
	Verdict string    `json:"verdict"`
	Error   *string   `json:"error"`
	Dropped []Dropped `json:"dropped"`
}

// PluginDir is the device plugin directory of every release (pluginapi.DevicePluginPath).
const PluginDir = "/var/lib/kubelet/device-plugins"

// Main runs the mode the flags ask for.
func Main(r Release) {
	mode := flag.String("mode", "", "write | read | vectors")
	dir := flag.String("dir", "", "write: where to write the cases; read, vectors: <dir>/<writer>/<case>/"+FileName)
	label := flag.String("label", "", "the reader's label (read)")
	reads := flag.String("reads", "", "comma-separated outputs of -mode read (vectors)")
	out := flag.String("out", "", "the repository's testdata/kubelet (vectors)")
	writers := flag.String("writers", "", "release=format of the writers whose files become vectors, comma-separated (vectors)")
	flag.Parse()
	var err error
	switch *mode {
	case "write":
		err = writeAll(r, *dir)
	case "read":
		err = readAll(r, *dir, *label)
	case "vectors":
		for _, w := range strings.Split(*writers, ",") {
			release, format, _ := strings.Cut(w, "=")
			if err = vectors(*dir, *reads, *out, release, format); err != nil {
				break
			}
		}
	default:
		err = errors.New("-mode write|read|vectors")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func writeAll(r Release, dir string) error {
	for _, c := range Cases() {
		if err := r.Write(filepath.Join(dir, c.Name), c); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// readAll restores every written file with the real device manager. The manager keeps its
// checkpoint in the fixed PluginDir: run.sh runs this in a private mount namespace with a tmpfs
// on /var/lib, and this refuses to run otherwise.
func readAll(r Release, dir, label string) error {
	if err := privateVarLib(); err != nil {
		return err
	}
	cases := map[string]Case{}
	for _, c := range Cases() {
		cases[c.Name] = c
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", FileName))
	if err != nil {
		return err
	}
	var out []Read
	for _, f := range files {
		caseDir := filepath.Dir(f)
		name := filepath.Base(caseDir)
		c, ok := cases[name]
		if !ok {
			return fmt.Errorf("%s: no such case", f)
		}
		rd, err := readOne(r, f, c)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rd.Case, rd.Reader = filepath.Base(filepath.Dir(caseDir))+"/"+name, label
		out = append(out, rd)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func readOne(r Release, file string, c Case) (Read, error) {
	if err := os.RemoveAll(PluginDir); err != nil {
		return Read{}, err
	}
	if err := os.MkdirAll(PluginDir, 0o750); err != nil {
		return Read{}, err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return Read{}, err
	}
	if err := os.WriteFile(filepath.Join(PluginDir, FileName), raw, 0o600); err != nil {
		return Read{}, err
	}
	log := &Log{}
	devices, stop, err := r.Restore(log)
	if err != nil {
		return Read{}, err
	}
	defer stop()
	rd := Read{Verdict: "valid", Dropped: []Dropped{}}
	if log.ReadErr != nil {
		msg := log.ReadErr.Error()
		rd.Verdict, rd.Error = "unreadable", &msg
		if strings.Contains(msg, "checkpoint is corrupted") {
			rd.Verdict = "corrupt"
		}
		return rd, nil
	}
	// The entries of each pod, container and resource: the one whose devices the manager holds
	// survived; the others were logged as not unmarshalled, or replaced by a later one.
	byKey := map[string][]int{}
	var keys []string
	for i, e := range c.Entries {
		k := e.PodUID + "/" + e.ContainerName + "/" + e.ResourceName
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	for _, k := range keys {
		d, err := classify(c, byKey[k], log.Dropped[k], devices)
		if err != nil {
			return Read{}, fmt.Errorf("%s: %w", k, err)
		}
		rd.Dropped = append(rd.Dropped, d...)
	}
	sort.Slice(rd.Dropped, func(i, j int) bool { return rd.Dropped[i].Index < rd.Dropped[j].Index })
	return rd, nil
}

// classify tells, for the entries idx of one pod, container and resource (file order), which
// survived (the manager holds its devices), which were logged (the errors, in order) and which
// a later entry replaced, and refuses what the restored state and the log cannot settle.
func classify(c Case, idx []int, logged []string, devices func(pod, container, resource string) []string) ([]Dropped, error) {
	e := c.Entries[idx[0]]
	held := devices(e.PodUID, e.ContainerName, e.ResourceName)
	survivor := -1
	for n, i := range idx {
		if slices.Equal(held, sortedIDs(c.Entries[i])) {
			if survivor >= 0 {
				return nil, fmt.Errorf("entries %d and %d hold the same devices: the case cannot tell them apart", idx[survivor], i)
			}
			survivor = n
		}
	}
	if survivor < 0 && held != nil {
		return nil, fmt.Errorf("the manager holds %v, which no entry has", held)
	}
	failed := make([]bool, len(idx))
	switch {
	case survivor < 0: // every entry failed
		for n := range idx {
			failed[n] = true
		}
	default:
		after := len(idx) - survivor - 1 // a later entry that unmarshalled would have replaced it
		before := len(logged) - after
		switch {
		case before < 0 || before > survivor:
			return nil, fmt.Errorf("%d errors logged, for %d entries around the survivor %d", len(logged), len(idx)-1, idx[survivor])
		case before != 0 && before != survivor:
			return nil, fmt.Errorf("entries before %d: %d of %d failed, the log does not say which", idx[survivor], before, survivor)
		}
		for n := range idx {
			failed[n] = n > survivor || (n < survivor && before > 0)
		}
	}
	var out []Dropped
	next := 0
	for n, i := range idx {
		switch {
		case failed[n]:
			if next >= len(logged) {
				return nil, fmt.Errorf("entry %d is not restored, and no error is logged for it", i)
			}
			out = append(out, Dropped{Index: i, Error: logged[next]})
			next++
		case n != survivor:
			by := idx[n+1]
			out = append(out, Dropped{Index: i, ReplacedBy: &by})
		}
	}
	if next != len(logged) {
		return nil, fmt.Errorf("%d errors logged, %d entries failed", len(logged), next)
	}
	return out, nil
}

func sortedIDs(e Entry) []string {
	ids := e.FlatDeviceIDs()
	slices.Sort(ids)
	return ids
}

// privateVarLib checks that /var/lib is a tmpfs mounted in a mount namespace of its own (not its
// parent's: run.sh execs this from unshare),
// so that the manager's fixed directory is a scratch one.
func privateVarLib() error {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	parent, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	mounts, err3 := os.ReadFile("/proc/self/mounts")
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if self == parent {
		return errors.New("refusing to write " + PluginDir + " outside a private mount namespace (run run.sh)")
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "/var/lib" && f[2] == "tmpfs" {
			return nil
		}
	}
	return errors.New("/var/lib is not a tmpfs here (run run.sh)")
}

// vectors writes the writer's files (of that format) to out/kubelet_internal_checkpoint/<writer>/
// and their expectations (every reader's verdict and dropped entries) to out/expected/.
func vectors(dir, readFiles, out, writer, format string) error {
	byCase, err := restorevec.IndexReads(strings.Split(readFiles, ","), func(r Read) (string, string) { return r.Case, r.Reader })
	if err != nil {
		return err
	}
	for _, c := range Cases() {
		key := writer + "/" + c.Name
		raw, err := os.ReadFile(filepath.Join(dir, writer, c.Name, FileName))
		if err != nil {
			return err
		}
		own, ok := byCase[key][writer]
		if !ok {
			return fmt.Errorf("%s: no read by the writer %s", c.Name, writer)
		}
		file := filepath.Join(out, FileName, writer, c.Name+".json")
		exp := filepath.Join(out, "expected", FileName, writer, c.Name+".json")
		for _, d := range []string{filepath.Dir(file), filepath.Dir(exp)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(exp, expectation(c, writer, format, own, byCase[key]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// expectation is the vector's <case>.json, one line per reader as the other vectors have it.
func expectation(c Case, writer, format string, own Read, reads map[string]Read) []byte {
	head := restorevec.Head{Component: FileName, Writer: writer, Case: c.Name, Description: c.Description,
		Format: format, Verdict: own.Verdict, Error: own.Error, Reads: map[string][]any{}}
	for l, r := range reads {
		head.Reads[l] = []any{"verdict", r.Verdict, "error", r.Error, "dropped", r.Dropped}
	}
	var b strings.Builder
	head.Write(&b)
	entries := []any{}
	for _, e := range c.Entries {
		var ids any
		if format == "dev-v1" {
			ids = e.FlatDeviceIDs()
		} else {
			perNUMA := map[string][]string{}
			for n, d := range e.DeviceIDs {
				perNUMA[strconv.FormatInt(n, 10)] = d
			}
			ids = perNUMA
		}
		entries = append(entries, map[string]any{"podUID": e.PodUID, "containerName": e.ContainerName, "resourceName": e.ResourceName,
			"deviceIDs": ids, "allocRespBase64": base64.StdEncoding.EncodeToString(e.AllocResp)})
	}
	b.WriteString("  \"expectedDecoded\": " + restorevec.Marshal(map[string]any{"podDeviceEntries": entries, "registeredDevices": c.Registered}) + "\n}\n")
	return []byte(b.String())
}
