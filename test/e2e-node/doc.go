// Package e2enode tests kubectl-nodestate against ONE real kubelet (with containerd) on the test
// machine: Guaranteed pods with exclusive CPUs and NUMA memory fill the node, and every live
// command runs through the real kubectl. The files carry the build tag "e2enode", so
// `go test ./...` skips them; run `make e2e-node` (hack/e2e-node.sh), which starts the node
// (hack/e2e-node/up.sh) inside a network namespace, runs this package's test binary in it, and
// undoes everything afterwards (hack/e2e-node/down.sh).
package e2enode
