//go:build e2e

package e2e

import (
	"os"
	"testing"
)

// TestMain starts kube-apiserver + etcd + kwok once for the whole test
// binary (see Main).
func TestMain(m *testing.M) { os.Exit(Main(m)) }
