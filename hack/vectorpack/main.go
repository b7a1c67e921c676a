// Command vectorpack packs a generator's vector directory (cases/<name>/..., MANIFEST.json) into
// the one file the conformance tests read (internal/vectorpack), or unpacks a set into
// directories again.
//
//	go run ./hack/vectorpack DIR OUT.vectors.jsonl   pack DIR, then check OUT gives back every file
//	go run ./hack/vectorpack -unpack SET DIR         write each case of SET as DIR/cases/<name>/
//	go run ./hack/vectorpack -compare FROM TO        how many cases both sets hold differ
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubectl-nodestate/kubectl-nodestate/internal/vectorpack"
)

func main() {
	unpack := flag.Bool("unpack", false, "unpack SET into DIR instead")
	compare := flag.Bool("compare", false, "compare the cases of two sets instead")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: vectorpack DIR OUT%s | vectorpack -unpack SET DIR | vectorpack -compare SET SET\n", vectorpack.Ext)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	switch {
	case *compare:
		err = compareSets(os.Stdout, flag.Arg(0), flag.Arg(1))
	case *unpack:
		err = unpackSet(flag.Arg(0), flag.Arg(1))
	default:
		err = pack(flag.Arg(0), flag.Arg(1))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectorpack:", err)
		os.Exit(1)
	}
}

func pack(dir, out string) error {
	if !strings.HasSuffix(out, vectorpack.Ext) {
		return fmt.Errorf("%s: a packed set's name ends in %s (the tests look for that)", out, vectorpack.Ext)
	}
	s, err := vectorpack.FromDir(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := vectorpack.Write(&buf, s); err != nil {
		return err
	}
	// What the tests will read must be what the directory holds, file for file.
	back, err := vectorpack.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("reading the packed set back: %w", err)
	}
	files := 0
	for _, c := range s.Cases {
		got, _ := back.Case(c.Name)
		for name, b := range c.Files {
			if !bytes.Equal(got.Files[name], b) {
				return fmt.Errorf("case %s: %s does not come back as it was", c.Name, name)
			}
			files++
		}
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %d cases, %d files as %d distinct blobs, %d bytes\n", out, len(s.Cases), files, strings.Count(buf.String(), "\n{\"blob\":"), buf.Len())
	return nil
}

func unpackSet(set, dir string) error {
	s, err := vectorpack.ReadFile(set)
	if err != nil {
		return err
	}
	if err := s.Unpack(dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %d cases\n", filepath.Join(dir, "cases"), len(s.Cases))
	return nil
}
