// Command allocgen writes allocated_pods_state files with the real kubelet code of its release
// and restores files with that release's real allocation state (see ../README.md). This file is
// release-independent (standard library only); the release's writer and reader are in the
// files its module links beside it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The file every case is written as: the allocation manager's checkpoint; and the runtime
// manager's, written by 1.38.0-beta.0's module only (actuated.go).
const (
	fileName     = "allocated_pods_state"
	actuatedFile = "actuated_pods_state"
)

// A written file and what its writer's own restore said of it.
type written struct {
	// Component is the file's name on the node (default fileName): actuated_pods_state too.
	Component   string `json:"component,omitempty"`
	Case        string `json:"case"`
	Mutation    string `json:"mutation,omitempty"`
	Description string `json:"description"`
	// Format is the vectors' format ID and a one-line description (as MANIFEST.json's).
	Format string `json:"format"`
	Raw    []byte `json:"raw"`
	// HashedText is what the writer's checksum hashed (the file's own data), when the file is
	// as the writer wrote it or its checksum was recomputed by the writer's checksum package.
	HashedText *string `json:"hashedText,omitempty"`
}

// component is the file the vector is: fileName unless said.
func (w written) component() string {
	if w.Component != "" {
		return w.Component
	}
	return fileName
}

// name is the vector's name: <case>[.<mutation>].
func (w written) name() string {
	if w.Mutation != "" {
		return w.Case + "." + w.Mutation
	}
	return w.Case
}

// A read is one reader's judgement of one file.
type read struct {
	Verdict string          `json:"verdict"`
	Error   *string         `json:"error"`
	Decoded json.RawMessage `json:"decoded,omitempty"`
}

func main() {
	mode := flag.String("mode", "", "write | read | vectors")
	dir := flag.String("dir", "", "write: where the files go; read: a directory of files to judge (recursively); vectors: the write mode's directory")
	out := flag.String("out", "", "read: the JSON file of judgements; vectors: testdata/kubelet")
	reads := flag.String("reads", "", "vectors: LABEL=FILE,... the read mode's judgements by reader label")
	flag.Parse()
	var err error
	switch *mode {
	case "write":
		err = writeAll(*dir)
	case "read":
		err = readAll(*dir, *out)
	case "vectors":
		err = writeVectors(*dir, *out, *reads)
	default:
		err = fmt.Errorf("-mode write|read|vectors")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "allocgen:", err)
		os.Exit(1)
	}
}

// writeAll writes every case the release writes, one JSON record per file (written.json).
func writeAll(dir string) error {
	files, err := writeCases(filepath.Join(dir, "work"))
	if err != nil {
		return err
	}
	// Each file also at the path it gets as a vector, for the readers.
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, "files", f.component(), release(), f.name()+".json"), f.Raw); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(files, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "written.json"), b, 0o644)
}

// readAll restores every *.json file under dir (a checkpoint file each) with the release's
// real restore, and writes path -> judgement.
func readAll(dir, out string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	reads := map[string]read{}
	tmp, err := os.MkdirTemp("", "allocgen-read")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		// The file's name on the node is its vector's first directory.
		component, _, _ := strings.Cut(rel, "/")
		r := judge(tmp, component, raw)
		if component == actuatedFile && r.Error != nil {
			// The actuated file is opened by the runtime manager (1.35-1.37:
			// kuberuntime_manager.go:384 in 1.37.1) or kubelet.go (1.38.0-beta.0: kubelet.go:820),
			// both wording the state's error once more; judged here for 1.35+ only.
			text := "failed to initialize actuated state checkpoint: " + *r.Error
			r.Error = &text
		} else if component != fileName && r.Verdict != "valid" {
			return fmt.Errorf("%s: refused (%s); this generator judges only %s's and %s's refusals", rel, *r.Error, fileName, actuatedFile)
		}
		reads[rel] = r
	}
	b, err := json.MarshalIndent(reads, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// judge puts raw where a kubelet would find it (a fresh state directory, the file's node path
// shown as /var/lib/kubelet) and restores it.
func judge(tmp, component string, raw []byte) read {
	stateDir, err := os.MkdirTemp(tmp, "state")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(stateDir)
	if err := os.WriteFile(filepath.Join(stateDir, component), raw, 0o600); err != nil {
		panic(err)
	}
	decoded, err := restore(stateDir, component)
	if err != nil {
		text := strings.ReplaceAll(err.Error(), stateDir, "/var/lib/kubelet")
		verdict := "unreadable"
		if strings.Contains(text, "checkpoint is corrupted") {
			verdict = "corrupt"
		}
		return read{Verdict: verdict, Error: &text}
	}
	b, err := json.Marshal(decoded)
	if err != nil {
		panic(err)
	}
	return read{Verdict: "valid", Decoded: b}
}
