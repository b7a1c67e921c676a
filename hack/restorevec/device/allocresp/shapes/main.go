// Command allocresp-oracle unmarshals every input of a corpus (one hex line each) with the
// device plugin API code of one kubelet era, as the device manager's restore does
// (pod_devices.go fromCheckpointData), and prints each input's error text as a Go-quoted string,
// one line per input ("" when the input is accepted).
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: allocresp-oracle INPUTS")
		os.Exit(2)
	}
	in, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	defer in.Close()
	out := bufio.NewWriter(os.Stdout)
	lines := bufio.NewScanner(in)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		b, err := hex.DecodeString(lines.Text())
		if err != nil {
			fail(err)
		}
		fmt.Fprintln(out, strconv.Quote(judge(b)))
	}
	if err := lines.Err(); err != nil {
		fail(err)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

// judge is the error text of unmarshal(b); a panic, which would stop the kubelet, is recorded
// as "panic: " and its value.
func judge(b []byte) (text string) {
	defer func() {
		if r := recover(); r != nil {
			text = fmt.Sprint("panic: ", r)
		}
	}()
	if err := unmarshal(b); err != nil {
		// google.golang.org/protobuf writes "proto:" and a space or a no-break space, picked by
		// a hash of the binary: the records keep the space.
		return strings.ReplaceAll(err.Error(), "proto:\u00a0", "proto: ")
	}
	return ""
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
