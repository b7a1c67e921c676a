// Command readall restores every vector of a checkpoint file with one release's real restore
// (one module per release, ../README.md "readall"), and adds that release's reads to the vectors'
// expectations where the shared vectors have none, or checks them where they have:
//
//	-mode read  -kind K [-gates +G1+G2] -vectors testdata/kubelet   the reads, JSON, to stdout
//	-mode apply -reads FILE -vectors testdata/kubelet                 each read equal to the
//	            expectation's line for its reader, or added where there is none; exit 1 on a difference
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
)

// restorers are the files this release's shape restores, each the restore the kubelet runs on
// dir/name at start (raw: the file's bytes); setGates sets the process's gates.
var (
	restorers = map[string]func(dir, name string, raw []byte) error{}
	setGates  func(string) error
)

type read struct {
	File    string  `json:"file"` // <kind>/<writer>/<case>.json under the vectors
	Reader  string  `json:"reader"`
	Verdict string  `json:"verdict"`
	Error   *string `json:"error"`
}

func main() {
	mode := flag.String("mode", "", "read | apply")
	kind := flag.String("kind", "", "read: the file (cpu_manager_state, memory_manager_state, dra_manager_state, dra_health_state, kubelet_internal_checkpoint)")
	gates := flag.String("gates", "", "read: the reader's feature gates, as its label's suffix (+A+B)")
	vectors := flag.String("vectors", "", "the repository's testdata/kubelet")
	readsFile := flag.String("reads", "", "apply: a read's output")
	flag.Parse()
	var err error
	switch *mode {
	case "read":
		err = readAll(*kind, *gates, *vectors)
	case "apply":
		err = apply(*readsFile, *vectors)
	default:
		err = errors.New("-mode read|apply")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "readall:", err)
		os.Exit(1)
	}
}

func readAll(kind, gates, vectors string) error {
	label := release() + gates
	restore, ok := restorers[kind]
	if !ok {
		return fmt.Errorf("%s restores no %q", label, kind)
	}
	if gates != "" {
		if err := setGates(strings.Join(strings.Split(strings.TrimPrefix(gates, "+"), "+"), "=true,") + "=true"); err != nil {
			return err
		}
	}
	files, err := filepath.Glob(filepath.Join(vectors, kind, "*", "*.json"))
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "readall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var out []read
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// A copy in a directory of its own: a kubelet that finds no file it can use may write one.
		dir, err := os.MkdirTemp(work, "")
		if err != nil {
			return err
		}
		path := filepath.Join(dir, kind)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			return err
		}
		rel, _ := filepath.Rel(vectors, f)
		rd := read{File: filepath.ToSlash(rel), Reader: label, Verdict: "valid"}
		if err := restore(dir, kind, raw); err != nil {
			// The kubelet names the file by its directory: the node's, not this one.
			msg := strings.ReplaceAll(err.Error(), path, "/var/lib/kubelet/"+kind)
			rd.Error, rd.Verdict = &msg, "unreadable"
			// As the vectors judge it: the checkpoint manager's words, however a release wraps them.
			if strings.Contains(msg, "checkpoint is corrupted") {
				rd.Verdict = "corrupt"
			}
		}
		out = append(out, rd)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", b)
	return err
}

// apply checks each read against its expectation's line for that reader, and adds the line where
// the expectation has none.
func apply(readsFile, vectors string) error {
	b, err := os.ReadFile(readsFile)
	if err != nil {
		return err
	}
	var reads []read
	if err := json.Unmarshal(b, &reads); err != nil {
		return err
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].File < reads[j].File })
	var equal, added int
	var differ []string
	for _, r := range reads {
		path := filepath.Join(vectors, "expected", r.File)
		var e struct {
			Reads map[string]struct {
				Verdict string  `json:"verdict"`
				Error   *string `json:"error"`
			} `json:"reads"`
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		line := readLine(r.Verdict, r.Error)
		if have, ok := e.Reads[r.Reader]; ok {
			if recorded := readLine(have.Verdict, have.Error); recorded == line {
				equal++
			} else {
				differ = append(differ, fmt.Sprintf("%s %s: recorded %s, the real restore %s", r.File, r.Reader, recorded, line))
			}
			continue
		}
		if err := setRead(path, r.Reader, line); err != nil {
			return err
		}
		added++
	}
	label := ""
	if len(reads) > 0 {
		label = reads[0].Reader
	}
	fmt.Fprintf(os.Stderr, "%s: %d files, %d reads equal to the recorded ones, %d added, %d differ\n", label, len(reads), equal, added, len(differ))
	for _, d := range differ {
		fmt.Fprintln(os.Stderr, "  "+d)
	}
	if len(differ) > 0 {
		return fmt.Errorf("%d reads differ from the recorded ones", len(differ))
	}
	return nil
}
