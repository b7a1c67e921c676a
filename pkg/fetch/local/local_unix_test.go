//go:build unix

package local

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/fetch"
)

// A FIFO where a checkpoint should be must not hang the read: opening it for reading blocks
// until a writer appears, so it has to be refused before it is opened.
func TestReadDirFIFODoesNotHang(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"memory_manager_state": "{}"})
	if err := syscall.Mkfifo(filepath.Join(dir, "cpu_manager_state"), 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	type result struct {
		snap *fetch.Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Read(dir, want, DefaultLimits)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			if _, ok := r.snap.Files["cpu_manager_state"]; ok {
				t.Error("a FIFO was read as a checkpoint")
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read blocked on a FIFO")
	}
}
