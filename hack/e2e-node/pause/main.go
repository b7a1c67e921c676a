// Command pause is the sandbox image's process for make e2e-node (hack/e2e-node), built locally
// so no registry is needed: it holds the pod's namespaces, reaps orphans (it is PID 1 when the
// pod shares its PID namespace) and exits on SIGINT or SIGTERM, as registry.k8s.io/pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
