// Command allocresp-corpus writes the AllocResp corpus (-mode inputs: one hex line per input) and
// merges the eras' oracle results into the project's record (-mode merge): see ../run.sh.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

func main() {
	mode := flag.String("mode", "", "inputs or merge")
	vectors := flag.String("vectors", "", "inputs: the device vectors of the newest writer, whose responses are seeds")
	inputs := flag.String("inputs", "", "the corpus, one hex line per input")
	results := flag.String("results", "", "merge: release=file,... (the oracles' outputs, in the record's column order)")
	out := flag.String("out", "", "the file to write")
	flag.Parse()
	var err error
	switch *mode {
	case "inputs":
		err = writeInputs(*vectors, *out)
	case "merge":
		err = merge(*inputs, *results, *out)
	default:
		err = fmt.Errorf("-mode inputs or -mode merge")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// realFiles are the writer's files whose responses are real plugins' (a GPU, an SR-IOV NIC, an
// FPGA), as the kubelet wrote them.
var realFiles = []string{"gpu-single.json", "multi-resource.json"}

func writeInputs(vectors, out string) error {
	var real [][]byte
	for _, name := range realFiles {
		raw, err := os.ReadFile(filepath.Join(vectors, name))
		if err != nil {
			return err
		}
		var cp struct {
			Data struct{ PodDeviceEntries []struct{ AllocResp []byte } }
		}
		if err := json.Unmarshal(raw, &cp); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, e := range cp.Data.PodDeviceEntries {
			real = append(real, e.AllocResp)
		}
	}
	if len(real) == 0 {
		return fmt.Errorf("no responses in %s", vectors)
	}
	var b strings.Builder
	for _, in := range gen.AllocRespCorpus(real) {
		b.WriteString(hex.EncodeToString(in))
		b.WriteByte('\n')
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// merge writes the record: the eras, the distinct error texts, then per input each era's text
// (its index, 0: accepted) and the input.
func merge(inputsFile, results, out string) error {
	inputs, err := lines(inputsFile)
	if err != nil {
		return err
	}
	var eras []string
	var columns [][]string
	for _, r := range strings.Split(results, ",") {
		era, file, ok := strings.Cut(r, "=")
		if !ok {
			return fmt.Errorf("-results: %q is not release=file", r)
		}
		texts, err := lines(file)
		if err != nil {
			return err
		}
		if len(texts) != len(inputs) {
			return fmt.Errorf("%s: %d results for %d inputs", file, len(texts), len(inputs))
		}
		eras = append(eras, era)
		columns = append(columns, texts)
	}
	index := map[string]int{strconv.Quote(""): 0}
	legend := []string{}
	var rows strings.Builder
	for i, in := range inputs {
		for _, col := range columns {
			n, ok := index[col[i]]
			if !ok {
				n = len(index)
				index[col[i]] = n
				legend = append(legend, col[i])
			}
			fmt.Fprintf(&rows, "%d ", n)
		}
		rows.WriteString(in)
		rows.WriteByte('\n')
	}
	var b strings.Builder
	b.WriteString("# The AllocResp corpus and what each era's real Unmarshal returns on it, written by\n" +
		"# hack/restorevec/device/allocresp/run.sh: per input, each era's error text (its number\n" +
		"# below; 0: accepted), then the input in hex.\n")
	fmt.Fprintf(&b, "eras %s\ninputs %d\n", strings.Join(eras, " "), len(inputs))
	for i, t := range legend {
		fmt.Fprintf(&b, "text %d %s\n", i+1, t)
	}
	b.WriteString(rows.String())
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

func lines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out, s.Err()
}
