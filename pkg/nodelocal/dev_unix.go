//go:build unix

package nodelocal

import (
	"os"
	"syscall"
)

// deviceOf is the filesystem a path is on (find's -xdev compares them).
func deviceOf(p string) (uint64, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true //nolint:unconvert // Dev is int32 on some platforms
}
