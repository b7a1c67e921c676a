package main

// The vectors mode (release-independent): the writer's files and every reader's judgements, in
// the layout pkg/decode's conformance suite reads (testdata/kubelet/expected/README.md).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// writeVectors writes the writer's files as testdata/kubelet/allocated_pods_state/<writer>/ with
// their expectations, and adds each reader's judgement of the vectors already there (older
// writers' files, judged here by newer or older readers) to their expectations.
func writeVectors(dir, testdata, readsFlag string) error {
	writer := release()
	raw, err := os.ReadFile(filepath.Join(dir, "written.json"))
	if err != nil {
		return err
	}
	var files []written
	if err := json.Unmarshal(raw, &files); err != nil {
		return err
	}
	readers := map[string]map[string]read{} // label -> path under testdata/kubelet -> read
	var labels []string
	for _, lf := range strings.Split(readsFlag, ",") {
		label, file, ok := strings.Cut(lf, "=")
		if !ok {
			return fmt.Errorf("-reads: %q is not LABEL=FILE", lf)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		m := map[string]read{}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		readers[label] = m
		labels = append(labels, label)
	}
	sort.Strings(labels)
	// The writer's own directories, one per file it writes, are written anew.
	owns := map[string]bool{}
	for _, f := range files {
		own := filepath.Join(f.component(), writer)
		if owns[own] {
			continue
		}
		owns[own] = true
		if err := os.RemoveAll(filepath.Join(testdata, own)); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(testdata, "expected", own)); err != nil {
			return err
		}
	}
	for _, f := range files {
		name := f.name()
		rel := filepath.ToSlash(filepath.Join(f.component(), writer, name+".json"))
		if err := writeFile(filepath.Join(testdata, rel), f.Raw); err != nil {
			return err
		}
		byWriter, ok := readers[writer][rel]
		if !ok {
			return fmt.Errorf("%s: the writer's own reader did not judge it", rel)
		}
		e := expectation{Component: f.component(), Writer: writer, Case: name, Description: f.Description, Format: f.Format,
			ExpectedVerdict: byWriter.Verdict, ExpectedError: byWriter.Error, Reads: map[string]read{}}
		if f.Mutation != "" {
			e.Mutation = &f.Mutation
		}
		if byWriter.Verdict == "valid" {
			e.ExpectedDecoded = byWriter.Decoded
		}
		for _, l := range labels {
			r, ok := readers[l][rel]
			if !ok {
				return fmt.Errorf("%s: reader %s did not judge it", rel, l)
			}
			e.Reads[l] = read{Verdict: r.Verdict, Error: r.Error}
		}
		stem := filepath.Join(testdata, "expected", strings.TrimSuffix(rel, ".json"))
		if err := writeFile(stem+".json", e.marshal(labels)); err != nil {
			return err
		}
		// A hashed text only where the writer's checksum is the file's: the file verifies.
		if f.HashedText != nil && byWriter.Verdict != "corrupt" {
			if err := writeFile(stem+".hashed.txt", []byte(*f.HashedText)); err != nil {
				return err
			}
		}
	}
	// The other writers' vectors: add (or replace) these readers' lines.
	for _, l := range labels {
		for rel, r := range readers[l] {
			if own, _, _ := strings.Cut(rel, "/"+writer+"/"); owns[own+"/"+writer] {
				continue
			}
			if err := setRead(filepath.Join(testdata, "expected", strings.TrimSuffix(rel, ".json")+".json"), l, readLine(r.Verdict, r.Error)); err != nil {
				return err
			}
		}
	}
	return nil
}

type expectation struct {
	Component       string          `json:"component"`
	Writer          string          `json:"writer"`
	Case            string          `json:"case"`
	Description     string          `json:"description"`
	Format          string          `json:"format"`
	Mutation        *string         `json:"mutation"`
	ExpectedVerdict string          `json:"expectedVerdict"`
	ExpectedError   *string         `json:"expectedError"`
	Reads           map[string]read `json:"reads"`
	ExpectedDecoded json.RawMessage `json:"expectedDecoded"`
}

// marshal writes the expectation as the other vectors' are: one field a line, one reader a line.
func (e expectation) marshal(labels []string) []byte {
	var b bytes.Buffer
	field := func(name string, v any, last bool) {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "  %q: %s", name, j)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("{\n")
	field("component", e.Component, false)
	field("writer", e.Writer, false)
	field("case", e.Case, false)
	field("description", e.Description, false)
	field("format", e.Format, false)
	field("mutation", e.Mutation, false)
	field("expectedVerdict", e.ExpectedVerdict, false)
	field("expectedError", e.ExpectedError, false)
	b.WriteString("  \"reads\": {\n")
	for i, l := range labels {
		fmt.Fprintf(&b, "    %q: %s", l, readLine(e.Reads[l].Verdict, e.Reads[l].Error))
		if i < len(labels)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  },\n")
	decoded := []byte("null")
	if len(e.ExpectedDecoded) > 0 {
		var ind bytes.Buffer
		_ = json.Indent(&ind, e.ExpectedDecoded, "  ", "  ")
		decoded = ind.Bytes()
	}
	fmt.Fprintf(&b, "  \"expectedDecoded\": %s\n}\n", decoded)
	return b.Bytes()
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
