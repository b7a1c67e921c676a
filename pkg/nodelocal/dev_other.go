//go:build !unix

package nodelocal

// deviceOf: off unix every path counts as one filesystem (the node-local checks run on Linux).
func deviceOf(string) (uint64, bool) { return 0, true }
