// Command registry serves an OCI distribution registry, in memory, on a loopback address:
// go-containerregistry's pkg/registry at this module's pin, for make e2e-node's cold pull of
// the plugin's image (test/e2e-node TestReaderImagePull). It prints its address on stdout once
// it listens, serves until killed (by its PID), and logs nothing but errors.
//
//	registry [-addr 127.0.0.1:0]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen (a loopback address)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}
